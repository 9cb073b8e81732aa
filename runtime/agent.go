package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/turn"
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
	// ReasonResponseBudget: the episode's response (everything after the first prompt) reached its
	// max_response_tokens budget. The trajectory ends on the last model response: tool results that would have
	// overflowed the budget were never sent and are not kept.
	ReasonResponseBudget = "response_budget"
	ReasonMaxToolIters   = abi.StopMaxToolIters
	ReasonMaxToolCalls   = abi.StopMaxToolCalls
	ReasonMaxMessages    = abi.StopMaxMessages
	ReasonParseError     = "parse_error" // completed under parse_errors = "stop"

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

// Parse-error policies (Settings.ParseErrors).
const (
	ParseFeedback = "feedback" // an error result carrying the raw text goes back to the model; the episode goes on
	ParseStop     = "stop"     // the episode ends as completed, with the parse errors counted
)

// The partial_rollout policies (Settings.PartialRollout).
const (
	PartialDrop   = "drop"
	PartialResume = "resume"
)

// DefaultMaxToolResultBytes is the default of max_tool_result_bytes: 64 KiB, some 16K tokens.
const DefaultMaxToolResultBytes = 64 << 10

// Settings are what the loop needs of an agent's configuration: names, limits, policies and sampling. (The
// TOML shape, with its plugin declarations, is runtime/config's Agent; runtime/system builds Settings from it.)
type Settings struct {
	Name         string
	SystemPrompt string
	// Sampling are the agent's sampling params; Sampling.MaxNewTokens is each turn's budget.
	Sampling turn.Sampling
	// ToolTimeout is the default per-tool-call wall-clock limit.
	ToolTimeout time.Duration
	// MaxToolResultBytes caps one tool result (0: DefaultMaxToolResultBytes); a larger one is replaced by an error
	// result saying so, before it is templated or tokenized.
	MaxToolResultBytes int
	// ParseErrors is the parse-error policy: ParseFeedback or ParseStop.
	ParseErrors string
	// EpisodeTimeout bounds one episode (0: none); past it the episode is aborted (reason deadline).
	EpisodeTimeout time.Duration
	// MaxResponseTokens is the episode-wide response budget (0: none): the tokens after the first prompt, as
	// slime's and verl's response length counts them (Episode.MaxResponseTokens overrides it per sample).
	MaxResponseTokens int
	// PartialRollout is what happens to a turn that SGLang aborts mid-generation: PartialDrop ends the episode as
	// aborted, PartialResume continues the same turn on the new weights.
	PartialRollout string
	// MaskOffPolicy sets loss_mask 0 on response tokens of an older weight version than the trajectory's last.
	MaskOffPolicy bool
	// Context is what the loop does when the context passes a threshold (ContextPolicy; the zero value: nothing).
	Context ContextPolicy
	// History is HistoryAsGenerated ("" too: one chain, later turns append deltas) or HistoryAsDeployed.
	History string
}

// The history modes (Settings.History).
const (
	// HistoryAsGenerated: an episode is one chain; each later turn appends the template's delta after the tokens
	// the model generated (history is never re-rendered).
	HistoryAsGenerated = "as-generated"
	// HistoryAsDeployed: each turn's prompt is the chat template's full render of the conversation so far (what the
	// model sees in deployment, where the template may drop earlier reasoning or rewrite past turns), and every turn
	// after the first begins a new sample of the episode.
	HistoryAsDeployed = "as-deployed"
)

// The context policies (ContextPolicy.Policy).
const (
	ContextNone     = "none"
	ContextKeepLast = "keep_last"
	// ContextSummarize: as keep_last, with a summary of the whole conversation (asked of the same model, its call a
	// sample of its own) as a user message between the first messages and the kept turns.
	ContextSummarize = "summarize"
)

// DefaultSummaryPrompt is the summarize policy's request when the agent sets none.
const DefaultSummaryPrompt = "Summarize the conversation so far for yourself: the task, what you have done, what you found, and what is left to do. Do not call tools; answer with the summary only."

// SummaryPrefix begins the user message that carries a summary into the compacted conversation.
const SummaryPrefix = "Summary of the earlier conversation:\n\n"

// ContextPolicy is an agent's [agent.context]: with Policy ContextKeepLast, when the current sample's tokens pass
// MaxTokens before a model call, the conversation is replaced by the episode's first messages (the system prompt and
// the item's messages) and its last KeepTurns turns (an assistant message and the messages after it, up to the next
// assistant message), and a new sample of the episode begins whose prompt is the chat template's full render of it
// (tito.Trajectory.NewSample).
type ContextPolicy struct {
	Policy    string
	MaxTokens int
	KeepTurns int
	// SummaryPrompt is the summarize policy's request ("": DefaultSummaryPrompt).
	SummaryPrompt string
	// MaskSummary gives the summarize policy's summary call loss mask 0 (its sample is marked masked; logprobs are
	// kept): the summary is not trained on. False (the default): it trains as any response.
	MaskSummary bool
}

