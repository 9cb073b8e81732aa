package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// Generator is what a model call needs from inference: one /generate call. *sglang.Client implements it; the key
// (an episode's or a session's id) keeps a conversation's requests on one worker so its radix cache is reused.
type Generator interface {
	Generate(ctx context.Context, key string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error)
}

// Aborter is implemented by generators that can abort a request on the server (*sglang.Client): a call cancelled
// mid-generation aborts its request there too.
type Aborter interface {
	AbortRequest(ctx context.Context, rid string) error
}

// Tokenizer encodes rendered prompts and decodes generated ids. *tito.Tokenizer implements it.
type Tokenizer interface {
	Encode(text string, addSpecialTokens bool) []int32
	Decode(ids []int32, skipSpecialTokens bool) string
}

// Template renders prompts: the first in full, later ones as deltas. *tito.ChatTemplate implements it.
type Template interface {
	Render(msgs []tito.Message, o tito.RenderOptions) (string, error)
	RenderDelta(history, msgs []tito.Message, o tito.RenderOptions) (string, error)
}

// Parser turns the text of one completion into tool calls, normal text and parse errors (plugins/ABI.md 5.1).
type Parser interface {
	Parse(ctx context.Context, text string) (abi.ParseResult, error)
}

// nextMessageStarter is a template whose model stops on the token that begins the next message (GLM-4.6/4.7
// stop on <|observation|> or <|user|>): *tito.ChatTemplate.
type nextMessageStarter interface {
	StartsNextMessage(stop string) bool
}

// Model is one served model as both callers use it: the agent loop (runtime) and the front door
// (runtime/frontdoor). Its zero-value fields are optional where noted; the value is read-only once built, and
// safe for concurrent use when its components are.
type Model struct {
	Generator Generator
	Tokenizer Tokenizer
	Template  Template
	Parser    Parser
	// StopIDs end a turn: a response that ends with one has it trimmed before decoding and parsing.
	StopIDs []int32
	// ExtraStopIDs are sent to SGLang as stop_token_ids: the family's end-of-turn tokens that the model folder's
	// EOS and generation_config.json lack (GLM's <|observation|>, Llama's <|eom_id|>, gpt-oss's <|call|>).
	ExtraStopIDs []int32
	// ContextWindow caps prompt + response tokens.
	ContextWindow int
	// Kwargs are the agent's chat_template_kwargs, given to every render.
	Kwargs map[string]any
	// Reasoning is how the family marks reasoning in the output (the front door splits it from the content).
	Reasoning family.Reasoning
	// CallIDs is the form of tool call ids the family's template accepts: an id the parser returns is kept when it
	// has that form, else one is made (CallRequest.CallIDSeed).
	CallIDs family.CallIDStyle
	// Gate, if set, holds each call while it is closed (a pause for a weight update).
	Gate *Gate
	// Window is the template's delta window (tito.ChatTemplate.FindDeltaWindow, found by the family self-test):
	// WindowDelta renders tool results after only the history's messages it keeps. The zero value renders whole.
	Window tito.DeltaWindow
	// windowOff is set once an audit found a windowed delta other than the whole render's: every later delta is
	// rendered whole.
	windowOff atomic.Bool
	// nextStarts caches trimGeneratedStop's answer per stop id (the stop's text when the template writes it as
	// the start of the next message, else ""): decoding one id through the tokenizer cost ~19 µs a turn.
	nextStarts sync.Map // int32 -> string
}

// Check reports a model that cannot serve calls.
func (m *Model) Check() error {
	if m.Generator == nil || m.Tokenizer == nil || m.Template == nil || m.Parser == nil {
		return fmt.Errorf("turn: a model needs a generator, tokenizer, template and parser")
	}
	if m.ContextWindow <= 0 {
		return fmt.Errorf("turn: context window must be > 0")
	}
	return nil
}

// RenderOptions are the options of every render of a conversation with tools, the first prompt's and each
// delta's alike: a delta is the tail of the render of the whole conversation, and transformers renders that with
// the tools (Hermes-3's template even iterates them unconditionally; Mistral's writes them before the last user
// message).
func (m *Model) RenderOptions(tools []json.RawMessage) tito.RenderOptions {
	return tito.RenderOptions{AddGenerationPrompt: true, Kwargs: m.Kwargs, Tools: tools}
}

