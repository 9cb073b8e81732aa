package frontdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// session is one rollout: the calls of one caller, matched against its trajectory. Its calls run one at a time.
type session struct {
	s       *Server
	id      string
	oneCall bool
	// run tells this session apart from any other that had or will have its id (before a restart, after it
	// ended): it is in its trajectory ids, so that a reused id never names a trajectory already stored.
	run string
	// minted: the server minted the id (POST /v1/sessions); such a session is kept even if its first call fails.
	minted bool

	mu        sync.Mutex
	ended     bool
	discarded bool      // its first call failed: it was dropped, unkept (a call that waited for it opens it afresh)
	branches  []*branch // every trajectory of the session; the last one is current
	tools     []json.RawMessage
	toolsKey  string
	drift     map[string]int // policy + "." + reason -> count
	dropped   int            // calls whose history dropped the reasoning of a reply (kept as generated)
	idle      *time.Timer
	calls     int
	apis      []string  // the APIs the session's calls came through
	last      time.Time // when the last call ended (or the session began)
	lastRID   string    // the request id of the last reply (its response ids are made from it)
}

// idleEnd ends the session when its idle timer fires, unless a call ran meanwhile (the timer fired while the
// call held the session): then it waits for another idle period.
func (ss *session) idleEnd() {
	ss.mu.Lock()
	idle := ss.s.cfg.IdleTimeout
	if wait := idle - time.Since(ss.last); wait > 0 && !ss.ended {
		ss.idle.Reset(wait)
		ss.mu.Unlock()
		return
	}
	defer ss.mu.Unlock()
	ss.endLocked(context.Background(), ReasonIdle, nil)
}

// branch is one trajectory of a session: its tokens and the conversation they hold, message by message.
type branch struct {
	index int
	traj  *tito.Trajectory
	ids   *sglang.IDsCache   // traj's input_ids encoded, kept between calls
	msgs  *tito.MessageCache // hist's messages encoded for the template engine, kept between calls
	// hist holds what the template rendered (render) and what the caller must send back to extend it (view).
	hist []histMsg
	// lastStop is the stop id that ended the last reply (-1: none).
	lastStop  int32
	lastFinal string // finish reason of the last reply
	status    string
	reason    string
	parseErrs map[string]int
	realigns  []driftRecord
	forkOf    *driftRecord // how this branch began, when it forked from another
}

type histMsg struct {
	render tito.Message
	view   tito.Message
}

// driftRecord says where a call left the session's history and what the policy did.
type driftRecord struct {
	Policy string `json:"policy"`
	Reason string `json:"reason"`
	// Message is the index of the first message that differs (== the history's length when messages were removed).
	Message int `json:"message"`
	// Token is where the new tokens begin: the end of the common token prefix.
	Token int `json:"token"`
	// Dropped counts the trajectory's tokens after Token that the new conversation replaced (realign).
	Dropped int `json:"dropped_tokens,omitempty"`
	// From names the branch this one forked from (fork).
	From string `json:"from,omitempty"`
}

func newSession(s *Server, id string, oneCall bool) *session {
	// The idle timer starts when the first call ends (a session is opened by its first call).
	return &session{s: s, id: id, oneCall: oneCall, run: randomID(), drift: map[string]int{}}
}

func (ss *session) trajectoryID(b *branch) string { return ss.branchID(b.index) }

// branchID is the trajectory id of the session's branch i: frontdoor/SESSION/RUN/BRANCH.
func (ss *session) branchID(i int) string { return fmt.Sprintf("frontdoor/%s/%s/%d", ss.id, ss.run, i) }

// groupID is the default group of the session's trajectories (its branches): frontdoor/SESSION/RUN.
func (ss *session) groupID() string { return "frontdoor/" + ss.id + "/" + ss.run }

func (ss *session) current() *branch {
	if len(ss.branches) == 0 {
		return nil
	}
	return ss.branches[len(ss.branches)-1]
}

// callResult is one reply, for the API shapes.
type callResult struct {
	session, trajectoryID, rid string
	turn                       int
	created                    int64
	content, reasoning         string
	calls                      []tito.ToolCall
	finish                     string
	promptTokens               int
	completionTokens           int
	cachedTokens               int
	parseErrors                []abi.ParseError
	drift                      *driftRecord
}