// Deps are the built components an Agent runs with; runtime/system constructs them.
type Deps struct {
	// Model serves the model calls (generator, tokenizer, template, parser, stops, context window, the pause gate).
	Model  *turn.Model
	Tools  []ToolBinding
	Hooks  []HookBinding
	Reward *HookBinding
	// Provenance is copied into every trajectory (tokenizer/template sha256, plugin sha256s, ...).
	Provenance map[string]any
	Logger     *slog.Logger
	// Owned are closed with the agent: the plugin modules loaded for it (their instances would otherwise stay in
	// the host until it closes).
	Owned []interface{ Close(context.Context) error }
}

// Agent runs episodes of one configured agent. It is safe for concurrent use: each Run is independent.
type Agent struct {
	cfg       Settings
	d         Deps
	m         *turn.Model
	toolByFn  map[string]*ToolBinding
	toolSpecs []json.RawMessage
	log       *slog.Logger

	closeOnce sync.Once
	closeErr  error
}

// NewAgent checks the dependencies and returns an Agent.
func NewAgent(cfg Settings, d Deps) (*Agent, error) {
	if d.Model == nil {
		return nil, errors.New("runtime: agent needs a model")
	}
	if err := d.Model.Check(); err != nil {
		return nil, fmt.Errorf("runtime: agent %q: %w", cfg.Name, err)
	}
	if cfg.Sampling.MaxNewTokens <= 0 {
		return nil, fmt.Errorf("runtime: agent %q: sampling.max_new_tokens must be > 0", cfg.Name)
	}
	if c := cfg.Context; c.MaskSummary && c.Policy != ContextSummarize {
		return nil, fmt.Errorf("runtime: agent %q: context mask_summary needs policy %q", cfg.Name, ContextSummarize)
	}
	switch c := cfg.Context; c.Policy {
	case "", ContextNone:
	case ContextSummarize:
		if c.MaxTokens <= 0 || c.KeepTurns < 0 {
			return nil, fmt.Errorf("runtime: agent %q: context policy %q needs max_tokens > 0 and keep_turns >= 0", cfg.Name, c.Policy)
		}
		if c.MaxTokens+cfg.Sampling.MaxNewTokens > d.Model.ContextWindow {
			return nil, fmt.Errorf("runtime: agent %q: context.max_tokens %d + sampling.max_new_tokens %d is past the %d-token context window: a turn at the threshold would have no room for its reply",
				cfg.Name, c.MaxTokens, cfg.Sampling.MaxNewTokens, d.Model.ContextWindow)
		}
	case ContextKeepLast:
		if c.MaxTokens <= 0 || c.KeepTurns < 1 {
			return nil, fmt.Errorf("runtime: agent %q: context policy %q needs max_tokens > 0 and keep_turns >= 1", cfg.Name, c.Policy)
		}
		if c.MaxTokens+cfg.Sampling.MaxNewTokens > d.Model.ContextWindow {
			return nil, fmt.Errorf("runtime: agent %q: context.max_tokens %d + sampling.max_new_tokens %d is past the %d-token context window: a turn at the threshold would have no room for its reply",
				cfg.Name, c.MaxTokens, cfg.Sampling.MaxNewTokens, d.Model.ContextWindow)
		}
	default:
		return nil, fmt.Errorf("runtime: agent %q: %q is not a context policy", cfg.Name, c.Policy)
	}
	switch cfg.History {
	case "", HistoryAsGenerated:
	case HistoryAsDeployed:
	default:
		return nil, fmt.Errorf("runtime: agent %q: %q is not a history mode (use %q or %q)", cfg.Name, cfg.History, HistoryAsGenerated, HistoryAsDeployed)
	}
	if err := checkSubAgents(cfg.Name, d.Tools); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, d: d, m: d.Model, toolByFn: map[string]*ToolBinding{}, log: d.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	for i := range d.Tools {
		tb := &d.Tools[i]
		for _, spec := range tb.Specs {
			name, err := turn.ToolName(spec)
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

// Model is the agent's model (what the front door serves it with).
func (a *Agent) Model() *turn.Model { return a.m }

// Sampling are the agent's sampling params (the front door's defaults too).
func (a *Agent) Sampling() turn.Sampling { return a.cfg.Sampling }

// HasTools reports whether the agent has tools.
func (a *Agent) HasTools() bool { return len(a.d.Tools) > 0 }

// Provenance is what every trajectory of the agent records of what made it.
func (a *Agent) Provenance() map[string]any { return a.d.Provenance }

// HasReward reports whether the agent has a reward plugin.
func (a *Agent) HasReward() bool { return a.d.Reward != nil }

// Reward scores a finished conversation with the agent's reward plugin (its episode_end hook), as an episode's
// end does: its messages, status, label and metadata. Without a reward plugin it gives none.
func (a *Agent) Reward(ctx context.Context, msgs []tito.Message, status, reason string, label, metadata json.RawMessage) (*float64, map[string]float64, error) {
	rb := a.d.Reward
	if rb == nil {
		return nil, nil, nil
	}
	ev := &abi.Event{Event: abi.EventEpisodeEnd, Status: status, StopReason: reason, Messages: hookMessages(msgs),
		Label: abi.RawJSON(label), Metadata: abi.RawJSON(metadata)}
	r, err := rb.Hook.Handle(ctx, ev)
	if err != nil {
		return nil, nil, fmt.Errorf("reward %s: %w", rb.Plugin, err)
	}
	return r.Reward, r.Metrics, nil
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
	Sampling *turn.Sampling
	// MaxResponseTokens is the episode-wide response budget (0: the agent's max_response_tokens).
	MaxResponseTokens int
	// Events, if set, is told of the episode's steps as they happen (Event): model calls, tool calls and their
	// results. It is called from the episode's goroutine and must not block.
	Events func(Event)
	// firstPrompt, shared by the samples of one item (Item.Episodes), renders and tokenizes their identical
	// first prompt once.
	firstPrompt *sharedPrompt
	// sub is set on a sub-agent's episode (subagent.go): its depth and turn budgets.
	sub *subRun
}

// sharedPrompt is the first prompt of an item's samples: same messages, same agent, so the same ids.
type sharedPrompt struct {
	once sync.Once
	ids  []int32
	err  error
}

// episode is the state of one running episode.
type episode struct {
	a        *Agent
	ep       Episode
	traj     *tito.Trajectory
	ids      *sglang.IDsCache // the trajectory's input_ids encoded, kept between calls
	msgs     []tito.Message
	msgCache *tito.MessageCache // msgs encoded for the template engine, kept between deltas
	// windowAudited: a windowed delta of this episode was compared with the whole render's (once per episode)
	windowAudited bool
	// views are msgs as a full render shows them (a compaction renders them): an assistant message's content is the
	// text outside its tool calls, which the template writes from tool_calls (msgs keeps the text as generated).
	views []tito.Message
	// head is the number of the episode's first messages (system prompt and the item's): a compaction keeps them.
	head int
	// doneResponse counts the response tokens (after the first prompt) of the samples finished before the current
	// one: the response budget is the episode's.
	doneResponse int
	compactions  int
	sampling     turn.Sampling
	// budget is the episode-wide response budget (0: none): tokens after the first prompt.
	budget    int
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
	e := &episode{a: a, ep: ep, traj: tito.NewTrajectory(), ids: new(sglang.IDsCache), msgCache: new(tito.MessageCache), state: map[int]abi.RawJSON{}, lastStop: -1,
		parseErrs: map[string]int{}, toolCalls: map[string]int{}, since: time.Now()}
	e.sampling = a.cfg.Sampling
	if ep.Sampling != nil {
		e.sampling = e.sampling.Merge(*ep.Sampling)
	}
	e.budget = a.cfg.MaxResponseTokens
	if ep.MaxResponseTokens > 0 {
		e.budget = ep.MaxResponseTokens
	}
	if a.cfg.EpisodeTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.cfg.EpisodeTimeout)
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

func (e *episode) finish(status, reason, text string) {
	if e.traj.Status != "" {
		return
	}
	e.traj.Status, e.traj.StatusReason = status, reason
	// text is what failed for a failed or aborted episode, and why it stopped for a clean end (a hook's stop
	// message, the context window's detail): trainers read error as a failure.
	if status == StatusFailed || status == StatusAborted {
		e.traj.Error = text
	} else {
		e.traj.StopMessage = text
	}
}

func (e *episode) loop(ctx context.Context) {
	a := e.a
	if a.cfg.SystemPrompt != "" && (len(e.ep.Messages) == 0 || e.ep.Messages[0].Role != "system") {
		e.msgs = append(e.msgs, tito.Message{Role: "system", Content: a.cfg.SystemPrompt})
	}
	e.msgs = append(e.msgs, e.ep.Messages...)
	e.views = slices.Clone(e.msgs)
	e.head = len(e.msgs)
	e.countMessages()
	if _, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventBeforeInvocation, Messages: hookMessages(e.msgs)}); stop {
		return
	}
	// A prompt far past the window is refused before it costs memory: first by its bytes (before rendering and
	// tokenizing), then by its tokens (before the trajectory keeps them).
	if n, limit := messageBytes(e.msgs), int64(a.m.ContextWindow)*maxPromptBytesPerToken; n > limit {
		e.finish(StatusTruncated, ReasonContextWindow, fmt.Sprintf("the messages are %d bytes, more than %d bytes per token of the %d-token context window: refused before tokenizing", n, maxPromptBytesPerToken, a.m.ContextWindow))
		e.msgs = []tito.Message{} // nor kept in the trajectory: the error says what was refused
		return
	}
	ids, err := e.firstPrompt()
	if err != nil {
		e.finish(StatusFailed, ReasonTemplate, fmt.Sprintf("rendering the first prompt: %v", err))
		return
	}
	if len(ids) > a.m.ContextWindow {
		e.finish(StatusTruncated, ReasonContextWindow, fmt.Sprintf("the first prompt is %d tokens, past the %d-token context window: not kept", len(ids), a.m.ContextWindow))
		e.msgs = []tito.Message{}
		return
	}
	if !e.appendPrompt(ids) {
		return
	}
	e.traj.Origin.PromptMessages = len(e.msgs) // the first sample's prompt renders the first messages
	if !e.beginEnvs(ctx) {
		return
	}
	for {
		r, ok := e.generate(ctx)
		if !ok {
			return
		}
		calls, ok := e.handleResponse(ctx, r)
		if !ok {
			return
		}
		if !e.runTools(ctx, calls) {
			return
		}
		if !e.appendResults(ctx, calls) {
			return
		}
		if e.budgetLeft() <= 0 {
			// The results fill the budget: no room for another response. They were never sent, so end drops them
			// and the trajectory ends on the model's last response (a reward lands on a token the model chose).
			e.finish(StatusTruncated, ReasonResponseBudget, fmt.Sprintf("the response reached %d tokens with the tool results, the budget is %d", e.responseLen(), e.budget))
			return
		}
		if n := e.compactions; !e.compact(ctx) || (e.compactions == n && !e.redeploy()) || !e.beforeGenerate(ctx) {
			return
		}
	}
}

// beforeGenerate tells the hooks subscribed to before_generate how large the context is, with the conversation (as
// a full render shows it); a hook that answers with messages replaces the conversation, and a new sample of the
// episode begins with their full render. It reports false when the episode ended.
func (e *episode) beforeGenerate(ctx context.Context) bool {
	if !e.a.hooksWant(abi.EventBeforeGenerate) {
		return true
	}
	r, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventBeforeGenerate, Messages: hookMessages(e.views),
		ContextTokens: e.traj.Len(), ContextWindow: e.a.m.ContextWindow})
	if stop {
		return false
	}
	if r.Messages == nil {
		return true
	}
	msgs, err := fromHookMessages(r.Messages)
	if err != nil {
		e.finish(StatusFailed, ReasonHookFailure, fmt.Sprintf("before_generate: %v", err))
		return false
	}
	if !e.newSample(tito.SampleCompaction, msgs, "rendering the conversation a before_generate hook gave") {
		return false
	}
	e.compactions++
	return true
}