// Prompt renders a whole conversation (the first prompt) and tokenizes it.
func (m *Model) Prompt(msgs []tito.Message, tools []json.RawMessage) ([]int32, error) {
	text, err := m.Template.Render(msgs, m.RenderOptions(tools))
	if err != nil {
		return nil, err
	}
	return m.Tokenizer.Encode(text, false), nil
}

// DeltaText is what a conversation appends for msgs after history: the template's delta (tito's RenderDelta: the
// full render's tail after the history's end of turn), less the stop token that the model generated when the
// template writes that token as the start of the next message (GLM: it is in the trajectory already, as the
// response's last token). lastStop is that token's id, -1 when the last turn ended on none (or it is unknown,
// as to `agentrt template --delta`, which prints the delta whole).
func (m *Model) DeltaText(history, msgs []tito.Message, o tito.RenderOptions, lastStop int32) (string, error) {
	text, err := m.Template.RenderDelta(history, msgs, o)
	if err != nil {
		return "", err
	}
	return m.trimGeneratedStop(text, lastStop), nil
}

// Delta is DeltaText tokenized, with the options of RenderOptions(tools): the prompt tokens a later turn appends.
// cache, if set, is the conversation's tito.MessageCache (its messages' JSON for the template engine, kept from
// one turn to the next).
func (m *Model) Delta(history, msgs []tito.Message, tools []json.RawMessage, cache *tito.MessageCache, lastStop int32) ([]int32, error) {
	o := m.RenderOptions(tools)
	o.Messages = cache
	text, err := m.DeltaText(history, msgs, o, lastStop)
	if err != nil {
		return nil, err
	}
	return m.Tokenizer.Encode(text, false), nil
}

// WindowDrift is a windowed delta that the audit found different from the whole render's.
type WindowDrift struct {
	Window          tito.DeltaWindow
	Windowed, Whole string
}

// Error implements error.
func (d *WindowDrift) Error() string {
	return fmt.Sprintf("turn: delta window %v: the windowed delta %q differs from the whole render's %q (windows are off from now on)", d.Window, abbrevText(d.Windowed), abbrevText(d.Whole))
}

func abbrevText(s string) string {
	if len(s) > 120 {
		return s[:60] + "..." + s[len(s)-60:]
	}
	return s
}

// WindowLeavesOut returns how many of history's messages WindowDelta would leave out before msgs (0: it renders
// whole).
func (m *Model) WindowLeavesOut(history, msgs []tito.Message) int {
	if m.windowOff.Load() || !m.Window.Enabled() {
		return 0
	}
	for i := range msgs {
		if msgs[i].Role != tito.RoleTool {
			return 0
		}
	}
	return m.Window.LeavesOut(history)
}

// WindowDelta is Delta rendered through the model's window (Window) while no audit has found it wrong. With audit,
// a windowed delta is rendered whole too and compared: on a difference it returns the whole render's ids (the
// trajectory stays exact), a *WindowDrift saying what differed, and turns the window off for every later delta.
func (m *Model) WindowDelta(history, msgs []tito.Message, tools []json.RawMessage, cache *tito.MessageCache, lastStop int32, audit bool) ([]int32, *WindowDrift, error) {
	o := m.RenderOptions(tools)
	o.Messages = cache
	if m.WindowLeavesOut(history, msgs) == 0 {
		text, err := m.DeltaText(history, msgs, o, lastStop)
		if err != nil {
			return nil, nil, err
		}
		return m.Tokenizer.Encode(text, false), nil, nil
	}
	o.Window = m.Window
	text, err := m.DeltaText(history, msgs, o, lastStop)
	if err != nil {
		return nil, nil, err
	}
	var drift *WindowDrift
	if audit {
		o.Window = tito.DeltaWindow{}
		whole, err := m.DeltaText(history, msgs, o, lastStop)
		if err != nil {
			return nil, nil, err
		}
		if whole != text {
			drift = &WindowDrift{Window: m.Window, Windowed: text, Whole: whole}
			m.windowOff.Store(true)
			text = whole
		}
	}
	return m.Tokenizer.Encode(text, false), drift, nil
}