// plan is how a call's tokens are built before generation; nothing in the session changes until it succeeds.
type plan struct {
	b     *branch // the branch the reply goes to (a new one for fork and realign)
	fresh bool    // b is not in ss.branches yet
	hist  []histMsg
	drift *driftRecord
	// appended: prompt tokens were appended to an existing branch (dropped again if the call fails).
	appended bool
}

// call runs one call in the session. discarded reports that the session had been dropped (its first call failed)
// while this call waited for it: nothing was done, and the caller should open the session again.
func (ss *session) call(ctx context.Context, api string, req *chatRequest, msgs []tito.Message, tools []json.RawMessage) (_ *callResult, _ *apiError, discarded bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.discarded {
		return nil, nil, true
	}
	if ss.ended {
		return nil, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "session_not_found",
			msg: fmt.Sprintf("session %q has ended", ss.id)}, false
	}
	if !ss.oneCall {
		if ss.idle != nil {
			ss.idle.Stop()
		}
		defer func() {
			if ss.ended {
				return
			}
			ss.last = time.Now()
			if ss.idle == nil {
				ss.idle = time.AfterFunc(ss.s.cfg.IdleTimeout, ss.idleEnd)
			} else {
				ss.idle.Reset(ss.s.cfg.IdleTimeout)
			}
		}()
	}
	res, aerr := ss.callLocked(ctx, api, req, msgs, tools)
	if aerr != nil && len(ss.branches) == 0 && !ss.oneCall && !ss.minted {
		// A session whose first call failed holds nothing: it is not kept (it would take a place of
		// max_sessions until its idle timeout), and its id stays free.
		ss.ended, ss.discarded = true, true
		ss.s.discard(ss)
	}
	return res, aerr, false
}

func (ss *session) callLocked(ctx context.Context, api string, req *chatRequest, msgs []tito.Message, tools []json.RawMessage) (*callResult, *apiError) {
	ss.calls++
	start := time.Now()
	if !slices.Contains(ss.apis, api) {
		ss.apis = append(ss.apis, api)
	}
	p, aerr := ss.plan(msgs, tools)
	if aerr != nil {
		return nil, aerr
	}
	res, aerr := ss.generate(ctx, req, p, start)
	if aerr != nil {
		if p.appended {
			p.b.traj.DropPending()
		}
		return nil, aerr
	}
	// Commit.
	if p.fresh {
		if p.drift != nil && p.drift.Policy == DriftRealign {
			old := ss.current()
			p.b.index, p.b.forkOf = old.index, old.forkOf
			p.b.realigns = append(slices.Clone(old.realigns), *p.drift)
			p.b.parseErrs = mergeCounts(old.parseErrs, p.b.parseErrs)
			ss.branches[len(ss.branches)-1] = p.b
		} else {
			if old := ss.current(); old != nil {
				old.status, old.reason = statusOf(old.lastFinal), ReasonForked
			}
			p.b.index = len(ss.branches)
			ss.branches = append(ss.branches, p.b)
		}
		res.trajectoryID = ss.trajectoryID(p.b)
	}
	if p.drift != nil {
		ss.drift[p.drift.Policy+"."+p.drift.Reason]++
		ss.s.drifted(p.drift.Policy, p.drift.Reason)
	}
	ss.tools, ss.toolsKey = tools, toolsKey(tools)
	ss.lastRID = res.rid
	return res, nil
}