// hooksWant reports whether a hook subscribes to event.
func (a *Agent) hooksWant(event string) bool {
	for _, hb := range a.d.Hooks {
		if hb.Hook.Subscribed(event) {
			return true
		}
	}
	return false
}

// fromHookMessages is a hook's conversation as the loop keeps it. It must not be empty, and its roles must be
// known ones (the template checks the rest as it renders).
func fromHookMessages(ms []abi.Message) ([]tito.Message, error) {
	if len(ms) == 0 {
		return nil, errors.New("the hook gave an empty conversation")
	}
	out := make([]tito.Message, len(ms))
	for i, m := range ms {
		if !slices.Contains([]string{tito.RoleSystem, tito.RoleDeveloper, tito.RoleUser, tito.RoleAssistant, tito.RoleTool}, m.Role) {
			return nil, fmt.Errorf("message %d has role %q", i, m.Role)
		}
		tm := tito.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Arguments)
			if !json.Valid(args) {
				return nil, fmt.Errorf("message %d: tool call %q: arguments are not JSON", i, tc.Name)
			}
			tm.ToolCalls = append(tm.ToolCalls, tito.ToolCall{ID: tc.ID, Type: "function", Function: tito.FunctionCall{Name: tc.Name, Arguments: args}})
		}
		out[i] = tm
	}
	return out, nil
}

