package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// Trajectory statuses and reasons (the status taxonomy). Infrastructure failures are never "completed".
const (
	StatusCompleted = "completed"
	StatusTruncated = "truncated"
	StatusAborted   = "aborted"
	StatusFailed    = "failed"

	ReasonLength        = "length"
	ReasonContextWindow = "context_window"
	ReasonMaxToolIters  = abi.StopMaxToolIters
	ReasonMaxToolCalls  = abi.StopMaxToolCalls
	ReasonMaxMessages   = abi.StopMaxMessages
	ReasonParseError    = "parse_error" // completed under parse_errors = "stop"

	ReasonServerUnavailable = "server_unavailable"
	ReasonAbortedByRequest  = "aborted_by_request"
	ReasonDeadline          = "deadline"
	ReasonHookFailure       = "hook_failure"
	// ReasonEnvironment: a remote environment (runtime/envtool) could not be created, failed during a call or
	// could not give its reward; the error names the service.
	ReasonEnvironment = "environment"

	ReasonInvariant    = "invariant"
	ReasonTemplate     = "template"
	ReasonParser       = "parser"
	ReasonRuntimeError = "runtime_error"
)

// Aborter is implemented by generators that can abort a request on the server (*sglang.Client): an episode
// cancelled mid-generation aborts its request there.
type Aborter interface {
	AbortRequest(ctx context.Context, rid string) error
}

// Template renders prompts: the first in full, later ones as deltas. *tito.ChatTemplate implements it.
type Template interface {
	Render(msgs []tito.Message, o tito.RenderOptions) (string, error)
	RenderDelta(history, msgs []tito.Message, o tito.RenderOptions) (string, error)
}

// AgentDeps are the built components an Agent runs with; cmd/agentrt constructs them.
type AgentDeps struct {
	Generator Generator
	Tokenizer Tokenizer
	Template  Template
	// StopIDs are the model's end-of-turn ids; a response that ends with one has it trimmed before parsing.
	StopIDs []int32
	// ExtraStopIDs are sent to SGLang as stop_token_ids: the family's end-of-turn tokens that the model folder's
	// EOS and generation_config.json lack (GLM's <|observation|>, Llama's <|eom_id|>, gpt-oss's <|call|>).
	ExtraStopIDs []int32
	// CallIDs is the form of tool call ids the family's template accepts: an id the parser returns is kept when it
	// has that form, else the loop makes one (deterministic per episode, turn and call).
	CallIDs family.CallIDStyle
	Parser  Parser
	Tools   []ToolBinding
	Hooks   []HookBinding
	Reward  *HookBinding
	// ContextWindow is the effective limit (the config's, or the server's max_model_len).
	ContextWindow int
	// Provenance is copied into every trajectory (tokenizer/template sha256, plugin sha256s, ...).
	Provenance map[string]any
	// Gate, if set, holds each model call while it is closed (a pause for a weight update).
	Gate   *Gate
	Logger *slog.Logger
	// Owned are closed with the agent: the plugin modules BuildAgent loaded for it (their instances would
	// otherwise stay in the host until it closes).
	Owned []interface{ Close(context.Context) error }
}

// Agent runs episodes of one configured agent. It is safe for concurrent use: each Run is independent.
type Agent struct {
	cfg       AgentConfig
	d         AgentDeps
	toolByFn  map[string]*ToolBinding
	toolSpecs []json.RawMessage
	stop      map[int32]bool
	log       *slog.Logger

	closeOnce sync.Once
	closeErr  error
}