func mergeCounts(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

func toolsKey(tools []json.RawMessage) string {
	var b bytes.Buffer
	for _, t := range tools {
		json.Compact(&b, t)
		b.WriteByte('\n')
	}
	return b.String()
}

// plan matches the call's messages against the current branch: a first call renders them in full; a call that
// extends the history renders only the new messages as a delta; anything else is drift, handled by the policy.
func (ss *session) plan(msgs []tito.Message, tools []json.RawMessage) (*plan, *apiError) {
	m := ss.s.m
	if aerr := checkToolResults(msgs); aerr != nil {
		return nil, aerr
	}
	cur := ss.current()
	if cur == nil {
		b, aerr := ss.renderFresh(msgs, tools, nil, nil)
		if aerr != nil {
			return nil, aerr
		}
		return &plan{b: b, fresh: true, hist: b.hist}, nil
	}
	at, reason := ss.match(cur, msgs, tools)
	if reason == "" {
		newMsgs := msgs[len(cur.hist):]
		history := make([]tito.Message, len(cur.hist))
		for i, h := range cur.hist {
			history[i] = h.render
			if m.Turn.Reasoning == family.ReasoningHarmony {
				// gpt-oss's template refuses harmony markup in content: it reads each reply as the caller got it
				// (its channels split). The delta is the template's tail; the history's tokens stay as generated.
				history[i] = h.view
			}
		}
		ids, err := m.Turn.Delta(history, newMsgs, tools, cur.msgs, cur.lastStop)
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages", code: "template_error",
				msg: fmt.Sprintf("session %q: rendering messages[%d:] as a delta of the history: %v", ss.id, len(cur.hist), err)}
		}
		if err := cur.traj.AppendPrompt(ids); err != nil {
			return nil, &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "invariant", msg: err.Error()}
		}
		p := &plan{b: cur, appended: true, hist: slices.Clone(cur.hist)}
		for _, nm := range newMsgs {
			p.hist = append(p.hist, histMsg{render: nm, view: nm})
		}
		return p, nil
	}
	d := &driftRecord{Policy: ss.s.cfg.Drift, Reason: reason, Message: at}
	if d.Policy == DriftReject {
		ss.drift[DriftReject+"."+reason]++
		ss.s.drifted(DriftReject, reason)
		return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: fmt.Sprintf("messages[%d]", at), code: "history_drift",
			msg: fmt.Sprintf("session %q: %s (drift policy reject): send the history as the session's replies left it, or end the session (POST /s/%s/end) and start another",
				ss.id, describeDrift(reason, at, len(cur.hist)), ss.id)}
	}
	b, aerr := ss.renderFresh(msgs, tools, cur, d)
	if aerr != nil {
		return nil, aerr
	}
	return &plan{b: b, fresh: true, drift: d, hist: b.hist}, nil
}

func describeDrift(reason string, at, histLen int) string {
	switch reason {
	case "tools_changed":
		return "the tools differ from the session's"
	case "regenerate":
		return "the messages repeat the history without the session's last reply (a second sample of the same turn)"
	case "messages_removed":
		return fmt.Sprintf("the messages are a prefix of the session's %d-message history", histLen)
	}
	return fmt.Sprintf("messages[%d] differs from the session's history (%s)", at, reason)
}

// renderFresh renders msgs in full into a new branch; with from set (drift), the branch shares from's common
// token prefix and d records where.
func (ss *session) renderFresh(msgs []tito.Message, tools []json.RawMessage, from *branch, d *driftRecord) (*branch, *apiError) {
	ids, err := ss.s.m.Turn.Prompt(msgs, tools)
	if err != nil {
		return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages", code: "template_error",
			msg: fmt.Sprintf("session %q: rendering the messages with the chat template: %v", ss.id, err)}
	}
	b := &branch{traj: tito.NewTrajectory(), ids: new(sglang.IDsCache), msgs: new(tito.MessageCache), lastStop: -1, parseErrs: map[string]int{}}
	for _, msg := range msgs {
		b.hist = append(b.hist, histMsg{render: msg, view: msg})
	}
	if from != nil {
		p := commonPrefix(from.traj.TokenIDs, ids)
		if p == len(ids) && p > 0 {
			p-- // at least one new prompt token, so that the model is asked for a reply after the re-render
		}
		f, err := from.traj.Fork(p)
		if err != nil {
			return nil, &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "invariant", msg: err.Error()}
		}
		b.traj = f
		d.Token = f.Len()
		ids = ids[f.Len():]
		if d.Policy == DriftRealign {
			d.Dropped = from.traj.Len() - f.Len()
		} else {
			d.From = ss.trajectoryID(from)
			b.forkOf = d
		}
	}
	if err := b.traj.AppendPrompt(ids); err != nil {
		return nil, &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "invariant", msg: err.Error()}
	}
	return b, nil
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// match compares the call's messages with the branch's history. It returns the drift reason ("" when the call
// extends the history) and the index of the first message that differs. A reply sent back without its
// reasoning matches: history keeps the reasoning as generated (as the model's template would drop it itself).
func (ss *session) match(b *branch, msgs []tito.Message, tools []json.RawMessage) (int, string) {
	if toolsKey(tools) != ss.toolsKey {
		return 0, "tools_changed"
	}
	dropped := 0
	for i, h := range b.hist {
		if i >= len(msgs) {
			if i == len(b.hist)-1 && h.view.Role == tito.RoleAssistant && i == len(msgs) {
				return i, "regenerate"
			}
			return len(msgs), "messages_removed"
		}
		ok, noReasoning := sameMessage(msgs[i], h.view)
		if !ok {
			return i, h.view.Role + "_edited"
		}
		if noReasoning {
			dropped++
		}
	}
	if len(msgs) == len(b.hist) {
		return len(msgs), "no_new_messages"
	}
	if dropped > 0 {
		ss.dropped++
	}
	return -1, ""
}