// redeploy begins the next turn's sample under history "as-deployed": the chain so far becomes a finished sample and
// the new one's prompt is the chat template's full render of the conversation as a deployed client keeps it
// (e.views). It reports false when the episode ended.
func (e *episode) redeploy() bool {
	if e.a.cfg.History != HistoryAsDeployed {
		return true
	}
	return e.newSample(tito.SampleAsDeployed, slices.Clone(e.views), "rendering the conversation as deployed")
}

// compact applies the agent's context policy before the next model call: when the current sample has passed the
// threshold, the conversation becomes the episode's first messages and the last keep_turns turns (as a full render
// shows them: e.views), the chain so far becomes a finished sample (its unsent tool results dropped: they are in
// the kept turns), and the new sample's prompt is the template's full render of the new conversation. Nothing
// happens when the conversation has no more than keep_turns turns to drop from. It reports false when the episode
// ended (the new prompt could not be rendered, or does not fit the context window).
func (e *episode) compact(ctx context.Context) bool {
	cp := e.a.cfg.Context
	if (cp.Policy != ContextKeepLast && cp.Policy != ContextSummarize) || e.traj.Len() <= cp.MaxTokens {
		return true
	}
	var starts []int // where each turn after the first messages begins
	for i := e.head; i < len(e.views); i++ {
		if e.views[i].Role == tito.RoleAssistant {
			starts = append(starts, i)
		}
	}
	if len(starts) <= cp.KeepTurns {
		return true
	}
	from := len(e.views)
	if cp.KeepTurns > 0 {
		from = starts[len(starts)-cp.KeepTurns]
	}
	head, kept := slices.Clone(e.views[:e.head]), slices.Clone(e.views[from:])
	if cp.Policy == ContextSummarize {
		summary, ok := e.summarize(ctx)
		if !ok {
			return false
		}
		msgs := slices.Concat(head, []tito.Message{{Role: tito.RoleUser, Content: SummaryPrefix + summary.text}}, kept)
		if !e.newSample(tito.SampleCompaction, msgs, "rendering the summarized conversation") {
			return false
		}
		// The continuation branches from the sample that was summarized, not from the summary's own sample.
		e.traj.Origin.Parent, e.traj.Origin.BranchTurn, e.traj.Origin.BranchOffset = summary.parent, summary.parentTurns, summary.parentLen
		e.compactions++
		return true
	}
	msgs := slices.Concat(head, kept)
	if !e.newSample(tito.SampleCompaction, msgs, "rendering the compacted conversation") {
		return false
	}
	e.compactions++
	return true
}