// NewAgent checks the dependencies and returns an Agent.
func NewAgent(cfg AgentConfig, d AgentDeps) (*Agent, error) {
	if d.Generator == nil || d.Tokenizer == nil || d.Template == nil || d.Parser == nil {
		return nil, errors.New("runtime: agent needs a generator, tokenizer, template and parser")
	}
	if d.ContextWindow <= 0 {
		return nil, fmt.Errorf("runtime: agent %q: context window must be > 0", cfg.Name)
	}
	if cfg.Sampling.MaxNewTokens <= 0 {
		return nil, fmt.Errorf("runtime: agent %q: sampling.max_new_tokens must be > 0", cfg.Name)
	}
	a := &Agent{cfg: cfg, d: d, toolByFn: map[string]*ToolBinding{}, stop: map[int32]bool{}, log: d.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	for _, id := range d.StopIDs {
		a.stop[id] = true
	}
	for i := range d.Tools {
		tb := &d.Tools[i]
		for _, spec := range tb.Specs {
			name, err := specName(spec)
			if err != nil {
				return nil, fmt.Errorf("runtime: agent %q: tool plugin %s: %w", cfg.Name, tb.Plugin, err)
			}
			if prev, dup := a.toolByFn[name]; dup {
				return nil, fmt.Errorf("runtime: agent %q: tool %q is offered by both %s and %s", cfg.Name, name, prev.Plugin, tb.Plugin)
			}
			a.toolByFn[name] = tb
			a.toolSpecs = append(a.toolSpecs, spec)
		}
	}
	return a, nil
}

// Close releases what the agent holds: what its tools hold outside the plugin host (a command tool's compiled
// module and scratch directories, MCP servers, remote environments) and the plugin modules loaded for it.
// Episodes must have ended.
func (a *Agent) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		var errs []error
		for _, tb := range a.d.Tools {
			if c, ok := tb.Tool.(interface{ Close(context.Context) error }); ok {
				errs = append(errs, c.Close(ctx))
			}
		}
		for _, c := range a.d.Owned {
			errs = append(errs, c.Close(ctx))
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

// Name is the agent's configured name.
func (a *Agent) Name() string { return a.cfg.Name }

// ResumesPartial reports partial_rollout = "resume": episodes that SGLang aborted are worth running again.
func (a *Agent) ResumesPartial() bool { return a.cfg.PartialRollout == PartialResume }

// ToolSpecs are the specs rendered into the first prompt, in plugin order.
func (a *Agent) ToolSpecs() []json.RawMessage { return a.toolSpecs }

// specName reads the function name of an OpenAI-style spec ({"type":"function","function":{"name":...}}) or a
// bare {"name":...}.
func specName(spec json.RawMessage) (string, error) {
	var s struct {
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		return "", fmt.Errorf("tool spec is not a JSON object: %w", err)
	}
	if s.Function != nil && s.Function.Name != "" {
		return s.Function.Name, nil
	}
	if s.Name != "" {
		return s.Name, nil
	}
	return "", fmt.Errorf("tool spec without a name: %s", spec)
}

// Episode is one sample to run.
type Episode struct {
	// ID is the trajectory id, unique per sample (item id + "#" + sample index).
	ID          string
	ItemID      string
	GroupID     string
	SampleIndex int
	Messages    []tito.Message
	Label       json.RawMessage
	Metadata    json.RawMessage
	// Sampling overrides the agent's sampling params for this request.
	Sampling *Sampling
	// firstPrompt, shared by the samples of one item (Item.Episodes), renders and tokenizes their identical
	// first prompt once.
	firstPrompt *sharedPrompt
}

// sharedPrompt is the first prompt of an item's samples: same messages, same agent, so the same ids.
type sharedPrompt struct {
	once sync.Once
	ids  []int32
	err  error
}

// episode is the state of one running episode.
type episode struct {
	a         *Agent
	ep        Episode
	traj      *tito.Trajectory
	msgs      []tito.Message
	sampling  Sampling
	counts    abi.Counts
	state     map[int]abi.RawJSON // per hook: the state it returned last
	parseErrs map[string]int
	toolCalls map[string]int // outcome -> count
	outbound  outboundLog    // granted plugins' HTTP requests
	warnings  []string
	final     string
	// lastStop is the stop token that ended the last response (-1: none)
	lastStop int32
	// since is when the runtime's own work for the next call began (the last response, or the episode's
	// start); waited is the time since then spent in tools or paused (not runtime overhead).
	since  time.Time
	waited time.Duration
}

// Run runs one episode to its end and returns its trajectory, whatever happened: the status says how it ended.
// Plugin and server failures become statuses, never panics; a bug in the loop itself is recovered as failed.
func (a *Agent) Run(ctx context.Context, ep Episode) (traj *tito.Trajectory) {
	e := &episode{a: a, ep: ep, traj: tito.NewTrajectory(), state: map[int]abi.RawJSON{}, lastStop: -1,
		parseErrs: map[string]int{}, toolCalls: map[string]int{}, since: time.Now()}
	e.sampling = a.cfg.Sampling
	if ep.Sampling != nil {
		e.sampling = e.sampling.Merge(*ep.Sampling)
	}
	if a.cfg.EpisodeTimeout.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.cfg.EpisodeTimeout.Duration)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			e.finish(StatusFailed, ReasonRuntimeError, fmt.Sprintf("runtime bug: %v", r))
		}
		e.end(ctx)
		traj = e.traj
	}()
	e.loop(ctx)
	return e.traj
}

func (e *episode) finish(status, reason, errText string) {
	if e.traj.Status != "" {
		return
	}
	e.traj.Status, e.traj.StatusReason, e.traj.Error = status, reason, errText
}

// renderOptions are the same for the first prompt and every delta: a delta is the tail of the render of the whole
// conversation, and transformers renders that with the tools (Hermes-3's template even iterates them
// unconditionally; Mistral's writes them before the last user message).
func (e *episode) renderOptions() tito.RenderOptions {
	return tito.RenderOptions{AddGenerationPrompt: true, Kwargs: e.a.cfg.ChatTemplateKwargs, Tools: e.a.toolSpecs}
}

