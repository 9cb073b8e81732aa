package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// ErrContextFull: the trajectory leaves no room in the context window for a reply.
var ErrContextFull = errors.New("turn: no room left in the context window")

// AbortError is a call that SGLang aborted (a pause or weight update, a scheduler-side error) and that is not
// continued: the request did not ask to resume, or the abort is not resumable.
type AbortError struct {
	// Message is SGLang's finish_reason message.
	Message string
}

func (e *AbortError) Error() string { return "sglang aborted the request: " + e.Message }

// InvariantError is a response the trajectory refused (the prefix invariant, aligned arrays): a bug on one side,
// never silently fixed.
type InvariantError struct{ Err error }

func (e *InvariantError) Error() string { return e.Err.Error() }
func (e *InvariantError) Unwrap() error { return e.Err }

// MaxResumes bounds how often one turn is continued after an abort, so that a server that aborts every request
// cannot hold a conversation forever.
const MaxResumes = 16

// CallRequest is one model turn of a conversation.
type CallRequest struct {
	// Key keeps the conversation's calls on one worker (an episode's or a session's id).
	Key string
	// IDs, if set, is the conversation's request encoding, kept from one call to the next so that a call sends
	// its whole trajectory but encodes only the tokens added since the last (sglang.IDsCache). One per
	// conversation (a fork gets its own).
	IDs *sglang.IDsCache
	// RID is the request id sent to SGLang; the calls that continue an aborted turn add ".r1", ".r2", ...
	RID string
	// Sampling are the turn's params (the agent's merged with the request's); Sampling.MaxNewTokens is the
	// turn's budget, cut to the context window's room.
	Sampling Sampling
	// Resume continues a turn that SGLang aborted mid-generation (partial_rollout = "resume"): its partial
	// output is kept verbatim and the same turn goes on, up to MaxResumes times.
	Resume bool
	// Since is when the caller's own work for this call began (the last response, or the conversation's start);
	// Waited is the time since then that was not the runtime's own (tools, a pause). The turn's overhead is the
	// rest, measured to the request.
	Since  time.Time
	Waited time.Duration
	// ParseLength parses a reply that max_new_tokens cut short too (the front door answers with whatever it
	// has; the loop ends the episode on it and parses nothing).
	ParseLength bool
	// CallIDSeed seeds the ids made for calls whose parsed id lacks the family's form (family.CallIDStyle.ID);
	// PriorCalls is the number of calls in the conversation's earlier messages (Kimi K2's ids count them).
	CallIDSeed string
	PriorCalls int
	// NewCallID, if set, makes the ids of a family that accepts any id (family.CallIDDefault) in place of
	// call_0000, call_0001, ... (the front door's are unique in a session).
	NewCallID func(i int) string
}

// Result is one finished turn, appended to the trajectory.
type Result struct {
	// OutputIDs are the turn's output: the partial outputs of aborted calls, then the last call's.
	OutputIDs []int32
	// Finish is the last call's finish reason (a length finish when a resumed turn used its budget).
	Finish *sglang.FinishReason
	// Cut reports that the last call's max_new_tokens was cut to the context window's room: a length finish is
	// then the window's, not the budget's.
	Cut bool
	// Stop is the stop id that ended the turn, -1 for none.
	Stop int32
	// Text is the output decoded with special tokens kept, less the final stop token.
	Text string
	// Done is when the last response arrived: the caller's own work for the next call starts there.
	Done time.Time
	// InputTokens is the size of the last request; CachedTokens its radix-cache hits.
	InputTokens, CachedTokens int
	// Parsed reports that the parser ran (not on a length finish, unless CallRequest.ParseLength); ParseErr is its
	// failure. Calls are the calls it read, in order, each with its index and an id of the family's form;
	// ParseErrors the malformed ones; NormalText the text outside calls.
	Parsed      bool
	ParseErr    error
	Calls       []abi.ToolCall
	ParseErrors []abi.ParseError
	NormalText  string
}

// Length reports a turn cut short by max_new_tokens (or the context window: see Cut).
func (r *Result) Length() bool { return r.Finish != nil && r.Finish.Type == sglang.FinishLength }