// sameMessage reports whether a caller's message is the history's message as the API showed it; noReasoning is
// set when it matches but leaves out the reasoning.
func sameMessage(got, want tito.Message) (ok, noReasoning bool) {
	if got.Role != want.Role || got.Content != want.Content || got.ToolCallID != want.ToolCallID {
		return false, false
	}
	if got.ReasoningContent != want.ReasoningContent {
		if got.ReasoningContent != "" {
			return false, false
		}
		noReasoning = true
	}
	if len(got.ToolCalls) != len(want.ToolCalls) {
		return false, false
	}
	for i := range got.ToolCalls {
		g, w := got.ToolCalls[i], want.ToolCalls[i]
		if g.ID != w.ID || g.Function.Name != w.Function.Name || !sameJSON(g.Function.Arguments, w.Function.Arguments) {
			return false, false
		}
	}
	return true, noReasoning
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// checkToolResults refuses a tool message whose tool_call_id answers no call of an earlier assistant message.
func checkToolResults(msgs []tito.Message) *apiError {
	ids := map[string]bool{}
	for i, m := range msgs {
		for _, tc := range m.ToolCalls {
			ids[tc.ID] = true
		}
		if m.Role == tito.RoleTool && m.ToolCallID != "" && !ids[m.ToolCallID] {
			return invalid(fmt.Sprintf("messages[%d].tool_call_id", i),
				fmt.Sprintf("messages[%d] answers tool call %q, which no earlier assistant message made", i, m.ToolCallID))
		}
	}
	return nil
}

// generate makes the call's model turn (turn.Model.Call: the pause gate, the context window, SGLang, abort on
// a caller gone, the reply appended verbatim, decoded and parsed) on the plan's branch. callStart is when the
// call began: the time to the request, less time held by a pause, is the turn's overhead.
func (ss *session) generate(ctx context.Context, req *chatRequest, p *plan, callStart time.Time) (*callResult, *apiError) {
	m := ss.s.m
	b := p.b
	sp, aerr := ss.s.sampling(req)
	if aerr != nil {
		return nil, aerr
	}
	prior := 0 // the calls of the conversation so far (Kimi K2's ids count them)
	for _, h := range p.hist {
		prior += len(h.render.ToolCalls)
	}
	rid := fmt.Sprintf("%s.%d.%d", ss.trajectoryIDFor(p), b.traj.Turns(), ss.calls)
	r, err := m.Turn.Call(ctx, b.traj, turn.CallRequest{Key: ss.id, IDs: b.ids, RID: rid, Sampling: sp, Since: callStart, ParseLength: true,
		CallIDSeed: rid, PriorCalls: prior, NewCallID: func(i int) string { return fmt.Sprintf("call_%s_%d_%d", shortID(ss.id), ss.calls, i) }})
	if err != nil {
		var ae *turn.AbortError
		var ie *turn.InvariantError
		switch {
		case errors.Is(err, turn.ErrContextFull):
			return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages", code: "context_length_exceeded",
				msg: fmt.Sprintf("session %q: the conversation is %d tokens, the model's context window is %d", ss.id, b.traj.Len(), m.Turn.ContextWindow)}
		case errors.Is(err, sglang.ErrContextLength):
			return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages", code: "context_length_exceeded", msg: err.Error()}
		case errors.As(err, &ae):
			return nil, &apiError{status: http.StatusBadGateway, typ: "server_error", code: "aborted", msg: fmt.Sprintf("session %q: SGLang aborted the request: %s", ss.id, ae.Message)}
		case errors.As(err, &ie):
			return nil, &apiError{status: http.StatusBadGateway, typ: "server_error", code: "invariant", msg: fmt.Sprintf("session %q: %v", ss.id, err)}
		case errors.Is(err, sglang.ErrBadRequest): // what agentrt cannot check itself (a JSON schema SGLang cannot compile)
			return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_request",
				msg: fmt.Sprintf("session %q: SGLang refused the request: %v", ss.id, err)}
		}
		return nil, &apiError{status: http.StatusBadGateway, typ: "server_error", code: "upstream_error", msg: fmt.Sprintf("session %q: /generate: %v", ss.id, err)}
	}
	// From here the reply is in the trajectory: a parser failure still answers (with the raw text as content).
	b.lastStop = r.Stop
	res := &callResult{session: ss.id, trajectoryID: ss.trajectoryIDFor(p), rid: rid, turn: b.traj.Turns() - 1, created: time.Now().Unix(),
		finish: "stop", promptTokens: r.InputTokens, completionTokens: len(r.OutputIDs), cachedTokens: r.CachedTokens, drift: p.drift}
	if r.Length() {
		res.finish = "length"
	}
	b.lastFinal = res.finish
	render := r.Message()
	normal := r.Text
	if r.ParseErr != nil {
		b.parseErrs["parser_failure"]++
		ss.s.log.Warn("frontdoor: parser failed; the reply goes back as text", "session", ss.id, "err", r.ParseErr)
	} else {
		if m.Turn.Reasoning != family.ReasoningHarmony { // harmony's normal text has lost its analysis
			normal = r.NormalText
		}
		for _, pe := range r.ParseErrors {
			b.parseErrs[pe.Reason]++
		}
		res.parseErrors = r.ParseErrors
	}
	res.reasoning, res.content = turn.SplitReasoning(m.Turn.Reasoning, normal)
	res.calls = render.ToolCalls
	view := tito.Message{Role: tito.RoleAssistant, Content: res.content, ReasoningContent: res.reasoning, ToolCalls: render.ToolCalls}
	p.hist = append(p.hist, histMsg{render: render, view: view})
	b.hist = p.hist
	return res, nil
}

