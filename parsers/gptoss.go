package parsers

import "strings"

// gpt-oss: OpenAI's harmony format. A completion is a run of messages, each a header and a body:
//
//	<|channel|>analysis<|message|>Need the weather.<|end|>
//	<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
//
// The first message has no <|start|>assistant (the generation prompt wrote it), so its header may begin with the
// recipient (" to=functions.f<|channel|>commentary json<|message|>"). The channel says what the body is:
// analysis is reasoning (dropped), final is the answer (normal text), commentary with a recipient
// "to=functions.NAME" is a tool call whose body is one JSON object ending in <|call|>; commentary without a
// recipient is a preamble shown to the user (normal text). The recipient may stand before the channel
// ("<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>", as the chat template writes
// it), and the content type may be "<|constrain|>json" or a bare "json"; any other content type is an error.
// Bodies end in <|end|>, <|call|> or <|return|> (or at the end of the text when the stop token was stripped).

const (
	hmStart     = "<|start|>"
	hmChannel   = "<|channel|>"
	hmMessage   = "<|message|>"
	hmConstrain = "<|constrain|>"
	hmEnd       = "<|end|>"
	hmCall      = "<|call|>"
	hmReturn    = "<|return|>"
	hmFunctions = "functions."
)

// gptOSSThink disables the <think> scan: harmony marks reasoning by channel, which scanGPTOSS handles.
var gptOSSThink = thinkTags{}

func scanGPTOSS(st *state, seg segment) {
	t := st.text[:seg.hi]
	i := seg.lo
	for i < len(t) {
		m := nextHeader(t, i)
		if m < 0 {
			return
		}
		if i == seg.lo && strings.HasPrefix(strings.TrimLeft(t[i:m], " "), "to=") && !strings.HasPrefix(t[m:], hmStart) {
			// The first message's header continues the generation prompt's "<|start|>assistant": its recipient
			// may come before the channel (" to=functions.f<|channel|>commentary json<|message|>").
			m = i
		}
		hdrLo := m
		if strings.HasPrefix(t[m:], hmStart) {
			m += len(hmStart)
		}
		mi := strings.Index(t[m:], hmMessage)
		nx := strings.Index(t[m:], hmStart)
		if nx >= 0 {
			nx += m
		}
		if mi < 0 || (nx >= 0 && nx < m+mi) {
			// A header without its <|message|> before the next <|start|> or the end: cut off or garbled.
			end := len(t)
			if nx >= 0 {
				end = nx
			}
			st.cut(hdrLo, end)
			if strings.Contains(t[m:end], "to=") {
				reason, what := ReasonInvalidFormat, "the tool call header has no <|message|>"
				if nx < 0 {
					reason = ReasonUnclosedTag
				}
				st.fail(reason, "", what, hdrLo, end)
			}
			i = end
			continue
		}
		header := t[m : m+mi]
		bodyLo := m + mi + len(hmMessage)
		bodyHi, term := harmonyBodyEnd(t, bodyLo)
		msgHi := bodyHi + len(term)
		i = msgHi
		channel, recipient, ctype, bad := parseHarmonyHeader(header)
		switch {
		case recipient != "":
			st.cut(hdrLo, msgHi)
			st.harmonyCall(recipient, ctype, bad, term, t[bodyLo:bodyHi], hdrLo, msgHi)
		case channel == "analysis":
			st.cut(hdrLo, msgHi) // reasoning
		default: // final, a commentary preamble, or another channel: the body is text for the user
			st.cut(hdrLo, bodyLo)
			st.cut(bodyHi, msgHi)
		}
	}
}

// nextHeader returns the index of the next message header (<|start|> or <|channel|>) at or after i, or -1.
func nextHeader(t string, i int) int {
	s, c := strings.Index(t[i:], hmStart), strings.Index(t[i:], hmChannel)
	switch {
	case s < 0 && c < 0:
		return -1
	case s < 0 || (c >= 0 && c < s):
		return i + c
	default:
		return i + s
	}
}

// harmonyBodyEnd returns where the body starting at lo ends and its terminator ("" when the text ends first).
func harmonyBodyEnd(t string, lo int) (int, string) {
	best, term := len(t), ""
	for _, tok := range [...]string{hmEnd, hmCall, hmReturn} {
		if k := strings.Index(t[lo:best], tok); k >= 0 {
			best, term = lo+k, tok
		}
	}
	return best, term
}

// parseHarmonyHeader splits a header ("assistant to=functions.f<|channel|>commentary json", "<|channel|>final",
// ...) into its channel, recipient and content type; bad describes anything else found in it.
func parseHarmonyHeader(h string) (channel, recipient, ctype, bad string) {
	h = strings.TrimPrefix(h, "assistant")
	for h != "" {
		switch {
		case strings.HasPrefix(h, hmChannel):
			h = h[len(hmChannel):]
			n := harmonyWord(h)
			if channel != "" {
				bad = "two channels in one header"
			}
			channel, h = h[:n], h[n:]
		case strings.HasPrefix(h, hmConstrain):
			h = h[len(hmConstrain):]
			n := harmonyWord(h)
			ctype, h = h[:n], h[n:]
		case h[0] == ' ':
			h = h[1:]
		default:
			n := harmonyWord(h)
			if n == 0 {
				n = len(h) // a stray special token
				if k := strings.IndexByte(h[1:], '<'); k >= 0 {
					n = k + 1
				}
			}
			w := h[:n]
			h = h[n:]
			switch {
			case strings.HasPrefix(w, "to="):
				recipient = w[len("to="):]
			case channel != "" && ctype == "":
				ctype = w
			default:
				bad = "unexpected " + quote(clip(w)) + " in the message header"
			}
		}
	}
	return channel, recipient, ctype, bad
}

// harmonyWord returns the length of the word at the start of s (up to a space or a special token).
func harmonyWord(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '<' {
			return i
		}
	}
	return len(s)
}

// harmonyCall checks one message addressed to a tool and records the call (or its error).
func (st *state) harmonyCall(recipient, ctype, bad, term, body string, lo, hi int) {
	name, ok := strings.CutPrefix(recipient, hmFunctions)
	switch {
	case !ok:
		st.fail(ReasonInvalidFormat, "", "recipient "+quote(clip(recipient))+" is not functions.NAME", lo, hi)
	case !validName(name):
		st.fail(ReasonMissingName, "", "the recipient "+quote(clip(recipient))+" names no function", lo, hi)
	case bad != "":
		st.fail(ReasonInvalidFormat, name, bad, lo, hi)
	case ctype != "" && ctype != "json":
		st.fail(ReasonInvalidFormat, name, "content type "+quote(clip(ctype))+" (want json)", lo, hi)
	case term == "" && !completeJSON(body):
		// The agent strips the <|call|> stop token before parsing, so a call may end with the text; one whose
		// JSON is not complete there was cut off.
		st.fail(ReasonUnclosedTag, name, "the tool call has no "+hmCall+" (cut off)", lo, hi)
	case term != hmCall && term != "":
		st.fail(ReasonInvalidFormat, name, "the tool call ends with "+term+", not "+hmCall, lo, hi)
	default:
		st.jsonObjectCall(name, body, lo, hi)
	}
}

// completeJSON reports whether s is one complete JSON value (with surrounding space).
func completeJSON(s string) bool {
	var mem []jmember
	_, end, err := compactValue(nil, s, skipSpace(s, 0), &mem, 0)
	return err == nil && skipSpace(s, end) == len(s)
}