func (e *episode) loop(ctx context.Context) {
	a := e.a
	if a.cfg.SystemPrompt != "" && (len(e.ep.Messages) == 0 || e.ep.Messages[0].Role != "system") {
		e.msgs = append(e.msgs, tito.Message{Role: "system", Content: a.cfg.SystemPrompt})
	}
	e.msgs = append(e.msgs, e.ep.Messages...)
	e.countMessages()
	if _, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventBeforeInvocation, Messages: hookMessages(e.msgs)}); stop {
		return
	}
	// A prompt far past the window is refused before it costs memory: first by its bytes (before rendering and
	// tokenizing), then by its tokens (before the trajectory keeps them).
	if n, limit := messageBytes(e.msgs), int64(a.d.ContextWindow)*maxPromptBytesPerToken; n > limit {
		e.finish(StatusTruncated, ReasonContextWindow, fmt.Sprintf("the messages are %d bytes, more than %d bytes per token of the %d-token context window: refused before tokenizing", n, maxPromptBytesPerToken, a.d.ContextWindow))
		e.msgs = []tito.Message{} // nor kept in the trajectory: the error says what was refused
		return
	}
	ids, err := e.firstPrompt()
	if err != nil {
		e.finish(StatusFailed, ReasonTemplate, fmt.Sprintf("rendering the first prompt: %v", err))
		return
	}
	if len(ids) > a.d.ContextWindow {
		e.finish(StatusTruncated, ReasonContextWindow, fmt.Sprintf("the first prompt is %d tokens, past the %d-token context window: not kept", len(ids), a.d.ContextWindow))
		e.msgs = []tito.Message{}
		return
	}
	if !e.appendPrompt(ids) {
		return
	}
	if !e.beginEnvs(ctx) {
		return
	}
	for {
		ids, ok := e.generate(ctx)
		if !ok {
			return
		}
		calls, ok := e.handleResponse(ctx, ids)
		if !ok {
			return
		}
		if !e.runTools(ctx, calls) {
			return
		}
		if !e.appendResults(ctx, calls) {
			return
		}
	}
}

// beginEnvs creates the episode's remote environments, in tool order, with the sample's metadata. It runs once
// the first prompt is in the trajectory (a prompt refused for its size costs no environment); a failure aborts the
// episode, and end closes whatever was created.
func (e *episode) beginEnvs(ctx context.Context) bool {
	for _, tb := range e.a.d.Tools {
		env, ok := tb.Tool.(EpisodeEnv)
		if !ok {
			continue
		}
		t0 := time.Now()
		err := env.BeginEpisode(ctx, e.ep.ID, e.ep.Metadata)
		d := time.Since(t0)
		e.waited += d // waiting for a slot or the service is not runtime overhead
		// How long episodes wait for their environments (a slot, the pacing, retries, the service's start).
		e.traj.SetMetric("env.begin_ms", e.traj.Metrics["env.begin_ms"]+millis(d))
		if err == nil {
			continue
		}
		if !errors.As(err, new(envFailure)) && (ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
			e.generateFailed(ctx, err) // the episode's own deadline or cancellation, whatever it was waiting for
		} else {
			e.finish(StatusAborted, ReasonEnvironment, err.Error())
		}
		return false
	}
	return true
}

// maxPromptBytesPerToken bounds the first prompt's messages before tokenizing: no tokenizer averages anywhere
// near 64 bytes per token, so a conversation over window*64 bytes cannot fit and is refused unread.
const maxPromptBytesPerToken = 64

// messageBytes is the size of the messages' text, roughly what rendering them costs.
func messageBytes(msgs []tito.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(m.Content) + len(m.ReasoningContent))
		for _, p := range m.Parts {
			n += int64(len(p))
		}
		for _, c := range m.ToolCalls {
			n += int64(len(c.Function.Arguments))
		}
		for _, f := range m.Extra {
			n += int64(len(f.Value))
		}
	}
	return n
}

// firstPrompt renders the whole conversation (system, tool specs, history, user) and tokenizes it, once per
// item when its samples share it (the ids are only read afterwards: AppendPrompt copies them).
func (e *episode) firstPrompt() ([]int32, error) {
	render := func() ([]int32, error) {
		text, err := e.a.d.Template.Render(e.msgs, e.renderOptions())
		if err != nil {
			return nil, err
		}
		return e.a.d.Tokenizer.Encode(text, false), nil
	}
	sp := e.ep.firstPrompt
	if sp == nil {
		return render()
	}
	sp.once.Do(func() { sp.ids, sp.err = render() })
	return sp.ids, sp.err
}

func (e *episode) appendPrompt(ids []int32) bool {
	if err := e.traj.AppendPrompt(ids); err != nil {
		e.finish(StatusFailed, ReasonInvariant, err.Error())
		return false
	}
	e.counts.PromptTokens += len(ids)
	return true
}

// maxResumes bounds how often one turn is continued after an abort, so that a server that aborts every
// request cannot hold an episode forever.
const maxResumes = 16

