package emulator

import (
	"slices"
	"strings"
)

// layout is a chat format's message layout as data: the markers that open, imply or end a message, and how a
// message's role and content are read. layout.split reads every format of the table with one loop.
type layout struct {
	format string
	detect []string // a prompt is in this layout when it holds all of these (the table's first match wins)
	marks  []mark
	header string                     // after a mark of role "", the header that names the role runs to this (dropped)
	role   func(header string) string // reads the role from a header; nil: the header, trimmed
	trim   string                     // dropped from the start of every message's content
	finish func(message) []message    // the messages a complete one stands for (tool results out of their wrapping); nil: itself

	markers    []string // the marks' texts, in order
	headerEnds []string // header, then the markers: what ends a header
}

// mark is a marker of a layout and what it does to the message being read: every mark ends it, then an opens mark
// starts a message of role (read from the header after it when role is ""), an implies mark a message of role that
// no marker of its own opens (kept only if it has text, or is the generation prompt), an ends mark none.
type mark struct {
	text string
	kind markKind
	role string
}

type markKind uint8

const (
	opens markKind = iota
	implies
	ends
)

// layouts are the chat formats the emulator decodes, in the order they are tried.
var layouts = []*layout{
	{format: chatML, detect: []string{"<|im_start|>"}, header: "\n",
		marks: []mark{{"<|im_start|>", opens, ""}, {"<|im_end|>", ends, ""}}},
	{format: chatLlama, detect: []string{"<|start_header_id|>"}, header: "<|end_header_id|>", trim: "\n\n",
		marks: []mark{{"<|start_header_id|>", opens, ""}, {"<|eot_id|>", ends, ""}, {"<|eom_id|>", ends, ""}}},
	// A harmony header names the role first ("assistant to=functions.f<|channel|>commentary"); a tool result's
	// names the function ("functions.f to=assistant").
	{format: chatHarmony, detect: []string{"<|start|>", "<|message|>"}, header: "<|message|>", role: harmonyRole,
		marks: []mark{{"<|start|>", opens, ""}, {"<|end|>", ends, ""}, {"<|call|>", ends, ""}, {"<|return|>", ends, ""}}},
	// The system text follows the BOS; after tool outputs the model answers with no <｜Assistant｜> marker.
	{format: chatDeepSeek, detect: []string{dsUser}, marks: []mark{{dsBOS, implies, "system"}, {dsUser, opens, "user"},
		{dsAssistant, opens, "assistant"}, {dsEOS, ends, ""}, {dsOutputBegin, opens, "tool"}, {dsOutputEnd, implies, "assistant"},
		{dsOutputsEnd, implies, "assistant"}}},
	// Assistant turns have no marker of their own: the text after [/INST] or [/TOOL_RESULTS] up to </s>. Nemo writes
	// the system prompt into the last [INST] ("SYSTEM\n\nTASK").
	{format: chatMistral, detect: []string{mistralInst}, finish: mistralToolResults, marks: []mark{{mistralInst, opens, "user"},
		{mistralInstEnd, implies, "assistant"}, {mistralTools, opens, roleTools}, {mistralToolsEnd, ends, ""},
		{mistralResults, opens, "tool"}, {mistralResultsEnd, implies, "assistant"}, {mistralSystem, opens, "system"},
		{mistralSystemEnd, ends, ""}, {mistralEOS, ends, ""}}},
	// The role is named before <|im_middle|>; the tool list is the system message of role tool_declare.
	{format: chatKimi, detect: []string{kimiMiddle}, header: kimiMiddle, role: renamed(kimiToolDeclare, roleTools), finish: kimiToolResults,
		marks: []mark{{kimiSystem, opens, ""}, {kimiUser, opens, ""}, {kimiAssistant, opens, ""}, {kimiEnd, ends, ""}}},
	{format: chatMiniMax, detect: []string{minimaxMsg}, header: "\n", role: renamed("ai", "assistant"), finish: minimaxToolResults,
		marks: []mark{{minimaxMsg, opens, ""}, {minimaxEnd, ends, ""}}},
	{format: chatSeed, detect: []string{seedBOS}, header: "\n", marks: []mark{{seedBOS, opens, ""}, {seedEOS, ends, ""}}},
	// GLM writes no end-of-turn token (the model stops on the token that begins the next message); 4.5/4.6 write a
	// newline after the role token, 4.7 none.
	{format: chatGLM, detect: []string{glmPrefix}, trim: "\n", finish: glmMessages, marks: []mark{{glmSystem, opens, "system"},
		{glmUser, opens, "user"}, {glmAssistant, opens, "assistant"}, {glmObservation, opens, "tool"}}},
}