// Message is the turn as the conversation records it: an assistant message with the text as generated (less
// the final stop token) and the parsed tool calls.
func (r *Result) Message() tito.Message {
	msg := tito.Message{Role: tito.RoleAssistant, Content: r.Text}
	for _, c := range r.Calls {
		msg.ToolCalls = append(msg.ToolCalls, tito.ToolCall{ID: c.ID, Type: "function",
			Function: tito.FunctionCall{Name: c.Name, Arguments: json.RawMessage(c.Arguments)}})
	}
	return msg
}

// Call makes one model turn on traj, which must end in the turn's prompt: it waits while the gate is closed,
// clamps max_new_tokens to the context window, calls SGLang, aborts the request there when ctx ends first,
// continues an aborted turn when asked to, appends each response verbatim (with its logprobs and provenance),
// trims the final stop token, decodes and parses. From the first appended response on, the result is in traj:
// a parser failure is the result's ParseErr, not an error.
//
// # Errors
//
// ErrContextFull (traj fills the context window); the gate's or the generator's error (context errors,
// sglang.ErrContextLength, sglang.ErrAborted, *sglang.AbortError, ...), as they are; *AbortError (an abort not
// continued); *InvariantError (a response the trajectory refused). With an error the result holds only
// OutputIDs: what aborted calls of the turn appended before it failed (usually none).
func (m *Model) Call(ctx context.Context, traj *tito.Trajectory, req CallRequest) (*Result, error) {
	var (
		turnIDs []int32 // the turn's output so far (partial outputs of aborted calls, then the last)
		partial bool    // the trajectory ends in an aborted response segment of this turn
		cut     bool
		fr      *sglang.FinishReason
		resp    *sglang.GenerateResponse
		input   int
	)
	since, waited := req.Since, req.Waited
	failed := func(err error) (*Result, error) { return &Result{OutputIDs: turnIDs, Stop: -1}, err }
	for resumes := 0; ; resumes++ {
		ids, start := traj.NextRequest()
		input = len(ids)
		room := m.ContextWindow - len(ids)
		if room <= 0 {
			return failed(ErrContextFull)
		}
		budget := req.Sampling.MaxNewTokens - len(turnIDs)
		maxNew := min(budget, room)
		cut = maxNew < budget
		tw := time.Now()
		if err := m.Gate.Wait(ctx); err != nil {
			return failed(err)
		}
		waited += time.Since(tw)
		rid := req.RID
		if resumes > 0 {
			rid = fmt.Sprintf("%s.r%d", rid, resumes)
		}
		greq := &sglang.GenerateRequest{
			InputIDs:        ids,
			SamplingParams:  req.Sampling.Params(maxNew, m.ExtraStopIDs),
			ReturnLogprob:   true,
			LogprobStartLen: start,
			RID:             rid,
			IDsCache:        req.IDs,
			IDsAppendOnly:   true, // NextRequest's ids: the trajectory never changes tokens it gave out
		}
		t0 := time.Now()
		own := t0.Sub(since) - waited
		var err error
		resp, err = m.Generator.Generate(ctx, req.Key, greq)
		done := time.Now()
		since, waited = done, 0
		var ae *sglang.AbortError
		if req.Resume && errors.As(err, &ae) && ae.Response != nil && ctx.Err() == nil {
			// *sglang.Client reports an abort as an error holding the partial response: resume from it
			resp, err = ae.Response, nil
			if resp.MetaInfo.FinishReason == nil {
				resp.MetaInfo.FinishReason = &sglang.FinishReason{Type: sglang.FinishAbort, Message: ae.Message, StatusCode: ae.StatusCode}
			}
		}
		if err != nil {
			if ab, ok := m.Generator.(Aborter); ok && ctx.Err() != nil {
				// Cancelled mid-generation: make sure the server stops working on it too.
				actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				ab.AbortRequest(actx, rid)
				cancel()
			}
			return failed(err)
		}
		fr = resp.MetaInfo.FinishReason
		aborted := fr != nil && fr.Type == sglang.FinishAbort
		if aborted && !(req.Resume && resumable(ctx, fr, resumes)) {
			return failed(&AbortError{Message: fr.Message})
		}
		if aborted && len(resp.OutputIDs) == 0 {
			continue // nothing generated yet: simply ask again once the pause is over
		}
		out := tito.Response{
			InputIDs:        ids,
			LogprobStartLen: start,
			InputLogprobs:   InputLogprobs(resp.MetaInfo.InputTokenLogprobs),
			OutputIDs:       resp.OutputIDs,
			OutputLogprobs:  OutputLogprobs(resp.MetaInfo.OutputTokenLogprobs),
			Turn: tito.TurnInfo{
				Server:         resp.Server,
				RID:            resp.MetaInfo.ID,
				WeightVersion:  resp.MetaInfo.WeightVersion,
				WeightVersions: weightSpans(resp.MetaInfo.WeightVersions),
				CachedTokens:   resp.MetaInfo.CachedTokens,
				PromptTokens:   resp.MetaInfo.PromptTokens,
				FinishReason:   finishString(fr),
				LatencyMS:      Millis(done.Sub(t0)),
				OverheadMS:     Millis(own + resp.ClientTime),
			},
		}
		add := traj.AppendResponse
		if partial {
			add = traj.AppendContinuation
		}
		if err := add(out); err != nil {
			return failed(&InvariantError{err})
		}
		turnIDs = append(turnIDs, resp.OutputIDs...)
		if !aborted {
			break
		}
		partial = true
		if len(turnIDs) >= req.Sampling.MaxNewTokens {
			// the partial output already used the turn's budget: it ends as a length finish would
			fr, cut = &sglang.FinishReason{Type: sglang.FinishLength}, false
			break
		}
	}
	r := &Result{OutputIDs: turnIDs, Finish: fr, Cut: cut, Stop: m.endStop(turnIDs), Done: since,
		InputTokens: input, CachedTokens: resp.MetaInfo.CachedTokens}
	r.Text = m.Decode(turnIDs)
	if !r.Length() || req.ParseLength {
		m.parse(ctx, r, req)
	}
	return r, nil
}