// generate makes one model call: clamp to the context window, call SGLang, append the response verbatim. A
// response aborted by a pause or weight update is, under partial_rollout = "resume", kept verbatim and
// continued on the new weights (the same turn, input = trajectory + partial output) until it finishes. It
// returns the turn's output ids, or false when the episode ended.
func (e *episode) generate(ctx context.Context) ([]int32, bool) {
	a := e.a
	if _, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventBeforeModelCall}); stop {
		return nil, false
	}
	var (
		turnIDs []int32 // the turn's output so far (partial outputs of aborted calls, then the last)
		partial bool    // the trajectory ends in an aborted response segment of this turn
		cut     bool    // the last call's max_new_tokens was cut to the context window's room
		fr      *sglang.FinishReason
	)
	for resumes := 0; ; resumes++ {
		ids, start := e.traj.NextRequest()
		room := a.d.ContextWindow - len(ids)
		if room <= 0 {
			e.finish(StatusTruncated, ReasonContextWindow, "")
			return nil, false
		}
		budget := e.sampling.MaxNewTokens - len(turnIDs)
		maxNew := min(budget, room)
		cut = maxNew < budget
		tw := time.Now()
		if err := a.d.Gate.Wait(ctx); err != nil {
			e.generateFailed(ctx, err)
			return nil, false
		}
		e.waited += time.Since(tw)
		rid := fmt.Sprintf("%s.%d", e.ep.ID, e.counts.ModelCalls)
		if resumes > 0 {
			rid = fmt.Sprintf("%s.r%d", rid, resumes)
		}
		req := &sglang.GenerateRequest{
			InputIDs:        ids,
			SamplingParams:  e.samplingParams(maxNew),
			ReturnLogprob:   true,
			LogprobStartLen: start,
			RID:             rid,
		}
		t0 := time.Now()
		own := t0.Sub(e.since) - e.waited
		resp, err := a.d.Generator.Generate(ctx, e.ep.ID, req)
		done := time.Now()
		e.since, e.waited = done, 0
		var ae *sglang.AbortError
		if a.cfg.PartialRollout == PartialResume && errors.As(err, &ae) && ae.Response != nil && ctx.Err() == nil {
			// *sglang.Client reports an abort as an error holding the partial response: resume from it
			resp, err = ae.Response, nil
			if resp.MetaInfo.FinishReason == nil {
				resp.MetaInfo.FinishReason = &sglang.FinishReason{Type: sglang.FinishAbort, Message: ae.Message, StatusCode: ae.StatusCode}
			}
		}
		if err != nil {
			if ab, ok := a.d.Generator.(Aborter); ok && ctx.Err() != nil {
				// Cancelled mid-generation: make sure the server stops working on it too.
				actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				ab.AbortRequest(actx, req.RID)
				cancel()
			}
			e.generateFailed(ctx, err)
			return nil, false
		}
		fr = resp.MetaInfo.FinishReason
		aborted := fr != nil && fr.Type == sglang.FinishAbort
		if aborted && !e.resumable(ctx, fr, resumes) {
			e.finish(StatusAborted, ReasonAbortedByRequest, "sglang aborted the request: "+fr.Message)
			return nil, false
		}
		if aborted && len(resp.OutputIDs) == 0 {
			continue // nothing generated yet: simply ask again once the pause is over
		}
		out := tito.Response{
			InputIDs:        ids,
			LogprobStartLen: start,
			InputLogprobs:   inputLogprobs(resp.MetaInfo.InputTokenLogprobs),
			OutputIDs:       resp.OutputIDs,
			OutputLogprobs:  outputLogprobs(resp.MetaInfo.OutputTokenLogprobs),
			Turn: tito.TurnInfo{
				Server:         resp.Server,
				RID:            resp.MetaInfo.ID,
				WeightVersion:  resp.MetaInfo.WeightVersion,
				WeightVersions: weightSpans(resp.MetaInfo.WeightVersions),
				CachedTokens:   resp.MetaInfo.CachedTokens,
				PromptTokens:   resp.MetaInfo.PromptTokens,
				FinishReason:   finishString(fr),
				LatencyMS:      millis(done.Sub(t0)),
				OverheadMS:     millis(own + resp.ClientTime),
			},
		}
		add := e.traj.AppendResponse
		if partial {
			add = e.traj.AppendContinuation
		}
		if err := add(out); err != nil {
			e.finish(StatusFailed, ReasonInvariant, err.Error())
			return nil, false
		}
		turnIDs = append(turnIDs, resp.OutputIDs...)
		e.counts.ResponseTokens += len(resp.OutputIDs)
		if !aborted {
			break
		}
		partial = true
		if len(turnIDs) >= e.sampling.MaxNewTokens {
			// the partial output already used the turn's budget: it ends as a length finish would
			fr, cut = &sglang.FinishReason{Type: sglang.FinishLength}, false
			break
		}
	}
	e.lastStop = -1
	if n := len(turnIDs); n > 0 && a.stop[turnIDs[n-1]] {
		e.lastStop = turnIDs[n-1]
	}
	e.counts.ModelCalls++
	if fr != nil && fr.Type == sglang.FinishLength {
		e.final = e.decodeResponse(turnIDs)
		e.dispatch(ctx, &abi.Event{Event: abi.EventAfterModelCall, Response: &abi.ModelResponse{Text: e.final, FinishReason: fr.Type}})
		e.addMessage(ctx, tito.Message{Role: "assistant", Content: e.final})
		if cut {
			e.finish(StatusTruncated, ReasonContextWindow, "")
		} else {
			e.finish(StatusTruncated, ReasonLength, "")
		}
		return nil, false
	}
	return turnIDs, true
}

// resumable says whether an aborted call is continued: partial_rollout = "resume", the episode itself was not
// cancelled, the abort is not a scheduler-side error (a 4xx, such as an over-long input), and the turn has
// not been resumed maxResumes times already.
func (e *episode) resumable(ctx context.Context, fr *sglang.FinishReason, resumes int) bool {
	return e.a.cfg.PartialRollout == PartialResume && ctx.Err() == nil &&
		(fr.StatusCode == 0 || fr.StatusCode >= 500) && resumes < maxResumes
}

