package viewer

import (
	"encoding/json"
	"strings"

	"github.com/agentrt/agentrt/tito"
)

// Tokenizer is what the viewer needs of a model's tokenizer to show token texts; *tito.Tokenizer implements it.
type Tokenizer interface {
	// Decode is the tokenizer's own decode (Hugging Face tokenizer.decode).
	Decode(ids []int32, skipSpecialTokens bool) string
	// Token is the token's spelling in the vocabulary (id_to_token).
	Token(id int32) (string, bool)
	// IsSpecial reports whether id is a special token.
	IsSpecial(id int32) bool
}

// Detail is one trajectory as the page draws it.
type Detail struct {
	Summary
	Error           string             `json:"error,omitempty"`
	StopMessage     string             `json:"stop_message,omitempty"` // why a truncated episode stopped, in words
	Label           json.RawMessage    `json:"label,omitempty"`
	Metadata        json.RawMessage    `json:"metadata,omitempty"`
	Provenance      map[string]any     `json:"provenance"`
	Metrics         map[string]float64 `json:"metrics,omitempty"`
	Warnings        []string           `json:"warnings,omitempty"`
	Drift           *tito.DriftSummary `json:"drift,omitempty"`
	OffPolicyMasked bool               `json:"offpolicy_masked,omitempty"`
	WeightVersions  []tito.WeightSpan  `json:"weight_versions,omitempty"`
	Segments        []tito.Segment     `json:"segments"`
	// Invalid is the trajectory's first broken invariant (tito.Trajectory.Validate), if any: the page still shows
	// what there is.
	Invalid string `json:"invalid,omitempty"`
	// TokenView holds the token ids with their texts, loss mask and logprobs.
	TokenView TokenView `json:"token_view"`
	// Prompt is the conversation the episode started from; Calls what each model call asked of its tools and got.
	Prompt []MessageView `json:"prompt"`
	Calls  []CallView    `json:"calls"`
}

// TokenView holds the tokens as aligned arrays.
type TokenView struct {
	IDs []int32 `json:"ids"`
	// Text is each token's share of the decoded text (joined, they are the tokenizer's decode of all the ids);
	// empty without a tokenizer (Tokenizer names the reason then).
	Text []string `json:"text,omitempty"`
	// Piece is each token's spelling in the vocabulary.
	Piece []string `json:"piece,omitempty"`
	// Special lists the positions of special tokens.
	Special []int         `json:"special,omitempty"`
	Mask    tito.Mask     `json:"mask"`
	Logprob tito.Logprobs `json:"logprob"`
	// Tokenizer is the model folder whose tokenizer decoded the texts, or why there are none.
	Tokenizer string `json:"tokenizer"`
	HaveTexts bool   `json:"have_texts"`
}

// MessageView is one message of the conversation, its content as text.
type MessageView struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCallView `json:"tool_calls,omitempty"`
}

// ToolCallView is one parsed tool call.
type ToolCallView struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// CallView is what one model call (a response segment) asked of the tools and what came back.
type CallView struct {
	Turn int `json:"turn"`
	// Content is the assistant message the loop made of the response (the text the parser saw).
	Content   string         `json:"content"`
	ToolCalls []ToolCallView `json:"tool_calls,omitempty"`
	// Results are the tool messages that answered (a malformed call's error result among them).
	Results []MessageView `json:"results,omitempty"`
}

// Tokenizers finds the tokenizer of a trajectory's model: its provenance "model" (a model folder, or a Hugging Face
// model id) and "model_revision" (the commit a hub model's files were pinned to; "" for a folder). It returns the
// tokenizer and where it came from, or nil and the reason there is none.
type Tokenizers func(model, revision string) (Tokenizer, string)

// detail builds the page's view of t.
func detail(t *tito.Trajectory, toks Tokenizers) *Detail {
	d := &Detail{Summary: summarize(t), Error: t.Error, StopMessage: t.StopMessage, Label: t.Label, Metadata: t.Metadata, Provenance: t.Provenance,
		Metrics: t.Metrics, Warnings: t.Warnings, Drift: t.Drift, OffPolicyMasked: t.OffPolicyMasked,
		WeightVersions: t.WeightVersions, Segments: t.Segments}
	if d.Segments == nil {
		d.Segments = []tito.Segment{}
	}
	if err := t.Validate(); err != nil {
		d.Invalid = err.Error()
	}
	n := min(len(t.TokenIDs), len(t.LossMask), len(t.Logprobs))
	d.TokenView = TokenView{IDs: t.TokenIDs[:n], Mask: t.LossMask[:n], Logprob: t.Logprobs[:n]}
	if toks != nil {
		rev, _ := t.Provenance[provModelRevision].(string)
		tok, why := toks(d.Model, rev)
		if tok != nil {
			d.TokenView.Text = tokenTexts(tok, d.TokenView.IDs)
			d.TokenView.Piece = make([]string, n)
			for i, id := range d.TokenView.IDs {
				d.TokenView.Piece[i], _ = tok.Token(id)
				if tok.IsSpecial(id) {
					d.TokenView.Special = append(d.TokenView.Special, i)
				}
			}
			d.TokenView.HaveTexts = true
		}
		d.TokenView.Tokenizer = why
	}
	d.Prompt, d.Calls = conversation(t.Messages, d.Turns)
	return d
}