// summary is what summarize returns: the summary's text, and the sample it summarized (its index, responses and
// tokens).
type summary struct {
	text                           string
	parent, parentTurns, parentLen int
}

// summarize asks the model for a summary of the conversation: a sample of its own (reason "summary"), whose prompt
// is the full render of the conversation and the summary request, and whose one response is the summary (its loss
// mask 1: the model produced it; 0 with MaskSummary, the sample then marked masked). The summary's text is the response less its reasoning block; a summary cut short
// by max_new_tokens is kept as it is. It reports false when the episode ended (the call failed).
func (e *episode) summarize(ctx context.Context) (summary, bool) {
	cp := e.a.cfg.Context
	request := cp.SummaryPrompt
	if request == "" {
		request = DefaultSummaryPrompt
	}
	e.traj.DropPending()
	out := summary{parent: len(e.traj.Samples), parentTurns: e.traj.Turns(), parentLen: e.traj.Len()}
	prompt := append(slices.Clone(e.views), tito.Message{Role: tito.RoleUser, Content: request})
	if !e.takeSubTurn() || !e.newSample(tito.SampleSummary, prompt, "rendering the summary request") {
		return out, false
	}
	if cp.MaskSummary {
		e.traj.MaskResponses() // no responses yet: the summary's tokens get loss mask 0 as they are appended
	}
	rid := fmt.Sprintf("%s.%d", e.ep.ID, e.counts.ModelCalls)
	r, err := e.a.m.Call(sglang.WithGroup(ctx, e.ep.GroupID), e.traj, turn.CallRequest{Key: e.ep.ID, RID: rid, Sampling: e.sampling,
		Resume: e.a.cfg.PartialRollout == PartialResume, Since: e.since, Waited: e.waited})
	e.counts.ResponseTokens += len(r.OutputIDs)
	if err != nil {
		e.callFailed(ctx, err, "no room left in the context window for the summary")
		return out, false
	}
	e.since, e.waited = r.Done, 0
	e.counts.ModelCalls++
	e.turnEvent(r)
	e.addMessageQuiet(tito.Message{Role: tito.RoleAssistant, Content: r.Text})
	reasoning, content := turn.SplitReasoning(e.a.m.Reasoning, r.Text)
	if content == "" {
		content = reasoning
	}
	out.text = content
	return out, true
}