func (e *episode) generateFailed(ctx context.Context, err error) {
	switch {
	case errors.Is(err, sglang.ErrContextLength):
		e.finish(StatusTruncated, ReasonContextWindow, err.Error())
	case errors.Is(err, sglang.ErrAborted):
		e.finish(StatusAborted, ReasonAbortedByRequest, err.Error())
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.finish(StatusAborted, ReasonDeadline, err.Error())
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		e.finish(StatusAborted, ReasonAbortedByRequest, err.Error())
	default:
		e.finish(StatusAborted, ReasonServerUnavailable, err.Error())
	}
}

func (e *episode) samplingParams(maxNew int) sglang.SamplingParams {
	return e.sampling.params(maxNew, e.a.d.ExtraStopIDs)
}

// decodeResponse is the text the parser sees: the generated ids decoded with special tokens kept, minus the
// final end-of-turn token (the turn's terminator, not content).
func (e *episode) decodeResponse(ids []int32) string {
	if n := len(ids); n > 0 && e.a.stop[ids[n-1]] {
		ids = ids[:n-1]
	}
	return e.a.d.Tokenizer.Decode(ids, false)
}

// call is one tool call of a turn: a parsed call, or a parse error that answers as an error result.
type call struct {
	tc       abi.ToolCall
	parseErr *abi.ParseError
	result   abi.ToolResult
	outcome  string // ok, error, timeout, cancelled, unknown_tool, parse_error
}

// handleResponse parses the model's response, records its message and returns the turn's calls (parse errors
// included), or false when the episode ended.
func (e *episode) handleResponse(ctx context.Context, ids []int32) ([]*call, bool) {
	text := e.decodeResponse(ids)
	e.final = text
	parsed, err := e.a.d.Parser.Parse(ctx, text)
	if err != nil {
		e.finish(StatusFailed, ReasonParser, fmt.Sprintf("tool-call parser failed: %v", err))
		return nil, false
	}
	var calls []*call
	msg := tito.Message{Role: "assistant", Content: text}
	prior := 0 // the calls of the conversation so far (Kimi K2's ids count them)
	for _, m := range e.msgs {
		prior += len(m.ToolCalls)
	}
	for i, pc := range parsed.Calls {
		idx := i
		c := &call{tc: abi.ToolCall{ID: pc.ID, Name: pc.Name, Arguments: pc.Arguments, Index: &idx}}
		if !e.a.d.CallIDs.Valid(c.tc.ID) {
			c.tc.ID = e.a.d.CallIDs.ID(fmt.Sprintf("%s/%d", e.ep.ID, e.counts.ModelCalls), i, pc.Name, prior)
		}
		calls = append(calls, c)
		msg.ToolCalls = append(msg.ToolCalls, tito.ToolCall{ID: c.tc.ID, Type: "function",
			Function: tito.FunctionCall{Name: pc.Name, Arguments: json.RawMessage(pc.Arguments)}})
	}
	for i := range parsed.Errors {
		pe := parsed.Errors[i]
		e.parseErrs[pe.Reason]++
		calls = append(calls, &call{tc: abi.ToolCall{ID: fmt.Sprintf("parse_error_%d", i)}, parseErr: &pe})
	}
	if len(calls) > 0 {
		e.counts.ToolIters++
		e.counts.ToolCalls += len(calls)
	}
	resp := &abi.ModelResponse{Text: text, FinishReason: sglang.FinishStop, ToolCalls: len(parsed.Calls), ParseErrors: len(parsed.Errors)}
	if _, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventAfterModelCall, Response: resp}); stop {
		e.addMessageQuiet(msg)
		return nil, false
	}
	if e.addMessage(ctx, msg) {
		return nil, false
	}
	if len(calls) == 0 {
		e.finish(StatusCompleted, "", "")
		return nil, false
	}
	if len(parsed.Errors) > 0 && e.a.cfg.ParseErrors == "stop" {
		e.finish(StatusCompleted, ReasonParseError, "")
		return nil, false
	}
	return calls, true
}

