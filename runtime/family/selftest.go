package family

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/tito"
)

// The canonical tool conversation of the self-test: one tool, one call with a string and an integer argument,
// its result; the second round's call adds an object argument (templates write objects their own way: Seed-OSS as
// Python prints a dict, which its parser must read back).
const (
	testTool       = "calculator"
	testExpression = "(2 + 3) * 4"
	testArguments  = `{"expression": "(2 + 3) * 4", "precision": 2}`
	testResult     = "20"
	// testToolDescription is in the tool spec only: a prompt that has it rendered the specs.
	testToolDescription = "Evaluate an arithmetic expression."
)

// Tools returns the tool specs of the self-test's conversation (OpenAI format), which a parser loaded for the
// self-test must be given.
func Tools() []json.RawMessage {
	return []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "` + testToolDescription + `", "parameters": {"type": "object", "properties": {"expression": {"type": "string", "description": "The expression, e.g. 2 * (3 + 4)."}, "precision": {"type": "integer", "description": "Digits after the decimal point."}, "options": {"type": "object", "description": "How to evaluate."}}, "required": ["expression"]}}}`)}
}

// Call is one tool call as a parser returns it.
type Call struct {
	Name      string
	Arguments json.RawMessage
}

// ParseFunc parses one completion, exactly as generated without its final stop token, and returns the calls
// and the reasons of rejected calls. The self-test calls it with the specs of Tools.
type ParseFunc func(text string) (calls []Call, rejected []string, err error)

// NativeParser returns a ParseFunc for a built-in parser (the parsers package, natively: the same logic as the
// Wasm module), given the specs of Tools.
//
// # Errors
//
// An unknown parser name.
func NativeParser(name string) (ParseFunc, error) {
	p, err := parsers.New(name)
	if err != nil {
		return nil, err
	}
	specs, _ := json.Marshal(Tools())
	tools, err := parsers.ParseTools(specs)
	if err != nil {
		return nil, err
	}
	return func(text string) ([]Call, []string, error) {
		r := p.Parse(text, tools)
		var calls []Call
		for _, c := range r.Calls {
			calls = append(calls, Call{Name: c.Name, Arguments: c.Arguments})
		}
		var rejected []string
		for _, e := range r.Errors {
			rejected = append(rejected, fmt.Sprintf("%s: %s (raw %q)", e.Reason, e.Message, e.Raw))
		}
		return calls, rejected, nil
	}, nil
}

// Check is one step of the self-test.
type Check struct {
	Name string
	OK   bool
	// Detail says what was found (and on failure, what was wrong).
	Detail string
}

// Report is the outcome of a self-test.
type Report struct {
	Family string
	Parser string
	Checks []Check
	// History says, for a family that reasons, whether its template shows an earlier turn's reasoning again (within
	// a tool loop, and after a new user message), probed on the template itself once every check passed; a template
	// that drops it makes the model see in deployment something other than the chain it generated, which an agent's
	// history = "as-deployed" trains on. "" when not probed.
	History string
	// HistoryRewritten reports that the probe found reasoning dropped somewhere.
	HistoryRewritten bool
	// Window is the template's delta window (tito.ChatTemplate.FindDeltaWindow with the agent's kwargs), found
	// once every check passed: the agent loop renders tool results after only the messages it keeps. The zero
	// value (the whole conversation) when none is exact; WindowDetail then says why.
	Window       tito.DeltaWindow
	WindowDetail string
}

// Err returns nil when every check passed, else an error naming the family and the first failed check.
func (r *Report) Err() error {
	for _, c := range r.Checks {
		if !c.OK {
			return fmt.Errorf("family %s self-test failed: %s: %s", r.Family, c.Name, c.Detail)
		}
	}
	return nil
}

func (r *Report) add(name string, ok bool, format string, args ...any) bool {
	r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	return ok
}

// SelfTestInput is what the self-test runs on.
type SelfTestInput struct {
	// Model is the model folder (its Tokenizer may be nil: stop tokens are then not looked up).
	Model *tito.Model
	// Template is the model's chat template.
	Template *tito.ChatTemplate
	// Profile is the family's profile.
	Profile *Profile
	// Parser is the parser name in use ("" when the family has none and none was configured).
	Parser string
	// Parse parses with that parser (nil: NativeParser(Parser)).
	Parse ParseFunc
	// Kwargs are the agent's chat_template_kwargs.
	Kwargs map[string]any
}

// SelfTest proves that an agent of this family can run token-exact, on a canonical conversation of two tool
// rounds: the stop tokens are single tokens of the vocabulary, every configured chat_template_kwargs variable is
// read by the template, the first prompt renders the tool specs, the template renders the assistant's tool call,
// the delta the agent loop appends after the tool call equals the tail of the full render (docs/design.md invariant
// 4), and the parser reads back from the rendered call the call that was rendered. It stops at the first
// failure; Report.Err says why.
func SelfTest(in SelfTestInput) *Report {
	p := in.Profile
	r := &Report{Family: p.Name, Parser: in.Parser}
	if in.Parser == "" {
		r.add("parser", false, "%s", p.Why())
		return r
	}
	if in.Parse == nil && !Builtin(in.Parser) {
		r.add("parser", false, "%s", (&Profile{Parser: in.Parser}).Why())
		return r
	}
	if in.Parser == p.Parser && p.Why() != "" {
		r.add("parser", false, "%s", p.Why())
		return r
	}
	r.add("parser", true, "%s", in.Parser)
	if !checkStops(r, in) || !checkKwargs(r, in) {
		return r
	}
	parse := in.Parse
	if parse == nil {
		var err error
		if parse, err = NativeParser(in.Parser); err != nil {
			r.add("parser", false, "%v", err)
			return r
		}
	}

	tmpl, tools := in.Template, Tools()
	opts := func(gen bool) tito.RenderOptions {
		return tito.RenderOptions{Tools: tools, AddGenerationPrompt: gen, Kwargs: in.Kwargs}
	}
	first, rounds := conversation(p, concatenatesArguments(in.Model.TemplateSource))
	prompt, err := tmpl.Render(first, opts(true))
	if !r.add("first prompt", err == nil, "render(system, user, tools): %v", err) {
		return r
	}
	if !strings.Contains(prompt, testToolDescription) {
		detail := fmt.Sprintf("the template does not render the tool specs (no %q in %q)", testToolDescription, abbrev(prompt))
		if p.ToolTemplate != "" {
			detail += fmt.Sprintf("; SGLang serves this family with --chat-template examples/chat_template/%s: launch the server "+
				"with it and set chat_template to the same file in the [[agent]] table", p.ToolTemplate)
		}
		r.Checks[len(r.Checks)-1] = Check{Name: "first prompt", Detail: detail}
		return r
	}
	r.Checks[len(r.Checks)-1].Detail = fmt.Sprintf("%d bytes, tool specs rendered", len(prompt))

	// tito's own check of invariant 4 on its canonical conversation (tool rounds, an answer, a follow-up).
	if err := tmpl.DeltaCheck(tito.RenderOptions{Kwargs: in.Kwargs}); err != nil {
		r.add("delta check", false, "%v", err)
		return r
	}
	r.add("delta check", true, "tito.DeltaCheck: every later turn's delta is the full render's tail")

	// Two tool rounds: stateful templates (DeepSeek's namespace) may write the second differently.
	conv := slices.Clone(first)
	for k, rd := range rounds {
		if !selfTestRound(r, in, tmpl, opts, parse, k, conv, prompt, rd) {
			return r
		}
		conv = append(conv, rd.asst, rd.result)
		if prompt, err = tmpl.Render(conv, opts(true)); err != nil {
			r.add("tool call", false, "round %d: render(..., tool result): %v", k+2, err)
			return r
		}
	}
	if p.Reasoning != ReasoningNone && p.Reasoning != "" {
		r.History, r.HistoryRewritten = historyProbe(tmpl, opts, first, rounds[0])
	}
	r.Window, r.WindowDetail = deltaWindow(tmpl, in.Kwargs)
	return r
}

// deltaWindow finds the template's delta window and says what it is (or why there is none).
func deltaWindow(tmpl *tito.ChatTemplate, kwargs map[string]any) (tito.DeltaWindow, string) {
	w, err := tmpl.FindDeltaWindow(tito.RenderOptions{Kwargs: kwargs})
	if err != nil {
		return w, fmt.Sprintf("whole conversation on every turn: %v", err)
	}
	return w, fmt.Sprintf("tool results rendered after the history's %v messages (the same deltas as whole renders, turn by turn, on long tool conversations)", w)
}

// historyProbe renders an earlier assistant turn with reasoning (reasoning_content, which transformers also passes
// as thinking) in a tool loop, and before a new user message, and says whether the template shows it again.
func historyProbe(tmpl *tito.ChatTemplate, opts func(bool) tito.RenderOptions, first []tito.Message, rd round) (string, bool) {
	const inLoop, beforeUser = "HISTORY-PROBE-TOOL-LOOP", "HISTORY-PROBE-NEW-USER"
	calling := tito.Message{Role: tito.RoleAssistant, ReasoningContent: inLoop, ToolCalls: rd.asst.ToolCalls}
	loop, err := tmpl.Render(append(slices.Clone(first), calling, rd.result), opts(true))
	if err != nil {
		return fmt.Sprintf("not probed: rendering a tool loop with reasoning: %v", err), false
	}
	answer := tito.Message{Role: tito.RoleAssistant, Content: "The answer is 2.5.", ReasoningContent: beforeUser}
	user, err := tmpl.Render(append(slices.Clone(first), answer, tito.Message{Role: tito.RoleUser, Content: "And 3 + 3?"}), opts(true))
	if err != nil {
		return fmt.Sprintf("not probed: rendering a new user message after reasoning: %v", err), false
	}
	keptLoop, keptUser := strings.Contains(loop, inLoop), strings.Contains(user, beforeUser)
	const deployed = `: history = "as-deployed" trains on what the model sees deployed`
	switch {
	case keptLoop && keptUser:
		return "the template shows earlier turns' reasoning again: what the model sees deployed is the chain it generated", false
	case keptLoop:
		return "the template drops an earlier turn's reasoning once a new user message comes (within a tool loop it keeps it)" + deployed, true
	case keptUser:
		return "the template drops an earlier turn's reasoning within a tool loop (after a new user message it shows it)" + deployed, true
	default:
		return "the template drops every earlier turn's reasoning" + deployed, true
	}
}

// round is one tool round of the canonical conversation: the assistant's call, its result, and what the parser
// must read back.
type round struct {
	asst, result tito.Message
	args, marker string
}

// selfTestRound checks one round after the conversation conv, whose render with a generation prompt is prompt:
// the template renders the call, the delta after it equals the full render's tail, the parser reads it back.
func selfTestRound(r *Report, in SelfTestInput, tmpl *tito.ChatTemplate, opts func(bool) tito.RenderOptions, parse ParseFunc,
	k int, conv []tito.Message, prompt string, rd round) bool {
	label := ""
	if k > 0 {
		label = fmt.Sprintf("round %d: ", k+1)
	}
	full, err := tmpl.Render(append(slices.Clip(conv), rd.asst, rd.result), opts(true))
	if !r.add("tool call", err == nil, "%srender(..., assistant tool call, tool result): %v", label, err) {
		return false
	}
	hist, err := tmpl.Render(append(slices.Clip(conv), rd.asst), opts(false))
	if err != nil {
		r.Checks[len(r.Checks)-1] = Check{Name: "tool call", Detail: fmt.Sprintf("%srender(..., assistant tool call): %v", label, err)}
		return false
	}
	bare, err := tmpl.Render(conv, opts(false))
	if err != nil {
		r.Checks[len(r.Checks)-1] = Check{Name: "tool call", Detail: fmt.Sprintf("%srender(...) without a generation prompt: %v", label, err)}
		return false
	}
	start := turnStart(prompt, full)
	marker := strings.Index(full[start:], rd.marker)
	if marker < 0 {
		r.Checks[len(r.Checks)-1] = Check{Name: "tool call", Detail: fmt.Sprintf("%sthe template does not render the assistant's tool call (no %q after the prompt in %q)", label, rd.marker, abbrev(full[start:]))}
		return false
	}
	marker += start
	// A template may write an earlier message differently once more follow (Hermes 3 ends a tool message with
	// "\n<|im_end|>" before an assistant turn): the turn then starts after the generation prompt's last
	// occurrence before the call.
	if header, ok := strings.CutPrefix(prompt, bare); ok && header != "" {
		if i := strings.LastIndex(full[:marker], header); i >= 0 {
			start = i + len(header)
		}
	}
	end, cut := turnEnd(full, hist, marker, endOfTurn(in))
	generated := full[start:end]
	r.Checks[len(r.Checks)-1].Detail = fmt.Sprintf("%sthe model's turn: %q", label, generated)

	delta, err := tmpl.RenderDelta(append(slices.Clip(conv), rd.asst), []tito.Message{rd.result}, opts(true))
	if err == nil && cut > end && tmpl.StartsNextMessage(full[end:cut]) {
		// The stop token the model generated begins the next message (GLM): it is in the history already.
		var ok bool
		if delta, ok = strings.CutPrefix(delta, full[end:cut]); !ok {
			return r.add("delta", false, "%sthe delta %q does not begin with the stop token %q that begins the next message", label, delta, full[end:cut])
		}
	}
	want := full[cut:]
	switch {
	case err != nil:
		return r.add("delta", false, "%s%v", label, err)
	case delta != want:
		return r.add("delta", false, "%sthe delta after the tool call is %q; the full render's tail after the history's end of turn is %q", label, delta, want)
	}
	r.add("delta", true, "%s%q", label, delta)

	calls, rejected, err := parse(generated)
	switch {
	case err != nil:
		return r.add("round trip", false, "%sparser %s: %v", label, in.Parser, err)
	case len(rejected) > 0:
		return r.add("round trip", false, "%sparser %s rejected the template's own tool call: %s", label, in.Parser, strings.Join(rejected, "; "))
	case len(calls) != 1:
		return r.add("round trip", false, "%sparser %s found %d calls in %q, want 1", label, in.Parser, len(calls), generated)
	case calls[0].Name != testTool || !sameJSON(calls[0].Arguments, json.RawMessage(rd.args)):
		return r.add("round trip", false, "%sparser %s read %s(%s), want %s(%s)", label, in.Parser, calls[0].Name, calls[0].Arguments, testTool, rd.args)
	}
	return r.add("round trip", true, "%s%s(%s)", label, calls[0].Name, calls[0].Arguments)
}

// concatenatesArguments reports a template that writes a call's arguments with + (DeepSeek's own templates),
// which takes them only as a JSON string; SGLang's templates for the same models write them with tojson.
func concatenatesArguments(src string) bool { return strings.Contains(src, "['arguments'] +") }

// conversation is the canonical tool conversation, with each call written as the family's template expects it.
func conversation(p *Profile, argsString bool) (first []tito.Message, rounds []round) {
	first = []tito.Message{
		{Role: tito.RoleSystem, Content: "You are a careful assistant. Use the calculator for arithmetic."},
		{Role: tito.RoleUser, Content: "What is (2 + 3) * 4, divided by 8?"},
	}
	for i, rd := range []struct{ args, marker, result string }{
		{testArguments, testExpression, testResult},
		{`{"expression": "20 / 8", "precision": 3, "options": {"exact": true, "mode": "decimal"}}`, "20 / 8", "2.5"},
	} {
		id := p.CallIDs.ID("selftest", i, testTool, 0) // one call a round: the i-th of the conversation
		args := rd.args
		content := `""`
		if p.CallArgsString && argsString {
			s, _ := json.Marshal(rd.args)
			args, content = string(s), "null"
		}
		raw := `[{"role": "assistant", "content": ` + content + `, "tool_calls": [{"id": "` + id + `", "type": "function", "function": {"name": "calculator", "arguments": ` + args + `}}]}]`
		msgs, err := tito.DecodeMessages([]byte(raw))
		if err != nil {
			panic("family: the canonical assistant message does not decode: " + err.Error()) // a bug here, not input
		}
		rounds = append(rounds, round{asst: msgs[0], result: tito.Message{Role: tito.RoleTool, ToolCallID: id, Name: testTool, Content: rd.result},
			args: rd.args, marker: rd.marker})
	}
	return first, rounds
}

// endOfTurn lists the strings that may end the model's turn: the EOS token and the family's stops.
func endOfTurn(in SelfTestInput) []string {
	var eot []string
	if in.Model.EOSToken != "" {
		eot = append(eot, in.Model.EOSToken)
	}
	return append(eot, in.Profile.Stops...)
}

// turnEnd finds where the model's turn ends in the full render: at the first end-of-turn string after the
// call (within the part that the render ending with the assistant turn shares with the full render), or where
// the two renders part. cut is past the end-of-turn string that follows, if one does: the delta starts there.
func turnEnd(full, hist string, marker int, eot []string) (end, cut int) {
	shared := commonPrefix(hist, full)
	limit := len(full)
	if shared > marker {
		limit = shared
	}
	end = -1
	for _, s := range eot {
		if i := strings.Index(full[marker:limit], s); i >= 0 && (end < 0 || marker+i < end) {
			end = marker + i
		}
	}
	if end < 0 {
		end = limit
	}
	cut = end
	for _, s := range eot {
		if strings.HasPrefix(full[end:], s) {
			cut = end + len(s)
			break
		}
	}
	return end, cut
}

// turnStart finds where the model's turn starts in the full render: after the generation prompt, or, when the
// template writes the assistant turn in history without part of the generation prompt (Qwen3's empty think block
// with enable_thinking false), after the last line or tag the two share.
func turnStart(prompt, full string) int {
	n := commonPrefix(prompt, full)
	if n == len(prompt) {
		return n
	}
	return strings.LastIndexAny(prompt[:n], ">\n") + 1
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func abbrev(s string) string {
	if len(s) > 200 {
		return s[:100] + " ... " + s[len(s)-100:]
	}
	return s
}

// checkStops looks up each stop token in the vocabulary (when the folder has a tokenizer). A stop the vocabulary
// lacks is one the model cannot generate, which is harmless, unless the family's end-of-turn rule rests on it.
func checkStops(r *Report, in SelfTestInput) bool {
	p := in.Profile
	if in.Model.Tokenizer == nil {
		return r.add("stop tokens", true, "%q (not looked up: the folder has no %s)", p.Stops, tito.FileTokenizer)
	}
	var missing []string
	for _, s := range p.Stops {
		if _, ok := in.Model.Tokenizer.TokenID(s); !ok {
			missing = append(missing, s)
		}
	}
	switch {
	case len(missing) > 0 && p.StopBeginsNext:
		return r.add("stop tokens", false, "%q: not in the vocabulary of %s, and the %s family's turns end with them (the stop token begins the next message)",
			missing, filepath.Join(in.Model.Dir, tito.FileTokenizer), p.Name)
	case len(missing) > 0:
		return r.add("stop tokens", true, "%q; %q not in the vocabulary (the model cannot generate it: not a stop)", append([]string{in.Model.EOSToken}, p.Stops...), missing)
	}
	return r.add("stop tokens", true, "%q", append([]string{in.Model.EOSToken}, p.Stops...))
}

// StopIDs returns the ids of the family's stop tokens that the model's StopIDs lack (stops its vocabulary lacks
// are left out: the model cannot generate them).
func StopIDs(m *tito.Model, p *Profile) []int32 {
	var ids []int32
	for _, s := range p.Stops {
		id, ok := m.Tokenizer.TokenID(s)
		if ok && !m.IsStop(id) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkKwargs refuses a chat_template_kwargs variable that the template never mentions: a misspelt kwarg would
// otherwise change nothing, silently.
func checkKwargs(r *Report, in SelfTestInput) bool {
	src := in.Template.Source()
	var unread []string
	for k := range in.Kwargs {
		if !identRe.MatchString(k) || !regexp.MustCompile(`\b`+k+`\b`).MatchString(src) {
			unread = append(unread, k)
		}
	}
	if len(unread) > 0 {
		slices.Sort(unread)
		var reads []string
		for _, k := range in.Profile.Kwargs {
			reads = append(reads, k.Name)
		}
		return r.add("chat_template_kwargs", false, "the chat template never reads %s (the %s family's template reads: %s)",
			strings.Join(unread, ", "), in.Profile.Name, orNone(reads))
	}
	return r.add("chat_template_kwargs", true, "%d set", len(in.Kwargs))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