func init() {
	for _, l := range layouts {
		for _, m := range l.marks {
			l.markers = append(l.markers, m.text)
		}
		l.headerEnds = append([]string{l.header}, l.markers...)
	}
}

// layoutOf returns the layout of a prompt (nil if it is in none).
func layoutOf(text string) *layout {
	for _, l := range layouts {
		all := true
		for _, d := range l.detect {
			all = all && strings.Contains(text, d)
		}
		if all {
			return l
		}
	}
	return nil
}

// split splits a prompt into its complete messages and the generation prompt: a message still being read when the
// prompt ends is the generation prompt if it is the assistant's (else a message). Text outside messages (after
// an end mark, before the first mark) is dropped.
func (l *layout) split(text string) (msgs []message, open *message) {
	var cur *message
	implied := false
	flush := func() {
		if cur != nil && (!implied || strings.TrimSpace(cur.content) != "") {
			cur.content = strings.TrimPrefix(cur.content, l.trim)
			if l.finish == nil {
				msgs = append(msgs, *cur)
			} else {
				msgs = append(msgs, l.finish(*cur)...)
			}
		}
		cur, implied = nil, false
	}
	for text != "" {
		at, next := firstMarker(text, l.markers)
		if at < 0 {
			at = len(text)
		}
		if cur != nil {
			cur.content += text[:at]
		}
		if next == "" {
			break
		}
		text = text[at+len(next):]
		flush()
		m := l.marks[slices.Index(l.markers, next)]
		switch {
		case m.kind == opens && m.role == "":
			// The header runs to the header's end (dropped) or, in a prompt cut short, to the next marker or the end.
			h, end := firstMarker(text, l.headerEnds)
			header := text
			switch {
			case h < 0:
				text = ""
			case end == l.header:
				header, text = text[:h], text[h+len(end):]
			default:
				header, text = text[:h], text[h:]
			}
			cur = &message{role: strings.TrimSpace(header)}
			if l.role != nil {
				cur.role = l.role(header)
			}
		case m.kind == opens:
			cur = &message{role: m.role}
		case m.kind == implies:
			cur, implied = &message{role: m.role}, true
		}
	}
	if cur != nil && cur.role == "assistant" {
		cur.content = strings.TrimPrefix(cur.content, l.trim)
		return msgs, cur
	}
	flush()
	return msgs, nil
}

// renamed reads a header's role, with role from renamed to.
func renamed(from, to string) func(string) string {
	return func(header string) string {
		if r := strings.TrimSpace(header); r != from {
			return r
		}
		return to
	}
}

// harmonyRole is the role of a harmony header: its first word, before any <|channel|>; a tool result's header
// names the function ("functions.f to=assistant").
func harmonyRole(header string) string {
	role, _, _ := strings.Cut(strings.TrimSpace(header), " ")
	role, _, _ = strings.Cut(role, "<|channel|>")
	if strings.HasPrefix(role, "functions.") {
		return "tool"
	}
	return role
}

// mistralToolResults takes a tool result's content out of its wrapping (mistralResult).
func mistralToolResults(m message) []message {
	if m.role == "tool" {
		m.content = mistralResult(m.content)
	}
	return []message{m}
}

// kimiToolResults takes a tool result's content out of its "## Return of ID" header (kimiResult).
func kimiToolResults(m message) []message {
	if m.role == "tool" {
		m.content = kimiResult(m.content)
	}
	return []message{m}
}

// minimaxToolResults splits the template's one "tool" message for consecutive results, each in
// <response>...</response>, into a message each.
func minimaxToolResults(m message) []message {
	if m.role != "tool" || !strings.Contains(m.content, "<response>") {
		return []message{m}
	}
	var out []message
	for _, result := range tagged(m.content, "<response>", "</response>") {
		out = append(out, message{role: "tool", content: result})
	}
	return out
}

// glmMessages drops the /nothink GLM-4.5/4.6 append to a user message for enable_thinking = false, and splits an
// observation, one <tool_response>...</tool_response> per result, into a tool message each.
func glmMessages(m message) []message {
	switch {
	case m.role == "user":
		m.content = strings.TrimSuffix(m.content, glmNoThink)
	case m.role == "tool" && strings.Contains(m.content, "<tool_response>"):
		var out []message
		for _, result := range tagged(m.content, "<tool_response>", "</tool_response>") {
			out = append(out, message{role: "tool", content: strings.TrimSuffix(strings.TrimPrefix(result, "\n"), "\n")})
		}
		return out
	}
	return []message{m}
}
