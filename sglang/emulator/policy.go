package emulator

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Script holds the scripted policy's replies: per conversation key, the assistant's reply for each turn.
type Script struct {
	replies map[string][]string
}

// ParseScript reads a JSONL script, one conversation a line: {"key": "...", "replies": ["turn 0", "turn 1", ...]}.
// A conversation's key is the KEY of a "[script:KEY]" marker in its first user message, else ScriptKey of that
// message; key "*" is the fallback for conversations with no line of their own. The reply a conversation gets is
// the one after its assistant messages, counted from the last one that carries a "[turn:N]" marker when one does
// (reply N+1 follows it): a script whose replies carry their turn number survives an agent that drops old turns.
//
// # Errors
//
// A line that is not such an object, or a duplicate key, is an error naming the line.
func ParseScript(r io.Reader) (*Script, error) {
	s := &Script{replies: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		var e struct {
			Key     *string  `json:"key"`
			Replies []string `json:"replies"`
		}
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("emulator: script line %d: %w (want {\"key\": ..., \"replies\": [...]})", line, err)
		}
		if e.Key == nil || len(e.Replies) == 0 {
			return nil, fmt.Errorf("emulator: script line %d: needs a \"key\" and at least one reply in \"replies\"", line)
		}
		if _, dup := s.replies[*e.Key]; dup {
			return nil, fmt.Errorf("emulator: script line %d: duplicate key %q", line, *e.Key)
		}
		s.replies[*e.Key] = e.Replies
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("emulator: script line %d: %w", line+1, err)
	}
	return s, nil
}

// ScriptKey is the key of a conversation whose first user message has no [script:KEY] marker: the hex SHA-256
// of that message's text with surrounding white space removed.
func ScriptKey(firstUserMessage string) string {
	h := sha256.Sum256([]byte(strings.TrimSpace(firstUserMessage)))
	return hex.EncodeToString(h[:])
}

var scriptMarker = regexp.MustCompile(`\[script:([^\]\s]+)\]`)

// NoScriptReply is the scripted policy's reply when the script has none for a conversation or turn.
const NoScriptReply = "I have no scripted reply for this turn."

func (s *Script) reply(c *conversation) string {
	if s == nil {
		return NoScriptReply
	}
	task := c.task()
	key := ScriptKey(task)
	if m := scriptMarker.FindStringSubmatch(task); m != nil {
		key = m[1]
	}
	rs, ok := s.replies[key]
	if !ok {
		rs, ok = s.replies["*"]
	}
	turn := c.scriptTurn()
	if !ok || turn >= len(rs) {
		return NoScriptReply
	}
	return rs[turn]
}

// turnMarker is a reply's own turn number, "[turn:N]", which scripts for agents that compact their context write
// into their replies.
var turnMarker = regexp.MustCompile(`\[turn:(\d+)\]`)

// scriptTurn is the reply a scripted conversation is at: one past the last assistant message that carries a
// [turn:N] marker (N + 1 + the assistant messages after it), so that a conversation whose older turns an agent
// dropped goes on where it was; without markers, the number of assistant messages after the task.
func (c *conversation) scriptTurn() int {
	after := 0
	for i := len(c.messages) - 1; i > c.taskIdx && c.taskIdx >= 0; i-- {
		m := c.messages[i]
		if m.role != "assistant" {
			continue
		}
		if ms := turnMarker.FindAllStringSubmatch(m.content, -1); ms != nil {
			if n, err := strconv.Atoi(ms[len(ms)-1][1]); err == nil && n < math.MaxInt32 {
				return n + 1 + after
			}
		}
		after++
	}
	return c.assistantTurns()
}

// The agentic policy.

var exprRe = regexp.MustCompile(`[(\s]*-?\d+(?:\.\d+)?[)\s]*(?:[-+*/][(\s]*-?\d+(?:\.\d+)?[)\s]*)+`)