// resumable says whether an aborted call is continued: the conversation itself was not cancelled, the abort is
// not a scheduler-side error (a 4xx, such as an over-long input), and the turn has not been resumed MaxResumes
// times already.
func resumable(ctx context.Context, fr *sglang.FinishReason, resumes int) bool {
	return ctx.Err() == nil && (fr.StatusCode == 0 || fr.StatusCode >= 500) && resumes < MaxResumes
}

// parse reads the turn's text with the parser and gives each call an id of the family's form (and its index).
func (m *Model) parse(ctx context.Context, r *Result, req CallRequest) {
	r.Parsed = true
	parsed, err := m.Parser.Parse(ctx, r.Text)
	if err != nil {
		r.ParseErr = err
		return
	}
	r.NormalText, r.ParseErrors = parsed.NormalText, parsed.Errors
	for i, pc := range parsed.Calls {
		idx := i
		c := abi.ToolCall{ID: pc.ID, Name: pc.Name, Arguments: pc.Arguments, Index: &idx}
		switch {
		case m.CallIDs.Valid(c.ID):
		case req.NewCallID != nil && m.CallIDs == family.CallIDDefault:
			c.ID = req.NewCallID(i)
		default:
			c.ID = m.CallIDs.ID(req.CallIDSeed, i, pc.Name, req.PriorCalls)
		}
		r.Calls = append(r.Calls, c)
	}
}

// InputLogprobs takes meta_info.input_token_logprobs[i][0]; a null stays nil (the first position of the window).
func InputLogprobs(es []sglang.LogprobEntry) []*float64 {
	out := make([]*float64, len(es))
	for i := range es {
		if !es[i].Null {
			v := es[i].Logprob
			out[i] = &v
		}
	}
	return out
}

// OutputLogprobs takes meta_info.output_token_logprobs[i][0] bit for bit; a null becomes NaN, which the
// trajectory refuses (an output token without a logprob is a protocol violation, never silently 0).
func OutputLogprobs(es []sglang.LogprobEntry) []float64 {
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

// Millis is d in milliseconds, to the microsecond (the trajectory's timings).
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

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