// runTools runs one turn's calls concurrently, each under its timeout; results keep the call order.
func (e *episode) runTools(ctx context.Context, calls []*call) bool {
	var wg sync.WaitGroup
	var jobs []func()
	var (
		envMu  sync.Mutex
		envErr error // the first environment failure of the turn: it ends the episode
	)
	for _, c := range calls {
		if c.parseErr != nil {
			c.result = errorResult(fmt.Sprintf("Error: the tool call could not be parsed (%s): %s", c.parseErr.Reason, c.parseErr.Raw))
			c.outcome = "parse_error"
			continue
		}
		ev := &abi.Event{Event: abi.EventBeforeToolCall, ToolCall: &c.tc}
		r, stop := e.dispatch(ctx, ev)
		if stop {
			return false
		}
		if r.CancelTool != nil {
			c.result, c.outcome = errorResult(*r.CancelTool), "cancelled"
			e.counts.CancelledToolCalls++
			continue
		}
		if len(r.ToolArguments) > 0 {
			c.tc.Arguments = r.ToolArguments
		}
		tb := e.a.toolByFn[c.tc.Name]
		if tb == nil {
			c.result, c.outcome = errorResult(fmt.Sprintf("Error: unknown tool %q", c.tc.Name)), "unknown_tool"
			continue
		}
		timeout := e.a.cfg.ToolTimeout.Duration
		if tb.Timeout.Duration > 0 {
			timeout = tb.Timeout.Duration
		}
		jobs = append(jobs, func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			cctx = withOutboundLog(cctx, &e.outbound, c.tc.Name)
			var res abi.ToolResult
			var err error
			if et, ok := tb.Tool.(EpisodeTool); ok {
				res, err = et.CallEpisode(cctx, e.ep.ID, c.tc.Name, json.RawMessage(c.tc.Arguments))
			} else {
				res, err = tb.Tool.Call(cctx, c.tc.Name, json.RawMessage(c.tc.Arguments))
			}
			switch {
			case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
				c.result, c.outcome = errorResult(fmt.Sprintf("Error: tool %s timed out after %s", c.tc.Name, timeout)), "timeout"
			case err != nil && errors.As(err, new(envFailure)):
				c.result, c.outcome = errorResult(fmt.Sprintf("Error: tool %s failed: %v", c.tc.Name, err)), "env_error"
				envMu.Lock()
				if envErr == nil {
					envErr = err
				}
				envMu.Unlock()
			case err != nil:
				c.result, c.outcome = errorResult(fmt.Sprintf("Error: tool %s failed: %v", c.tc.Name, err)), "error"
			case res.IsError:
				// A tool's own error reads like the runtime's: one "Error: " prefix the model learns to expect.
				if text := resultText(res); !strings.HasPrefix(text, "Error") {
					res = errorResult("Error: " + text)
				}
				c.result, c.outcome = res, "error"
			default:
				c.result, c.outcome = res, "ok"
			}
		})
	}
	t0 := time.Now()
	// The last call runs on the episode's goroutine: a turn with one call (the common case) starts no goroutine
	// and pays no thread wake-up.
	if n := len(jobs); n > 0 {
		for _, job := range jobs[:n-1] {
			wg.Go(job)
		}
		jobs[n-1]()
	}
	wg.Wait()
	e.waited += time.Since(t0)
	if ctx.Err() != nil {
		e.generateFailed(ctx, ctx.Err())
		return false
	}
	if envErr != nil {
		// The environment's state is unknown after a failed call: the episode cannot go on, and its results are
		// not appended (the trajectory ends on the response that made the calls).
		for _, c := range calls {
			e.toolCalls[c.outcome]++
		}
		e.finish(StatusAborted, ReasonEnvironment, envErr.Error())
		return false
	}
	for _, c := range calls {
		e.capResult(c)
		e.toolCalls[c.outcome]++
		if c.parseErr != nil || c.outcome == "cancelled" {
			continue
		}
		res := c.result
		r, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventAfterToolCall, ToolCall: &c.tc, ToolResult: &res})
		if stop {
			return false
		}
		if r.ToolResult != nil {
			c.result = *r.ToolResult
			e.capResult(c)
		}
	}
	return true
}

// capResult replaces a result past max_tool_result_bytes with an error result saying so: a huge result would
// otherwise be copied through templating and tokenizing, and would fill the context window anyway.
func (e *episode) capResult(c *call) {
	limit := e.a.cfg.MaxToolResultBytes
	if limit <= 0 {
		limit = DefaultMaxToolResultBytes
	}
	if n := len(resultText(c.result)); n > limit {
		c.result = errorResult(fmt.Sprintf("Error: tool %s returned %d bytes, more than max_tool_result_bytes (%d)", c.tc.Name, n, limit))
		c.outcome = "error"
	}
}

func errorResult(msg string) abi.ToolResult { return abi.ToolResult{Text: &msg, IsError: true} }

// resultText is what the model reads: the text, or the JSON value as JSON.
func resultText(r abi.ToolResult) string {
	if r.Text != nil {
		return *r.Text
	}
	if len(r.JSON) > 0 {
		return string(r.JSON)
	}
	return ""
}

// appendResults adds one tool message per call (message_added may stop the loop here, before any result is
// tokenized, so the trajectory ends on the model's tool-calling response) and appends their template delta.
func (e *episode) appendResults(ctx context.Context, calls []*call) bool {
	msgs := make([]tito.Message, 0, len(calls))
	for _, c := range calls {
		msgs = append(msgs, tito.Message{Role: "tool", Content: resultText(c.result), ToolCallID: c.tc.ID, Name: c.tc.Name})
	}
	for _, m := range msgs {
		if e.addMessage(ctx, m) {
			return false
		}
	}
	text, err := e.a.d.Template.RenderDelta(e.msgs[:len(e.msgs)-len(msgs)], msgs, e.renderOptions())
	if err != nil {
		e.finish(StatusFailed, ReasonTemplate, fmt.Sprintf("rendering tool results: %v", err))
		return false
	}
	text = e.trimGeneratedStop(text)
	return e.appendPrompt(e.a.d.Tokenizer.Encode(text, false))
}