// tokenTexts splits the decoded text of ids into one piece per token, so that joined they are Decode(ids, false).
// A token that ends inside a multi-byte character (byte-level BPE splits some) gets "", and the token that
// completes the character gets all of it. Like a streaming detokenizer (Hugging Face TGI's decode_token), it
// decodes a short window per token, so decoders that drop the space at the start of a text (SentencePiece's
// Metaspace) keep the spaces between tokens.
func tokenTexts(tok Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	prefix, read := 0, 0
	prefixText := ""
	for i := range ids {
		text := tok.Decode(ids[prefix:i+1], false)
		if len(text) <= len(prefixText) || strings.HasSuffix(text, "\uFFFD") {
			if i+1-read < maxCharTokens {
				continue // an unfinished character: wait for the token that completes it
			}
			// No character takes more tokens (one byte each at least): the text really holds U+FFFD.
		}
		k := commonPrefix(text, prefixText)
		out[i] = text[k:]
		prefix, read = read, i+1
		prefixText = tok.Decode(ids[prefix:read], false)
	}
	if read < len(ids) { // a trailing unfinished character: the last token shows what Decode makes of it
		text := tok.Decode(ids[prefix:], false)
		out[len(ids)-1] = text[commonPrefix(text, prefixText):]
	}
	return out
}

// maxCharTokens is the most tokens one character can span: its UTF-8 bytes, one a token.
const maxCharTokens = 4

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// message is a chat message as the trajectory's messages hold it, read leniently (the page shows whatever is there).
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (m *message) view() MessageView {
	v := MessageView{Role: m.Role, Content: contentText(m.Content), Name: m.Name, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		v.ToolCalls = append(v.ToolCalls, ToolCallView{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return v
}

// contentText is a message content as text: a string as it is, a list of parts as their texts, anything else as JSON.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			} else {
				b.WriteString("[" + p.Type + "]")
			}
		}
		return b.String()
	}
	return string(raw)
}

// conversation splits the messages into the prompt the episode started from and, per model call, the assistant
// message and the tool results that answered it. The loop adds one assistant message per call, so the last
// `turns` assistant messages are the calls'; everything before the first of them is the prompt.
func conversation(raw json.RawMessage, turns int) ([]MessageView, []CallView) {
	var msgs []message
	if json.Unmarshal(raw, &msgs) != nil {
		return []MessageView{}, []CallView{}
	}
	var assistants []int
	for i, m := range msgs {
		if m.Role == "assistant" {
			assistants = append(assistants, i)
		}
	}
	k := min(turns, len(assistants))
	first := len(msgs)
	if k > 0 {
		first = assistants[len(assistants)-k]
	}
	prompt := []MessageView{}
	for _, m := range msgs[:first] {
		prompt = append(prompt, m.view())
	}
	calls := []CallView{}
	for j, ai := range assistants[len(assistants)-k:] {
		a := msgs[ai].view()
		c := CallView{Turn: turns - k + j, Content: a.Content, ToolCalls: a.ToolCalls}
		for _, m := range msgs[ai+1:] {
			if m.Role == "tool" {
				c.Results = append(c.Results, m.view())
				continue
			}
			if parseFeedback(m, len(a.ToolCalls)) {
				// one card per malformed call, as tool results are drawn
				v := m.view()
				for i, part := range strings.Split(v.Content, "\n\n"+parseErrorPrefix) {
					if i > 0 {
						part = parseErrorPrefix + part
					}
					r := v
					r.Content = part
					c.Results = append(c.Results, r)
				}
				continue
			}
			break
		}
		calls = append(calls, c)
	}
	return prompt, calls
}

// parseErrorPrefix begins the error result of a malformed tool call (plugins/ABI.md 5.1's wording contract).
const parseErrorPrefix = "Error: the tool call could not be parsed ("

// parseFeedback reports whether m is the loop's answer to a turn whose every call was malformed: one user message
// carrying the calls' error results (an assistant message without tool calls has no call for a tool message to
// answer, so the loop sends them as a user message).
func parseFeedback(m message, toolCalls int) bool {
	return m.Role == "user" && toolCalls == 0 && strings.HasPrefix(contentText(m.Content), parseErrorPrefix)
}