// findExpressions returns the arithmetic expressions in a task, in order ("what is 12*7 and (3+4)/2?" gives
// "12*7" and "(3+4)/2").
func findExpressions(task string) []string {
	var out []string
	for _, m := range exprRe.FindAllString(task, -1) {
		m = strings.TrimSpace(m)
		// balance parentheses by trimming unmatched ones at the ends
		for strings.Count(m, "(") > strings.Count(m, ")") && strings.HasPrefix(m, "(") {
			m = strings.TrimSpace(m[1:])
		}
		for strings.Count(m, ")") > strings.Count(m, "(") && strings.HasSuffix(m, ")") {
			m = strings.TrimSpace(m[:len(m)-1])
		}
		if strings.Count(m, "(") != strings.Count(m, ")") || !strings.ContainsAny(m, "+-*/") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// calculatorTool finds a tool that evaluates expressions, and the parameter that takes the expression.
func calculatorTool(tools []toolSpec) (toolSpec, string, bool) {
	for _, t := range tools {
		n := strings.ToLower(t.Name)
		for _, p := range t.Params {
			if p == "expression" || p == "expr" {
				return t, p, true
			}
		}
		if strings.Contains(n, "calc") || strings.Contains(n, "math") || strings.Contains(n, "eval") {
			return t, mainParam(t, "expression"), true
		}
	}
	return toolSpec{}, "", false
}

// codeTool finds a tool that runs Python code (execute_python_code and the like: a "code" parameter, or a name
// with "python" in it), and the parameter that takes the code.
func codeTool(tools []toolSpec) (toolSpec, string, bool) {
	for _, t := range tools {
		for _, p := range t.Params {
			if p == "code" {
				return t, p, true
			}
		}
		if strings.Contains(strings.ToLower(t.Name), "python") {
			return t, mainParam(t, "code"), true
		}
	}
	return toolSpec{}, "", false
}

// mainParam is the parameter a tool found by its name takes its input in: the first required one, else the first
// one, else def.
func mainParam(t toolSpec, def string) string {
	if len(t.Required) > 0 {
		return t.Required[0]
	}
	if len(t.Params) > 0 {
		return t.Params[0]
	}
	return def
}

// pythonProgram is the code the agentic policy writes for a task's expressions: one print per expression.
func pythonProgram(exprs []string) string {
	var b strings.Builder
	for _, e := range exprs {
		fmt.Fprintf(&b, "print(%s)\n", e)
	}
	return b.String()
}

type kv struct {
	k string
	v any // string, int, float64, bool
}

type call struct {
	name string
	args []kv
	id   string // the call id the format writes (mistral_nemo, mistral_v11), "" for one derived from the call
	// prior is the number of calls in the conversation's earlier turns: kimi_k2 ids count on from it
	// (functions.NAME:N, N the conversation's call counter, as Kimi K2 writes them).
	prior int
}

// callIDChars are the characters of a Mistral call id (9 of them: the templates raise on any other length).
const callIDChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// mistralCallID is a 9-character alphanumeric call id made from h, as Mistral's templates require.
func mistralCallID(h uint64) string {
	var b [9]byte
	for i := range b {
		h = mixIn(h, uint64(i))
		b[i] = callIDChars[h%uint64(len(callIDChars))]
	}
	return string(b[:])
}

func hashString(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// agentic answers like a tool-using model: calculator calls for the task's expressions (all in one turn, or
// spread over several: each turn draws how many of the expressions not yet called it calls); without a
// calculator but with a Python tool (a "code" parameter), one call whose code prints each expression, then an
// answer with the last printed value in \boxed{}; a call to the first tool when there is no arithmetic; then a
// final answer built from the tool results. Which calls are done is read from the conversation, so every turn of
// an episode agrees with the earlier ones whatever rng draws.
func (s *Server) agentic(c *conversation, rng *rand.Rand) (reply string) {
	format := s.cfg.ToolFormat
	if format == "" {
		format = FormatHermes
		if c.format == chatLlama {
			format = FormatLlama3
		}
	}
	calling := false // the reply makes tool calls
	if c.format == chatGLM {
		defer func() { reply = glmTurn(reply, format, calling) }()
	}
	task := c.task()
	turn := c.assistantTurns()
	var think, open string
	if c.open != nil {
		open = c.open.content
	}
	thinking := false // the reply starts in a think block, which it closes before its calls or answer
	switch {
	case (c.format == chatML || c.format == chatDeepSeek) && s.cfg.ThinkRate > 0 && rng.Float64() < s.cfg.ThinkRate &&
		!strings.Contains(open, thinkClose(format)):
		think, thinking = thinkFiller(s.cfg.ThinkWords, rng), true
		if !strings.Contains(open, thinkOpen(format)) { // else the generation prompt opened it (QwQ, V3.1 thinking)
			think = thinkOpen(format) + "\n" + think
		}
	case (c.format == chatMiniMax || c.format == chatGLM) && c.open != nil && strings.Contains(c.open.content, thinkOpen(format)) &&
		!strings.Contains(c.open.content, thinkClose(format)):
		// MiniMax-M2's generation prompt opens <think> (GLM-4.7's too, with thinking on): the model reasons, then
		// closes it.
		think, thinking = thinkFiller(s.cfg.ThinkWords, rng), true
	case c.format == chatHarmony && s.cfg.ThinkRate > 0 && rng.Float64() < s.cfg.ThinkRate:
		// gpt-oss reasons in an analysis message, which continues the generation prompt's "<|start|>assistant"; its
		// calls and its final answer are messages of their own after it.
		think, thinking = thinkOpen(FormatGPTOSS)+thinkFiller(s.cfg.ThinkWords, rng), true
	case c.format == chatGLM && format == FormatGLM45 && c.open != nil && strings.TrimSpace(open) == "":
		// GLM-4.5/4.6 with thinking on: the generation prompt is a bare <|assistant|>, and the model opens <think>.
		think, thinking = thinkOpen(format)+thinkFiller(s.cfg.ThinkWords, rng), true
	}
	calc, param, hasCalc := calculatorTool(c.tools)
	py, pyParam, hasPy := codeTool(c.tools)
	exprs := findExpressions(task)
	usePy := !hasCalc && hasPy && len(exprs) > 0
	useCalc := hasCalc && len(exprs) > 0
	var other *toolSpec // the tool the task asks for, when it is not arithmetic
	if !usePy && !useCalc && task != "" {
		other = chooseTool(c.tools, task)
	}
	useOther := other != nil
	var cs []call // this turn's calls
	switch {
	case usePy && turn == 0:
		cs = []call{{name: py.Name, args: []kv{{pyParam, pythonProgram(exprs)}}}}
	case useCalc:
		called := calledExpressions(c, param, exprs)
		var rest []call
		for i, e := range exprs {
			if !called[i] {
				rest = append(rest, call{name: calc.Name, args: []kv{{param, e}}})
			}
		}
		k := len(rest)
		switch {
		case k == 0:
		case format == FormatLlama3 || format == FormatGPTOSS || (k > 1 && rng.IntN(3) == 0):
			k = 1 // one call a turn (the Llama 3.1 template allows no more; gpt-oss stops on the call's <|call|>)
		case k > 2 && rng.IntN(2) == 0:
			k /= 2
		}
		cs = rest[:k]
	case useOther && turn == 0:
		cs = []call{{name: other.Name, args: fillArgs(*other, task, rng)}}
	}
	if len(cs) > 0 {
		if thinking {
			think += fmt.Sprintf("I need to call %s %d time(s) to answer this.", cs[0].name, len(cs)) + thinkEnd(c, format)
		}
		malformed := -1
		if s.cfg.MalformedRate > 0 && rng.Float64() < s.cfg.MalformedRate {
			malformed = rng.IntN(4)
		}
		calling = true
		if format == FormatMistralNemo || format == FormatMistralV11 {
			for i := range cs { // drawn last, so that the other draws are those of any format
				cs[i].id = mistralCallID(rng.Uint64())
			}
		}
		if format == FormatKimiK2 {
			prior := 0
			for _, m := range c.messages {
				if m.role == "assistant" {
					prior += strings.Count(m.content, "<|tool_call_begin|>")
				}
			}
			for i := range cs {
				cs[i].prior = prior
			}
		}
		out := renderCalls(format, cs, malformed)
		if format == FormatGPTOSS && think == "" {
			// The generation prompt wrote the first message's "<|start|>assistant": the model goes on with its
			// header (" to=functions.f<|channel|>commentary json<|message|>...").
			out = strings.TrimPrefix(out, "<|start|>assistant")
		}
		return think + out
	}
	if thinking {
		think += "I have what I need to answer." + thinkEnd(c, format)
		if c.format == chatHarmony {
			think += "<|start|>assistant<|channel|>final<|message|>"
		}
	}
	results := c.toolResults()
	// A slip: the final answer misreports the last value (drawn only when the rate is set, so that other draws
	// stay as they were without it).
	slip := s.cfg.WrongAnswerRate > 0 && rng.Float64() < s.cfg.WrongAnswerRate
	switch {
	case usePy:
		return think + pythonAnswer(exprs, results, slip)
	case useCalc:
		var b strings.Builder
		for i, e := range exprs {
			if i < len(results) && !toolFailed(results[i]) {
				fmt.Fprintf(&b, "%s = %s\n", e, resultValue(results[i]))
			} else {
				fmt.Fprintf(&b, "%s could not be computed.\n", e)
			}
		}
		if last := min(len(results), len(exprs)) - 1; last >= 0 && !toolFailed(results[last]) {
			v := resultValue(results[last])
			if slip {
				v = wrongValue(v)
			}
			fmt.Fprintf(&b, "The answer is %s.", v)
		} else {
			b.WriteString("I could not get a result from the calculator.")
		}
		return think + b.String()
	case useOther:
		switch {
		case len(results) == 0:
			return think + "The tool returned nothing, so I cannot answer."
		case toolFailed(results[len(results)-1]):
			return think + "The tool failed, so I cannot answer."
		}
		return think + "Based on the tool result: " + resultValue(results[len(results)-1])
	}
	return think + plainAnswer(task, rng)
}

// glmTurn is a reply to a GLM prompt as the model writes it: GLM-4.5/4.6 (glm45) start their text with a newline
// after the generation prompt's <|assistant|> or <think></think>, and another after their reasoning's </think>
// (4.7 write none), and the turn ends on the token that begins the next message, as the real models end it:
// <|observation|> after tool calls, <|user|> after an answer. Both are stop ids of the GLM models (generation_config.json's eos_token_id, the profile's Stops), so
// the reply ends there; a client that does not send them as stop_token_ids gets them followed by StopIDs[0].
func glmTurn(reply, format string, calling bool) string {
	if format == FormatGLM45 {
		// \n<think>REASONING</think>\nCONTENT, as the GLM-4.5/4.6 template writes a turn
		if _, after, ok := strings.Cut(reply, thinkClose(format)); ok && !strings.HasPrefix(after, "\n") {
			reply = reply[:len(reply)-len(after)] + "\n" + after
		}
		if !strings.HasPrefix(reply, "\n") {
			reply = "\n" + reply
		}
	}
	if calling {
		return reply + glmObservation
	}
	return reply + glmUser
}

// calledExpressions reports which of exprs earlier assistant turns already passed to the calculator's param,
// found by the argument as renderCalls writes it in any format (a JSON `"param": "expr"`, or qwen3_coder's
// <parameter=param> block). A malformed call counts as made, as a model does not repeat it; an expression
// that occurs twice in the task needs two calls.
func calledExpressions(c *conversation, param string, exprs []string) []bool {
	var prior strings.Builder
	for i := c.taskIdx + 1; i < len(c.messages) && c.taskIdx >= 0; i++ {
		if c.messages[i].role == "assistant" {
			prior.WriteString(c.messages[i].content)
			prior.WriteByte(0) // no fragment spans two messages
		}
	}
	done := make([]bool, len(exprs))
	if prior.Len() == 0 {
		return done
	}
	text := prior.String()
	key := valueText(param, true)
	seen := map[string]int{}
	for i, e := range exprs {
		n, ok := seen[e]
		if !ok {
			v := valueText(e, true)
			n = strings.Count(text, key+": "+v) + strings.Count(text, key+":"+v) +
				strings.Count(text, "<parameter="+param+">\n"+e+"\n</parameter>") +
				strings.Count(text, "<parameter="+param+">"+e+"</parameter>") +
				strings.Count(text, `<parameter name="`+param+`">`+e+"</parameter>") +
				strings.Count(text, "<arg_key>"+param+"</arg_key>\n<arg_value>"+e+"</arg_value>") + // glm45
				strings.Count(text, "<arg_key>"+param+"</arg_key><arg_value>"+e+"</arg_value>") + // glm47
				strings.Count(text, param+"="+v) // pythonic
		}
		if n > 0 {
			done[i] = true
			n--
		}
		seen[e] = n
	}
	return done
}

// pythonAnswer is the final answer after a Python tool ran the expressions: each expression with the line it
// printed, and the last one boxed; a failed run (an "Error" result) gets an answer without a number.
func pythonAnswer(exprs []string, results []string, slip bool) string {
	if len(results) == 0 {
		return "The code did not run, so I cannot answer."
	}
	out := strings.TrimSpace(results[len(results)-1])
	if out == "" || toolFailed(out) {
		return "The code failed, so I cannot give an answer."
	}
	lines := strings.Split(out, "\n")
	var b strings.Builder
	for i, e := range exprs {
		if i < len(lines) {
			fmt.Fprintf(&b, "%s = %s\n", e, strings.TrimSpace(lines[i]))
		}
	}
	v := strings.TrimSpace(lines[min(len(lines), len(exprs))-1])
	if slip {
		v = wrongValue(v)
	}
	fmt.Fprintf(&b, "The answer is \\boxed{%s}.", v)
	return b.String()
}

// wrongValue is a value a slipping model reports instead of v: an integer off by one, another number doubled
// plus one, anything else "0".
func wrongValue(v string) string {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return strconv.FormatInt(n+1, 10)
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return strconv.FormatFloat(2*f+1, 'g', -1, 64)
	}
	return "0"
}

// toolFailed reports an error result ("Error: ..."). The answer does not quote it: an error about a malformed
// call quotes the call, and an answer holding a tool-call tag would be parsed as another call.
func toolFailed(r string) bool { return strings.HasPrefix(strings.TrimSpace(r), "Error") }

// resultValue takes "result" (or "output") out of a JSON object result, else the text itself.
func resultValue(r string) string {
	var m map[string]any
	if json.Unmarshal([]byte(r), &m) == nil {
		for _, k := range []string{"result", "output", "value", "answer"} {
			if v, ok := m[k]; ok {
				if s, ok := v.(string); ok {
					return s
				}
				b, _ := marshal(v)
				return string(b)
			}
		}
	}
	return strings.TrimSpace(r)
}

// sentences are the plain answer's building blocks.
const sentences = "Here is a short answer.|I thought about this carefully.|The key point is simple.|Let me explain step by step.|This follows from the question directly.|There is nothing more to add."

func plainAnswer(task string, rng *rand.Rand) string {
	var b strings.Builder
	pool := strings.Split(sentences, "|")
	n := 1 + rng.IntN(3)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(pool[rng.IntN(len(pool))])
	}
	if task != "" {
		t := task
		if r := []rune(t); len(r) > 60 {
			t = string(r[:60])
		}
		fmt.Fprintf(&b, " You asked: %q.", t)
	}
	return b.String()
}

var numRe = regexp.MustCompile(`-?\d+(?:\.\d+)?`)

// stopWords are words too common to tie a task to a tool.
var stopWords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "what": true, "which": true,
	"this": true, "that": true, "from": true, "are": true, "how": true, "can": true, "you": true, "please": true,
	"use": true, "tool": true, "tools": true, "into": true, "about": true, "give": true, "tell": true, "get": true,
	"its": true, "was": true, "were": true, "there": true, "have": true, "has": true, "will": true, "would": true}