// nextMessageStarter is a template whose model stops on the token that begins the next message (GLM-4.6/4.7
// stop on <|observation|> or <|user|>): *tito.ChatTemplate.
type nextMessageStarter interface {
	StartsNextMessage(stop string) bool
}

// trimGeneratedStop drops from a delta the stop token that the model generated when the template writes it as
// the start of the next message: it is in the trajectory already, as the response's last token.
func (e *episode) trimGeneratedStop(delta string) string {
	ns, ok := e.a.d.Template.(nextMessageStarter)
	if !ok || e.lastStop < 0 {
		return delta
	}
	stop := e.a.d.Tokenizer.Decode([]int32{e.lastStop}, false)
	if ns.StartsNextMessage(stop) {
		return strings.TrimPrefix(delta, stop)
	}
	return delta
}

// addMessage records a message and tells the hooks; it reports whether a hook stopped the episode.
func (e *episode) addMessage(ctx context.Context, m tito.Message) bool {
	e.addMessageQuiet(m)
	hm := hookMessage(m)
	_, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventMessageAdded, Message: &hm})
	return stop
}

func (e *episode) addMessageQuiet(m tito.Message) {
	e.msgs = append(e.msgs, m)
	e.countMessages()
}

// countMessages counts the conversation without its system prompt (plugins/ABI.md, Counts).
func (e *episode) countMessages() {
	n := 0
	for _, m := range e.msgs {
		if m.Role != "system" {
			n++
		}
	}
	e.counts.Messages = n
}

// dispatch sends ev to every subscribed hook, in registration order, and merges their responses. The first
// stop wins and ends the episode (truncated, with its reason); a hook failure aborts the episode.
func (e *episode) dispatch(ctx context.Context, ev *abi.Event) (abi.HookResponse, bool) {
	var merged abi.HookResponse
	ev.EpisodeID, ev.Turn, ev.Counts = e.ep.ID, e.counts.ModelCalls, e.counts
	for i, hb := range e.a.d.Hooks {
		if !hb.Hook.Subscribed(ev.Event) {
			continue
		}
		ev.State = e.state[i]
		r, err := hb.Hook.Handle(ctx, ev)
		if err != nil {
			e.finish(StatusAborted, ReasonHookFailure, fmt.Sprintf("hook %s on %s: %v", hb.Plugin, ev.Event, err))
			return merged, true
		}
		if r.State != nil {
			e.state[i] = r.State
		}
		if r.Stop != nil {
			e.finish(StatusTruncated, r.Stop.Reason, r.Stop.Message)
			return r, true
		}
		if merged.CancelTool == nil {
			merged.CancelTool = r.CancelTool
		}
		if merged.ToolArguments == nil {
			merged.ToolArguments = r.ToolArguments
		}
		if merged.ToolResult == nil {
			merged.ToolResult = r.ToolResult
		}
	}
	return merged, false
}