// newSample ends the current sample and begins one whose conversation is msgs, its prompt their full render (what
// says what was being rendered, for errors). It reports false when the episode ended: the render failed, or the
// prompt does not fit the context window (the episode is then truncated on the current sample).
func (e *episode) newSample(reason string, msgs []tito.Message, what string) bool {
	ids, err := e.a.m.Prompt(msgs, e.a.toolSpecs)
	if err != nil {
		e.finish(StatusFailed, ReasonTemplate, fmt.Sprintf("%s: %v", what, err))
		return false
	}
	if len(ids) >= e.a.m.ContextWindow {
		e.finish(StatusTruncated, ReasonContextWindow, fmt.Sprintf("%s: the prompt is %d tokens, past the %d-token context window", what, len(ids), e.a.m.ContextWindow))
		return false
	}
	old, err := json.Marshal(e.msgs)
	if err != nil {
		e.finish(StatusFailed, ReasonRuntimeError, fmt.Sprintf("recording the sample's messages: %v", err))
		return false
	}
	e.traj.DropPending()
	done := e.responseLen()
	if err := e.traj.NewSample(reason, old); err != nil {
		e.finish(StatusFailed, ReasonInvariant, err.Error())
		return false
	}
	e.doneResponse = done
	e.traj.Origin.PromptMessages = len(msgs)
	e.msgs, e.views = msgs, slices.Clone(msgs)
	e.lastStop = -1 // the new prompt is a full render: no generated stop to trim from a delta
	e.countMessages()
	e.emit(Event{Kind: EventSample, Turn: e.counts.ModelCalls, PromptTokens: len(ids), Sample: e.traj.Origin.Index})
	return e.appendPrompt(ids)
}

// responseLen is the episode's response so far: every token after the first prompt, of every sample.
func (e *episode) responseLen() int { return e.doneResponse + e.traj.Len() - e.traj.PromptLength() }

// budgetLeft is what the response budget still allows (math.MaxInt without a budget).
func (e *episode) budgetLeft() int {
	if e.budget <= 0 {
		return math.MaxInt
	}
	return e.budget - e.responseLen()
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
		e.traj.SetMetric("env.begin_ms", e.traj.Metrics["env.begin_ms"]+turn.Millis(d))
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
	render := func() ([]int32, error) { return e.a.m.Prompt(e.msgs, e.a.toolSpecs) }
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

// generate makes one model call (turn.Model.Call: the pause gate, the context window, SGLang, abort on
// cancellation, resumed partial rollouts, the response appended verbatim, decoded and parsed) and returns its
// result, or false when the episode ended: the call failed, or max_new_tokens or the context window cut the
// reply short (the episode is truncated).
func (e *episode) generate(ctx context.Context) (*turn.Result, bool) {
	a := e.a
	if _, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventBeforeModelCall}); stop || !e.takeSubTurn() {
		return nil, false
	}
	turnSeed := fmt.Sprintf("%s/%d", e.ep.ID, e.counts.ModelCalls+1) // the turn's ids are made once it is counted
	// The response budget caps the turn's max_new_tokens (a resumed turn's continuations included, as turn.Call
	// counts its partial outputs against it); a length finish under that cap is the budget's.
	sampling, budgetCut := e.sampling, false
	if left := e.budgetLeft(); left <= 0 {
		e.finish(StatusTruncated, ReasonResponseBudget, "")
		return nil, false
	} else if left < sampling.MaxNewTokens {
		sampling.MaxNewTokens, budgetCut = left, true
	}
	// The group's samples share a worker (sglang.WithGroup), where their shared first prompt is cached.
	r, err := a.m.Call(sglang.WithGroup(ctx, e.ep.GroupID), e.traj, turn.CallRequest{
		Key:        e.ep.ID,
		IDs:        e.ids,
		RID:        fmt.Sprintf("%s.%d", e.ep.ID, e.counts.ModelCalls),
		Sampling:   sampling,
		Resume:     a.cfg.PartialRollout == PartialResume,
		Since:      e.since,
		Waited:     e.waited,
		CallIDSeed: turnSeed,
		PriorCalls: e.priorCalls(),
	})
	e.counts.ResponseTokens += len(r.OutputIDs)
	if err != nil {
		e.callFailed(ctx, err, "")
		return nil, false
	}
	e.since, e.waited = r.Done, 0
	e.lastStop = r.Stop
	e.counts.ModelCalls++
	e.turnEvent(r)
	if r.Length() {
		e.final = r.Text
		e.dispatch(ctx, &abi.Event{Event: abi.EventAfterModelCall, Response: &abi.ModelResponse{Text: e.final, FinishReason: r.Finish.Type}})
		e.addMessage(ctx, tito.Message{Role: "assistant", Content: e.final})
		switch {
		case r.Cut:
			e.finish(StatusTruncated, ReasonContextWindow, "")
		case budgetCut:
			e.finish(StatusTruncated, ReasonResponseBudget, "")
		default:
			e.finish(StatusTruncated, ReasonLength, "")
		}
		return nil, false
	}
	return r, true
}