func (ss *session) trajectoryIDFor(p *plan) string {
	if !p.fresh {
		return ss.trajectoryID(p.b)
	}
	if p.drift != nil && p.drift.Policy == DriftRealign {
		return ss.trajectoryID(ss.current())
	}
	return ss.branchID(len(ss.branches))
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[len(id)-12:]
	}
	return id
}

// sampling builds a call's sampling params: the agent's (every one of them), the call's overrides and constraint
// over them, and the call's max_tokens (at most the limit; turn.Model.Call cuts it to the context window's room).
// Params SGLang would refuse are refused here, naming the API's parameter.
func (s *Server) sampling(req *chatRequest) (turn.Sampling, *apiError) {
	m := s.m
	limit := s.cfg.MaxNewTokens
	if limit == 0 {
		limit = m.Sampling.MaxNewTokens
	}
	o := turn.Sampling{MaxNewTokens: m.Sampling.MaxNewTokens, Temperature: req.Temperature, TopP: req.TopP, MinP: req.MinP,
		PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty, RepetitionPenalty: req.RepetitionPenalty,
		TopK: req.TopK, SamplingSeed: req.Seed}
	if req.MaxCompletionTokens != nil {
		o.MaxNewTokens = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		o.MaxNewTokens = *req.MaxTokens
	}
	if o.MaxNewTokens > limit {
		return o, invalid("max_tokens", fmt.Sprintf("max_tokens %d is more than this server allows (%d, frontdoor.max_new_tokens)", o.MaxNewTokens, limit))
	}
	if t := bytes.TrimSpace(req.Stop); len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(t, &o.Stop); err != nil {
			return o, invalid("stop", "stop must be a string or a list of strings")
		}
	}
	if req.constraint != "" {
		c := req.constraint
		o.JSONSchema = &c
	}
	sp := m.Sampling.Merge(o)
	p := sp.Params(sp.MaxNewTokens, m.Turn.ExtraStopIDs)
	if err := p.Verify(); err != nil {
		var pe *sglang.ParamError
		if errors.As(err, &pe) {
			return sp, invalid(apiParam(pe.Param, req), pe.Msg)
		}
		return sp, invalid("", err.Error())
	}
	return sp, nil
}

// apiParam is the name the APIs give an SGLang sampling param.
func apiParam(p string, req *chatRequest) string {
	switch p {
	case "max_new_tokens":
		return "max_tokens"
	case "sampling_seed":
		return "seed"
	case "json_schema", "regex", "ebnf", "structural_tag":
		if req.constraint != "" {
			return req.constraintParam
		}
	}
	return p
}

// end ends the session once: every branch with a reply is finished and handed to the sink. reason is the status
// reason of the current branch ("" for an explicit end); body, if set, carries the caller's reward and label.
func (ss *session) end(ctx context.Context, reason string, body *endBody) ([]string, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.endLocked(ctx, reason, body)
}