// end runs after the loop, whatever ended it: after_invocation, the reward hook, the drift audit, provenance.
func (e *episode) end(ctx context.Context) {
	t := e.traj
	if t.Status == "" { // the loop returned without deciding: a bug, never silently "completed"
		e.finish(StatusFailed, ReasonRuntimeError, "episode ended without a status")
	}
	if t.Turns() > 0 {
		// Prompt tokens appended after the last response were never sent: the trajectory ends on that response
		// (docs/design.md invariant 1: final trajectory = last input_ids + last output_ids).
		t.DropPending()
	}
	resumed := 0
	for _, sg := range t.Segments {
		if sg.Info != nil {
			resumed += sg.Info.Resumed
		}
	}
	if resumed > 0 {
		t.SetMetric("partial_rollout.resumed_calls", float64(resumed))
	}
	if e.a.cfg.MaskOffPolicy {
		t.SetMetric("partial_rollout.offpolicy_masked_tokens", float64(t.MaskOffPolicy()))
	}
	if err := t.Validate(); err != nil && t.Status != StatusFailed {
		t.Status, t.StatusReason, t.Error = StatusFailed, ReasonInvariant, err.Error()
	}
	bg := context.WithoutCancel(ctx)
	e.endEnvs(bg)
	for _, tb := range e.a.d.Tools {
		if _, ok := tb.Tool.(EpisodeEnv); ok {
			continue // closed by endEnvs
		}
		if et, ok := tb.Tool.(EpisodeTool); ok {
			et.EndEpisode(e.ep.ID)
		}
	}
	msgs, _ := json.Marshal(e.msgs)
	t.Messages = msgs
	for i, hb := range e.a.d.Hooks {
		if hb.Hook.Subscribed(abi.EventAfterInvocation) {
			ev := &abi.Event{Event: abi.EventAfterInvocation, EpisodeID: e.ep.ID, Turn: e.counts.ModelCalls,
				Counts: e.counts, State: e.state[i], Status: t.Status, StopReason: t.StatusReason}
			if _, err := hb.Hook.Handle(bg, ev); err != nil {
				e.warnings = append(e.warnings, fmt.Sprintf("hook %s on after_invocation: %v", hb.Plugin, err))
			}
		}
	}
	// episode_end reaches every subscribed hook, in order, then the reward plugin: each may set the reward (the
	// last to set it wins) and add metrics (ABI.md 5.3).
	episodeEnd := func(hb HookBinding, state abi.RawJSON, what string) {
		ev := &abi.Event{Event: abi.EventEpisodeEnd, EpisodeID: e.ep.ID, Turn: e.counts.ModelCalls, Counts: e.counts,
			State: state, Status: t.Status, StopReason: t.StatusReason, Messages: hookMessages(e.msgs),
			Label: abi.RawJSON(e.ep.Label), Metadata: abi.RawJSON(e.ep.Metadata)}
		r, err := hb.Hook.Handle(bg, ev)
		if err != nil {
			e.warnings = append(e.warnings, fmt.Sprintf("%s %s: %v", what, hb.Plugin, err))
			return
		}
		if r.Reward != nil {
			t.Reward = r.Reward
		}
		for k, v := range r.Metrics {
			t.SetMetric(k, v)
		}
	}
	for i, hb := range e.a.d.Hooks {
		if hb.Hook.Subscribed(abi.EventEpisodeEnd) {
			episodeEnd(hb, e.state[i], "hook "+abi.EventEpisodeEnd)
		}
	}
	if rb := e.a.d.Reward; rb != nil {
		episodeEnd(*rb, nil, "reward")
	}
	for reason, n := range e.parseErrs {
		t.SetMetric("parse_errors."+reason, float64(n))
	}
	for outcome, n := range e.toolCalls {
		t.SetMetric("tool_calls."+outcome, float64(n))
	}
	e.outbound.finish(t)
	t.SetMetric("turns", float64(e.counts.ModelCalls))
	sort.Strings(e.warnings)
	t.Warnings = append(t.Warnings, e.warnings...)
	t.ID, t.ItemID, t.GroupID, t.SampleIndex = e.ep.ID, e.ep.ItemID, e.ep.GroupID, e.ep.SampleIndex
	t.Label, t.Metadata = e.ep.Label, e.ep.Metadata
	t.Audit(e.a.d.Tokenizer)
	for k, v := range e.a.d.Provenance {
		t.SetProvenance(k, v)
	}
	t.SetProvenance("sampling_params", e.sampling)
}

// endEnvs asks the episode's environments for their reward (a completed or truncated episode only: an aborted
// one's environment state means nothing) and closes them, every one, whatever ended the episode. The reward
// hooks run afterwards, so a configured reward plugin (or an episode_end hook that sets one) overrides the
// environment's. An environment that fails to give its reward aborts the episode; one that fails to close is a
// warning (its slot is freed anyway).
func (e *episode) endEnvs(ctx context.Context) {
	t := e.traj
	for _, tb := range e.a.d.Tools {
		env, ok := tb.Tool.(EpisodeEnv)
		if !ok {
			continue
		}
		if t.Status == StatusCompleted || t.Status == StatusTruncated {
			r, err := env.EpisodeReward(ctx, e.ep.ID)
			switch {
			case err != nil:
				t.Status, t.StatusReason, t.Error = StatusAborted, ReasonEnvironment, err.Error()
				t.Reward = nil
			case r != nil:
				v := *r
				t.Reward = &v
			}
		}
		if err := env.CloseEpisode(ctx, e.ep.ID); err != nil {
			e.warnings = append(e.warnings, err.Error())
		}
	}
}

func hookMessage(m tito.Message) abi.Message {
	hm := abi.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	for _, tc := range m.ToolCalls {
		hm.ToolCalls = append(hm.ToolCalls, abi.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: abi.RawJSON(tc.Function.Arguments)})
	}
	return hm
}

func hookMessages(ms []tito.Message) []abi.Message {
	out := make([]abi.Message, len(ms))
	for i, m := range ms {
		out[i] = hookMessage(m)
	}
	return out
}

func inputLogprobs(es []sglang.LogprobEntry) []*float64 {
	out := make([]*float64, len(es))
	for i := range es {
		if !es[i].Null {
			v := es[i].Logprob
			out[i] = &v
		}
	}
	return out
}

// outputLogprobs takes meta_info.output_token_logprobs[i][0] bit for bit; a null becomes NaN, which the
// trajectory refuses (an output token without a logprob is a protocol violation, never silently 0).
func outputLogprobs(es []sglang.LogprobEntry) []float64 {
	out := make([]float64, len(es))
	for i := range es {
		if es[i].Null {
			out[i] = math.NaN()
		} else {
			out[i] = es[i].Logprob
		}
	}
	return out
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func finishString(fr *sglang.FinishReason) string {
	if fr == nil {
		return ""
	}
	return fr.Type
}

// weightSpans copies SGLang's per-version output spans into the trajectory's own type.
func weightSpans(in []sglang.WeightSpan) []tito.WeightSpan {
	if len(in) == 0 {
		return nil
	}
	out := make([]tito.WeightSpan, len(in))
	for i, w := range in {
		out[i] = tito.WeightSpan{Version: w.Version, Start: w.Start, End: w.End}
	}
	return out
}