// callFailed ends the episode after a model call returned err: truncated when the context window has no room
// (fullDetail says for what), aborted by a request's abort, failed on a broken invariant, otherwise as generate
// failures end.
func (e *episode) callFailed(ctx context.Context, err error, fullDetail string) {
	var ae *turn.AbortError
	var ie *turn.InvariantError
	switch {
	case errors.Is(err, turn.ErrContextFull):
		e.finish(StatusTruncated, ReasonContextWindow, fullDetail)
	case errors.As(err, &ae):
		e.finish(StatusAborted, ReasonAbortedByRequest, err.Error())
	case errors.As(err, &ie):
		e.finish(StatusFailed, ReasonInvariant, err.Error())
	default:
		e.generateFailed(ctx, err)
	}
}

// priorCalls counts the tool calls of the conversation so far (Kimi K2's ids count them).
func (e *episode) priorCalls() int {
	n := 0
	for _, m := range e.msgs {
		n += len(m.ToolCalls)
	}
	return n
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

// call is one tool call of a turn: a parsed call, or a parse error that answers as an error result.
type call struct {
	tc       abi.ToolCall
	parseErr *abi.ParseError
	result   abi.ToolResult
	outcome  string        // ok, error, timeout, cancelled, unknown_tool, parse_error, env_error
	took     time.Duration // the tool's wall time
	sub      *subResult    // a sub-agent call's episode (subagent.go)
}

// handleResponse parses the model's response, records its message and returns the turn's calls (parse errors
// included), or false when the episode ended.
func (e *episode) handleResponse(ctx context.Context, r *turn.Result) ([]*call, bool) {
	text := r.Text
	e.final = text
	if r.ParseErr != nil {
		e.finish(StatusFailed, ReasonParser, fmt.Sprintf("tool-call parser failed: %v", r.ParseErr))
		return nil, false
	}
	var calls []*call
	msg := r.Message()
	for _, tc := range r.Calls {
		calls = append(calls, &call{tc: tc})
	}
	for i := range r.ParseErrors {
		pe := r.ParseErrors[i]
		e.parseErrs[pe.Reason]++
		// The error result answers as the named tool (when the parser read a name) with an id of the family's form,
		// so the template renders it as any tool result (Mistral's raise on other ids).
		n := len(r.Calls) + i
		id := e.a.m.CallIDs.ID(fmt.Sprintf("%s/%d", e.ep.ID, e.counts.ModelCalls), n, pe.Name, e.priorCalls())
		calls = append(calls, &call{tc: abi.ToolCall{ID: id, Name: pe.Name}, parseErr: &pe})
	}
	if len(calls) > 0 {
		e.counts.ToolIters++
		e.counts.ToolCalls += len(calls)
	}
	resp := &abi.ModelResponse{Text: text, FinishReason: sglang.FinishStop, ToolCalls: len(r.Calls), ParseErrors: len(r.ParseErrors)}
	if _, stop := e.dispatch(ctx, &abi.Event{Event: abi.EventAfterModelCall, Response: resp}); stop {
		e.addMessageQuiet(msg)
		return nil, false
	}
	stop := e.addMessage(ctx, msg)
	e.viewAssistant(r)
	if stop {
		return nil, false
	}
	if len(calls) == 0 {
		e.finish(StatusCompleted, "", "")
		return nil, false
	}
	if len(r.ParseErrors) > 0 && e.a.cfg.ParseErrors == ParseStop {
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
	for i, c := range calls {
		if c.parseErr != nil {
			c.result = errorResult(parseErrorResult(*c.parseErr))
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
		timeout := e.a.cfg.ToolTimeout
		if tb.Timeout > 0 {
			timeout = tb.Timeout
		}
		e.emit(Event{Kind: EventToolCall, Turn: e.counts.ModelCalls - 1, CallID: c.tc.ID, Name: c.tc.Name, Arguments: json.RawMessage(c.tc.Arguments)})
		jobs = append(jobs, func() {
			t0 := time.Now()
			defer func() { c.took = time.Since(t0) }()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			cctx = withOutboundLog(cctx, &e.outbound, c.tc.Name)
			var res abi.ToolResult
			var err error
			if st, ok := tb.Tool.(*SubAgent); ok {
				res, err = e.runSubAgent(cctx, st, c, i)
			} else if et, ok := tb.Tool.(EpisodeTool); ok {
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
	e.addSubSamples(calls) // whatever happens next, the sub-episodes' samples are kept
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
	if e.ep.Events != nil {
		for _, c := range calls {
			e.emit(Event{Kind: EventToolResult, Turn: e.counts.ModelCalls - 1, CallID: c.tc.ID, Name: c.tc.Name, Outcome: c.outcome,
				ToolMS: turn.Millis(c.took), Bytes: len(resultText(c.result))})
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

// parseErrorResult is the tool result a malformed call gets, the wording the model learns from (plugins/ABI.md
// 5.1): the reason code and the parser's message (which parameter, what was wanted, what was got), then the call
// as the model wrote it.
func parseErrorResult(pe abi.ParseError) string {
	msg := pe.Message
	if msg == "" {
		msg = "the parser gave no detail"
	}
	return "Error: the tool call could not be parsed (" + pe.Reason + "): " + msg + "\nThe call was: " + pe.Raw
}

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
//
// A turn whose every call was malformed has no tool call to answer: its error results go back as one user message.
// Templates differ on a tool result without a call: gpt-oss's and MiniMax-M2's raise, Mistral's renders it but
// then refuses the conversation's roles on the next turn; a user message is valid in every family.
func (e *episode) appendResults(ctx context.Context, calls []*call) bool {
	msgs := make([]tito.Message, 0, len(calls))
	if allMalformed(calls) {
		parts := make([]string, len(calls))
		for i, c := range calls {
			parts[i] = resultText(c.result)
		}
		msgs = append(msgs, tito.Message{Role: "user", Content: strings.Join(parts, "\n\n")})
	} else {
		for _, c := range calls {
			msgs = append(msgs, tito.Message{Role: "tool", Content: resultText(c.result), ToolCallID: c.tc.ID, Name: c.tc.Name})
		}
	}
	for _, m := range msgs {
		if e.addMessage(ctx, m) {
			return false
		}
	}
	// The delta is rendered through the template's window (the messages it depends on); the episode's first
	// windowed delta is rendered whole too and compared (the window audit): a difference keeps the whole render's
	// delta, warns, and turns the window off for the agent.
	hist := e.msgs
	if e.a.m.Reasoning == family.ReasoningHarmony {
		// gpt-oss's template refuses harmony markup in content: it reads a turn as SGLang's server returns it
		// (viewAssistant). The delta is the template's tail after the history, the model's tokens stay as generated.
		hist = e.views
	}
	history := hist[:len(hist)-len(msgs)]
	audit := !e.windowAudited && e.a.m.WindowLeavesOut(history, msgs) > 0
	ids, drift, err := e.a.m.WindowDelta(history, msgs, e.a.toolSpecs, e.msgCache, e.lastStop, audit)
	if err != nil {
		e.finish(StatusFailed, ReasonTemplate, fmt.Sprintf("rendering tool results: %v", err))
		return false
	}
	if audit {
		e.windowAudited = true
		if drift != nil {
			e.warnings = append(e.warnings, drift.Error())
			e.a.log.Warn("delta window audit failed", "agent", e.a.cfg.Name, "episode", e.ep.ID, "err", drift)
		}
	}
	return e.appendPrompt(ids)
}

// allMalformed reports whether every call of a turn was a parse error (the assistant message has no tool calls).
func allMalformed(calls []*call) bool {
	for _, c := range calls {
		if c.parseErr == nil {
			return false
		}
	}
	return true
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
	e.views = append(e.views, m)
	e.countMessages()
}

// viewAssistant records the assistant message just added as a deployed client keeps it, which is what a full
// render shows (compaction, history "as-deployed"): its content is the text outside its tool calls (the template
// writes the calls from tool_calls; the text as generated would write each call twice) and outside its reasoning
// block, which goes to reasoning_content (the template decides whether to show it: Qwen3's keeps the reasoning of
// turns after the last user message, DeepSeek-R1's drops it). A reply with malformed calls keeps its text as
// generated: the error results answer calls that only the text has. gpt-oss's harmony messages split by channel,
// as SGLang's server returns them: analysis to reasoning_content (which its template reads as thinking), the final
// answer (or a commentary preamble) to content, the calls to tool_calls; a malformed call is left out (its template
// refuses harmony markup in content, and the error answers as a user message), and the deltas of either history
// are rendered from these views (appendResults).
func (e *episode) viewAssistant(r *turn.Result) {
	harmony := e.a.m.Reasoning == family.ReasoningHarmony
	if (len(r.ParseErrors) > 0 && !harmony) || r.ParseErr != nil {
		return
	}
	text := r.Text
	if len(r.Calls) > 0 && !harmony { // harmony's normal text has lost its analysis: its split drops the calls
		text = r.NormalText
	}
	v := &e.views[len(e.views)-1]
	v.ReasoningContent, v.Content = turn.SplitReasoning(e.a.m.Reasoning, text)
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
		if merged.Messages == nil {
			merged.Messages = r.Messages
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
	msgs, _ := json.Marshal(e.msgs)
	if t.Turns() == 0 && t.MultiSample() {
		// A sample that ended before its first response is no sample: the episode ends on the one before it.
		msgs = t.DiscardEmptySample()
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
	t.Messages = msgs
	if t.MultiSample() {
		t.Tools, t.TemplateKwargs = e.a.toolSpecs, e.a.m.Kwargs
		t.SetMetric("samples", float64(t.SampleCount()))
	}
	if e.compactions > 0 {
		t.SetMetric("context.compactions", float64(e.compactions))
	}
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
	t.Audit(e.a.m.Tokenizer)
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
	hm := abi.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
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