// words returns the lower-cased words of s (letters and digits, 3 or more, no stop words); snake_case, kebab-case
// and camelCase names split into their words.
func words(s string) []string {
	var out []string
	var w []rune
	flush := func() {
		if len(w) >= 3 && !stopWords[string(w)] {
			out = append(out, string(w))
		}
		w = w[:0]
	}
	var prev rune
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			w = append(w, unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			w = append(w, unicode.ToLower(r))
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// sameWord matches a word and its inflections ("word", "words"; "convert", "conversion" do not): equal, or one
// a prefix of the other of at least 4 letters, differing by at most 3.
func sameWord(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || len(a) >= 4 && len(b)-len(a) <= 3 && strings.HasPrefix(b, a)
}

// chooseTool picks the tool a task asks for: the one whose name (twice the weight) and description share the most
// words with the task; the first listed among equals. nil when no tool shares a word with the task: the model then
// answers without a tool, as a model does when none fits.
func chooseTool(tools []toolSpec, task string) *toolSpec {
	tw := words(task)
	best, bestScore := -1, 0
	for i := range tools {
		score := 0
		for _, field := range []struct {
			text   string
			weight int
		}{{tools[i].Name, 2}, {tools[i].Description, 1}} {
			for _, w := range words(field.text) {
				if slices.ContainsFunc(tw, func(x string) bool { return sameWord(x, w) }) {
					score += field.weight
				}
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return nil
	}
	return &tools[best]
}

// textParams are parameter names that take the task's own words.
var textParams = map[string]bool{"text": true, "query": true, "q": true, "question": true, "prompt": true, "input": true,
	"content": true, "message": true, "task": true, "search": true, "search_query": true, "body": true}

var quotedRe = regexp.MustCompile(`"([^"]+)"|'([^']+)'`)

// fillArgs writes a tool's arguments from its schema and the task: every required parameter (all of them when none
// is required), and an optional one the task names; each value of its declared type: an enum's value the task
// names (else one drawn), the task's numbers in order (clamped to minimum/maximum), a quoted phrase or a capitalised
// name from the task for a string (the whole task for a text-like parameter: text, query, ...), a boolean drawn,
// an array of one such value, an empty object. Deterministic for a seed: only rng draws.
func fillArgs(t toolSpec, task string, rng *rand.Rand) []kv {
	names := t.Required
	if len(names) == 0 {
		names = t.Params
	}
	lower := strings.ToLower(task)
	for _, p := range t.Params {
		if !slices.Contains(names, p) && slices.ContainsFunc(words(p), func(w string) bool { return strings.Contains(lower, w) }) {
			names = append(names, p)
		}
	}
	nums := numRe.FindAllString(task, -1)
	var out []kv
	for _, n := range t.Params { // schema order
		if slices.Contains(names, n) {
			out = append(out, kv{n, fillValue(n, t.ParamTypes[n], t.Schemas[n], task, &nums, rng)})
		}
	}
	for _, n := range names { // required but not declared
		if !slices.Contains(t.Params, n) {
			out = append(out, kv{n, fillValue(n, "", paramSchema{}, task, &nums, rng)})
		}
	}
	return out
}

func fillValue(name, typ string, ps paramSchema, task string, nums *[]string, rng *rand.Rand) any {
	if len(ps.Enum) > 0 {
		lower := strings.ToLower(task)
		for _, e := range ps.Enum {
			if s, ok := e.(string); ok && s != "" && slices.Contains(words(lower), strings.ToLower(s)) {
				return s
			}
		}
		return ps.Enum[rng.IntN(len(ps.Enum))]
	}
	switch typ {
	case "integer", "number":
		v, ok := 1.0, false
		if len(*nums) > 0 {
			if x, err := strconv.ParseFloat((*nums)[0], 64); err == nil {
				v, ok = x, true
				*nums = (*nums)[1:]
			}
		}
		if !ok && ps.Min != nil {
			v = *ps.Min
		}
		if ps.Min != nil && v < *ps.Min {
			v = *ps.Min
		}
		if ps.Max != nil && v > *ps.Max {
			v = *ps.Max
		}
		if typ == "integer" {
			return int(math.Round(v))
		}
		return v
	case "boolean":
		return rng.IntN(2) == 0
	case "array":
		switch ps.Items {
		case "integer", "number", "boolean":
			return []any{fillValue(name, ps.Items, paramSchema{}, task, nums, rng)}
		case "string", "":
			return []any{stringValue(name, task)}
		}
		return []any{}
	case "object":
		return map[string]any{}
	}
	return stringValue(name, task)
}

// stringValue is a string argument from the task: a quoted phrase, else the whole task for a text-like parameter,
// else a capitalised word that does not start a sentence (a name: "in Paris"), else the whole task.
func stringValue(name, task string) string {
	if m := quotedRe.FindStringSubmatch(task); m != nil {
		return m[1] + m[2]
	}
	task = strings.TrimSpace(task)
	if textParams[strings.ToLower(name)] {
		return task
	}
	fields := strings.Fields(task)
	for i, f := range fields {
		if i == 0 || strings.HasSuffix(fields[i-1], ".") {
			continue
		}
		if r := []rune(f); unicode.IsUpper(r[0]) {
			return strings.TrimRight(f, ".,;:!?")
		}
	}
	return task
}

// pyJSON writes args the way json.dumps does: {"k": "v", "n": 3}.
func pyJSON(args []kv) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := marshal(a.k)
		b.Write(k)
		b.WriteString(": ")
		b.WriteString(valueText(a.v, true))
	}
	b.WriteByte('}')
	return b.String()
}

func valueText(v any, quoted bool) string {
	switch x := v.(type) {
	case string:
		if !quoted {
			return x
		}
		j, _ := marshal(x)
		return string(j)
	case float64:
		return pyFloat(x)
	default:
		j, _ := marshal(x)
		return string(j)
	}
}

// pyLiteral writes a value as a Python literal (JSON strings and numbers are Python literals already).
func pyLiteral(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	}
	return valueText(v, true)
}

// UnknownToolName is the tool name of a malformed "unknown tool" call.
const UnknownToolName = "nonexistent_tool"

// xmlCall writes a call as Qwen3-Coder, Seed-OSS and MiniMax-M2 do: head (which names the tool), nameEnd, a
// newline, each argument by param (a format of its name and value text), then tail. A bad call loses nameEnd
// (malformed 0) or tail (malformed 1).
func xmlCall(head, nameEnd, param, tail string, args []kv, bad bool, malformed int) string {
	var b strings.Builder
	b.WriteString(head)
	if !(bad && malformed == 0) {
		b.WriteString(nameEnd)
	}
	b.WriteString("\n")
	for _, a := range args {
		fmt.Fprintf(&b, param, a.k, valueText(a.v, false))
	}
	if !(bad && malformed == 1) {
		b.WriteString(tail)
	}
	return b.String()
}

// cutLast drops the last byte of a call's JSON when broken (malformed 0: broken JSON).
func cutLast(broken bool, j string) string {
	if broken {
		return j[:len(j)-1]
	}
	return j
}

// renderCalls writes tool calls in a format; malformed (0 broken JSON or tag, 1 unclosed tag, 2 unknown tool
// name, 3 arguments left out, -1 none) breaks the first call.
func renderCalls(format string, cs []call, malformed int) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		name := c.name
		if i == 0 && malformed == 2 {
			name = UnknownToolName
		}
		if i == 0 && malformed == 3 {
			c.args = nil // a required argument missing: the parser's bad_arguments
		}
		bad := i == 0 && malformed >= 0 && malformed < 2
		switch format {
		case FormatQwen3Coder:
			parts[i] = xmlCall("<tool_call>\n<function="+name, ">", "<parameter=%s>\n%s\n</parameter>\n", "</function>\n</tool_call>", c.args, bad, malformed)
		case FormatSeedOSS:
			// As the Seed-OSS chat template writes a call: values raw, no newlines around them.
			parts[i] = xmlCall("<seed:tool_call>\n<function="+name, ">", "<parameter=%s>%s</parameter>\n", "</function>\n</seed:tool_call>", c.args, bad, malformed)
		case FormatMiniMaxM2:
			// As the MiniMax-M2 chat template writes it; the block around all invokes is added below.
			parts[i] = xmlCall(`<invoke name="`+name, `">`, `<parameter name="%s">%s</parameter>`+"\n", "</invoke>", c.args, bad, malformed)
		case FormatKimiK2:
			// As Kimi K2 writes a call: its id functions.NAME:N, N counting the conversation's calls (the July
			// template re-renders N as the call's index in its turn); the section around all calls is added below.
			j := cutLast(bad && malformed == 0, pyJSON(c.args))
			p := "<|tool_call_begin|>functions." + name + ":" + strconv.Itoa(c.prior+i) + "<|tool_call_argument_begin|>" + j
			if !(bad && malformed == 1) {
				p += "<|tool_call_end|>"
			}
			parts[i] = p
		case FormatDeepSeekV3, FormatDeepSeekV31:
			// As the DeepSeek chat templates write a call; the section around all calls is added below.
			j := cutLast(bad && malformed == 0, pyJSON(c.args))
			p := "<｜tool▁call▁begin｜>" + name + "<｜tool▁sep｜>" + j
			if format == FormatDeepSeekV3 {
				p = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n" + j + "\n```"
			}
			if !(bad && malformed == 1) {
				p += "<｜tool▁call▁end｜>"
			}
			parts[i] = p
		case FormatMistralNemo:
			// As the Mistral Nemo template writes a call: a list item with the arguments object and the call's
			// 9-character id; the list around the items is added below.
			id := c.id
			if id == "" {
				id = mistralCallID(hashString(name) ^ uint64(i))
			}
			j := cutLast(bad && malformed == 0, `{"name": `+valueText(name, true)+`, "arguments": `+pyJSON(c.args)+`, "id": "`+id+`"}`)
			parts[i] = j
		case FormatMistral, FormatMistralV11:
			// As the Devstral template (mistral) and the Mistral Small 3.2 one (mistral_v11, with the call's
			// 9-character id) write a call.
			j := cutLast(bad && malformed == 0, pyJSON(c.args))
			sep := "[ARGS]"
			if bad && malformed == 1 {
				sep = ""
			}
			if format == FormatMistralV11 {
				id := c.id
				if id == "" {
					id = mistralCallID(hashString(name) ^ uint64(i))
				}
				sep = "[CALL_ID]" + id + sep
			}
			parts[i] = "[TOOL_CALLS]" + name + sep + j
		case FormatGLM45, FormatGLM47:
			// As the GLM templates write a call: string values raw, others as JSON; 4.5/4.6 with newlines.
			nl := ""
			if format == FormatGLM45 {
				nl = "\n"
			}
			var b strings.Builder
			b.WriteString(nl + "<tool_call>" + name)
			for k, a := range c.args {
				v := "<arg_value>" + valueText(a.v, false) + "</arg_value>"
				if bad && malformed == 0 && k == 0 {
					v = valueText(a.v, false) // a value without its tags
				}
				b.WriteString(nl + "<arg_key>" + a.k + "</arg_key>" + nl + v)
			}
			if !(bad && malformed == 1) {
				b.WriteString(nl + "</tool_call>")
			}
			parts[i] = b.String()
		case FormatGPTOSS:
			// As the gpt-oss chat template writes a call: recipient before the channel, bare json content type.
			j := cutLast(bad && malformed == 0, pyJSON(c.args))
			ctype := "json"
			if bad && malformed == 1 {
				ctype = "yaml" // a content type the parser refuses (a missing <|call|> is not malformed: agents strip it)
			}
			parts[i] = "<|start|>assistant to=functions." + name + "<|channel|>commentary " + ctype + "<|message|>" + j + "<|call|>"
		case FormatPythonic:
			var b strings.Builder
			b.WriteString(name + "(")
			for k, a := range c.args {
				if k > 0 {
					b.WriteString(", ")
				}
				b.WriteString(a.k + "=" + pyLiteral(a.v))
			}
			if bad && malformed == 0 {
				b.WriteString(", +")
			}
			b.WriteString(")")
			parts[i] = b.String()
		case FormatLlama3:
			j := cutLast(bad, `{"name": `+valueText(name, true)+`, "parameters": `+pyJSON(c.args)+`}`) // llama3 has no tags to leave open
			parts[i] = j
		default:
			j := cutLast(bad && malformed == 0, `{"name": `+valueText(name, true)+`, "arguments": `+pyJSON(c.args)+`}`)
			p := "<tool_call>\n" + j
			if !(bad && malformed == 1) {
				p += "\n</tool_call>"
			}
			parts[i] = p
		}
	}
	switch format {
	case FormatPythonic:
		list := "[" + strings.Join(parts, ", ")
		if malformed != 1 {
			list += "]"
		}
		return list
	case FormatGPTOSS:
		return strings.Join(parts, "")
	case FormatLlama3:
		return strings.Join(parts, "; ")
	case FormatMistral, FormatMistralV11, FormatGLM45, FormatGLM47:
		return strings.Join(parts, "")
	case FormatMistralNemo:
		if malformed == 1 {
			return "[TOOL_CALLS]" + strings.Join(parts, ", ") // the list's brackets left out
		}
		return "[TOOL_CALLS][" + strings.Join(parts, ", ") + "]"
	case FormatDeepSeekV3, FormatDeepSeekV31:
		return "<｜tool▁calls▁begin｜>" + strings.Join(parts, "") + "<｜tool▁calls▁end｜>"
	case FormatKimiK2:
		return "<|tool_calls_section_begin|>" + strings.Join(parts, "") + "<|tool_calls_section_end|>"
	case FormatMiniMaxM2:
		return "<minimax:tool_call>\n" + strings.Join(parts, "\n") + "\n</minimax:tool_call>"
	}
	return strings.Join(parts, "\n")
}

// thinkOpen and thinkClose are the reasoning tags of a tool-call format's family.
func thinkOpen(format string) string {
	switch format {
	case FormatSeedOSS:
		return "<seed:think>"
	case FormatGPTOSS:
		return "<|channel|>analysis<|message|>"
	}
	return "<think>"
}

func thinkClose(format string) string {
	switch format {
	case FormatSeedOSS:
		return "</seed:think>"
	case FormatGPTOSS:
		return "<|end|>"
	}
	return "</think>"
}

// thinkEnd closes a think block: on a line of its own, a blank line after it; for GLM as its templates write a
// turn's reasoning back (<think>REASONING</think>CONTENT, stripped).
func thinkEnd(c *conversation, format string) string {
	switch c.format {
	case chatGLM:
		return thinkClose(format)
	case chatHarmony:
		return thinkClose(FormatGPTOSS) // the analysis message's <|end|>; the next message's <|start|> follows
	}
	return "\n" + thinkClose(format) + "\n\n"
}

// thinkFiller is n words of plausible reasoning, then a newline (nothing for n = 0).
func thinkFiller(n int, rng *rand.Rand) string {
	if n <= 0 {
		return ""
	}
	words := strings.Fields("let me think about the question carefully first the user wants a precise result so I " +
		"should check each step and the numbers before I answer this seems right but I will verify it again")
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	b.WriteString(".\n")
	return b.String()
}