// trimGeneratedStop drops from a delta the stop token the model generated when the template writes it as the
// start of the next message.
func (m *Model) trimGeneratedStop(delta string, lastStop int32) string {
	ns, ok := m.Template.(nextMessageStarter)
	if !ok || lastStop < 0 {
		return delta
	}
	prefix, ok := m.nextStarts.Load(lastStop)
	if !ok {
		stop := m.Tokenizer.Decode([]int32{lastStop}, false)
		if !ns.StartsNextMessage(stop) {
			stop = ""
		}
		prefix, _ = m.nextStarts.LoadOrStore(lastStop, stop)
	}
	return strings.TrimPrefix(delta, prefix.(string))
}

// endStop returns the stop id that ends ids, or -1.
func (m *Model) endStop(ids []int32) int32 {
	if n := len(ids); n > 0 && slices.Contains(m.StopIDs, ids[n-1]) {
		return ids[n-1]
	}
	return -1
}

// Decode is the text the parser sees: the generated ids decoded with special tokens kept, minus the final
// end-of-turn token (the turn's terminator, not content).
func (m *Model) Decode(ids []int32) string {
	if m.endStop(ids) >= 0 {
		ids = ids[:len(ids)-1]
	}
	return m.Tokenizer.Decode(ids, false)
}

// SplitReasoning separates a reply's reasoning block from its content, by the family's markup (<think> or
// <seed:think>, or gpt-oss's harmony channels: splitHarmony; other markups are left whole in content). A reply cut
// short inside its reasoning is all reasoning.
func SplitReasoning(r family.Reasoning, text string) (reasoning, content string) {
	open, closeTag := "", ""
	switch r {
	case family.ReasoningThink:
		open, closeTag = "<think>", "</think>"
	case family.ReasoningSeedThink:
		open, closeTag = "<seed:think>", "</seed:think>"
	case family.ReasoningHarmony:
		return splitHarmony(text)
	default:
		return "", text
	}
	i := strings.Index(text, closeTag)
	if i < 0 {
		if j := strings.Index(text, open); j >= 0 { // reasoning cut short (length): all of it is reasoning
			return strings.TrimSpace(text[j+len(open):]), strings.TrimSpace(text[:j])
		}
		return "", strings.TrimSpace(text)
	}
	before := text[:i]
	if j := strings.Index(before, open); j >= 0 {
		before = before[j+len(open):]
	}
	return strings.TrimSpace(before), strings.TrimSpace(text[i+len(closeTag):])
}

// splitHarmony splits a gpt-oss reply (harmony messages, the first one continuing the generation prompt's
// "<|start|>assistant") as SGLang's gpt-oss reasoning parser does: reasoning is the bodies of its analysis messages,
// joined; content is the bodies of its other messages without a recipient (the final answer, a commentary
// preamble), joined and trimmed; a message addressed to a tool ("to=functions.NAME", in its header) is a call,
// which is neither. A body ends at <|end|>, <|call|> or <|return|> (or the text's end: a stop token is trimmed, or
// the reply was cut short); a header without <|message|> (cut short) is dropped. Text without any harmony message
// (a parser's normal text) is all content, as it is.
func splitHarmony(text string) (reasoning, content string) {
	const start, message = "<|start|>", "<|message|>"
	if !strings.Contains(text, message) {
		return "", text
	}
	var r, c strings.Builder
	for _, m := range strings.Split(text, start) {
		header, body, ok := strings.Cut(m, message)
		if !ok {
			continue
		}
		for _, end := range [...]string{"<|end|>", "<|call|>", "<|return|>"} {
			if i := strings.Index(body, end); i >= 0 {
				body = body[:i]
			}
		}
		switch {
		case strings.Contains(header, "to="):
		case strings.Contains(header, "<|channel|>analysis"):
			r.WriteString(body)
		default:
			c.WriteString(body)
		}
	}
	return r.String(), strings.TrimSpace(c.String())
}