func (ss *session) endLocked(ctx context.Context, reason string, body *endBody) ([]string, error) {
	if ss.ended {
		return nil, nil
	}
	ss.ended = true
	if ss.idle != nil {
		ss.idle.Stop()
	}
	defer ss.s.forget(ss.id)
	var ids []string
	var errs []error
	for _, b := range ss.branches {
		if b.traj.Turns() == 0 {
			continue
		}
		if b.status == "" {
			b.status, b.reason = statusOf(b.lastFinal), reason
			if b.reason == "" && b.lastFinal == "length" {
				b.reason = "length"
			}
		}
		t := ss.finish(b, body)
		raw, err := t.AppendJSON(nil)
		if err == nil {
			err = ss.s.sink(context.WithoutCancel(ctx), Emitted{Session: ss.id, TrajectoryID: t.ID, GroupID: t.GroupID, Index: b.index, Trajectory: raw, Traj: t})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("trajectory %s: %w", t.ID, err))
			ss.s.log.Error("frontdoor: could not emit a trajectory", "session", ss.id, "trajectory", t.ID, "err", err)
			continue
		}
		ids = append(ids, t.ID)
	}
	return ids, errors.Join(errs...)
}

// finish fills a branch's trajectory as the native loop fills an episode's: ids, status, messages, metrics,
// warnings, the drift audit and provenance.
func (ss *session) finish(b *branch, body *endBody) *tito.Trajectory {
	t := b.traj
	t.DropPending()
	t.ID, t.ItemID, t.GroupID, t.SampleIndex = ss.trajectoryID(b), ss.id, ss.groupID(), b.index
	t.Status, t.StatusReason = b.status, b.reason
	if err := t.Validate(); err != nil {
		t.Status, t.StatusReason, t.Error = "failed", "invariant", err.Error()
	}
	msgs := make([]tito.Message, len(b.hist))
	for i, h := range b.hist {
		msgs[i] = h.render
	}
	t.Messages, _ = json.Marshal(msgs)
	if body != nil {
		t.Reward, t.Label, t.Metadata = body.Reward, body.Label, body.Metadata
		if body.GroupID != "" {
			t.GroupID = body.GroupID
		}
	}
	if t.Reward == nil && ss.s.m.Reward != nil {
		r, metrics, err := ss.s.m.Reward(context.Background(), msgs, t.Status, t.StatusReason, t.Label, t.Metadata)
		if err != nil {
			t.Warnings = append(t.Warnings, fmt.Sprintf("reward: %v", err))
		} else {
			t.Reward = r
			for k, v := range metrics {
				t.SetMetric(k, v)
			}
		}
	}
	for reason, n := range b.parseErrs {
		t.SetMetric("parse_errors."+reason, float64(n))
	}
	for k, n := range ss.drift {
		t.SetMetric("drift."+k, float64(n))
	}
	if ss.dropped > 0 {
		t.SetMetric("reasoning_dropped_calls", float64(ss.dropped))
	}
	t.SetMetric("turns", float64(t.Turns()))
	var warns []string
	for _, r := range b.realigns {
		warns = append(warns, fmt.Sprintf("realigned at token %d (messages[%d], %s): %d tokens after it were replaced by the re-rendered conversation",
			r.Token, r.Message, r.Reason, r.Dropped))
	}
	if b.forkOf != nil {
		warns = append(warns, fmt.Sprintf("forked from %s at token %d (messages[%d], %s)", b.forkOf.From, b.forkOf.Token, b.forkOf.Message, b.forkOf.Reason))
	}
	sort.Strings(warns)
	t.Warnings = append(t.Warnings, warns...)
	t.Audit(ss.s.m.Turn.Tokenizer)
	for k, v := range ss.s.m.Provenance {
		t.SetProvenance(k, v)
	}
	fd := map[string]any{"session": ss.id, "apis": ss.apis, "drift_policy": ss.s.cfg.Drift}
	if len(b.realigns) > 0 {
		fd["realigns"] = b.realigns
	}
	if b.forkOf != nil {
		fd["forked_from"] = b.forkOf
	}
	t.SetProvenance("frontdoor", fd)
	t.SetProvenance(tito.ProvSamplingParams, ss.s.m.Sampling)
	return t
}

// statusOf is a branch's status from its last reply's finish reason: a reply cut by max_tokens is truncated.
func statusOf(finish string) string {
	if finish == "length" {
		return "truncated"
	}
	return "completed"
}
