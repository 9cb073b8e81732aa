// Package fakerunner is a stream.Runner that makes synthetic trajectories, for the stream's tests, the Python
// client's tests (through devserver) and the stream benchmark. It is safe for concurrent use.
package fakerunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/runtime/stream"
)

// Runner runs every sample of a request by building a synthetic trajectory of Tokens tokens in Turns turns.
type Runner struct {
	// Tokens is the length of each trajectory (default 4096).
	Tokens int
	// Turns is the number of model turns per trajectory (default 2); each one is a per-turn event.
	Turns int
	// Delay is how long each episode takes.
	Delay time.Duration
	// Concurrency bounds the episodes running at once per request (default 64).
	Concurrency int
	// Gate, when non-nil, makes every episode wait for a value (or for the request's cancellation).
	Gate chan struct{}
	// Reuse builds one trajectory per weight version and sends it for every sample (for benchmarks that
	// measure the stream, not the generator).
	Reuse bool

	// Started counts the episodes Run has started (a resumed request starts only its pending samples).
	Started atomic.Int64

	mu      sync.Mutex
	reused  map[string]json.RawMessage
	paused  string
	weights []string
	calls   []string
}

// Calls returns the control calls made so far ("pause:abort", "resume", "update_weights:/path@v2").
func (r *Runner) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// Validate rejects the agent "unknown" and sampling with a negative temperature; the agent "panic-validate"
// panics (the server must survive it).
func (r *Runner) Validate(req stream.RolloutRequest) error {
	if req.Agent == "panic-validate" {
		panic("fakerunner: asked to panic in Validate")
	}
	if req.Agent == "unknown" {
		return fmt.Errorf("unknown agent %q", req.Agent)
	}
	if len(req.Sampling) > 0 {
		var sp struct {
			Temperature *float64 `json:"temperature"`
		}
		if err := json.Unmarshal(req.Sampling, &sp); err != nil {
			return fmt.Errorf("sampling: %v", err)
		}
		if sp.Temperature != nil && *sp.Temperature < 0 {
			return fmt.Errorf("sampling.temperature must be >= 0, got %v", *sp.Temperature)
		}
	}
	return nil
}

// Run emits one trajectory per pending sample. The agent "fail" makes Run return an error after emitting;
// the agent "panic" panics. Started counts the episodes started.
func (r *Runner) Run(ctx context.Context, req stream.RolloutRequest, out stream.Emitter) error {
	if req.Agent == "panic" {
		panic("fakerunner: asked to panic")
	}
	conc := r.Concurrency
	if conc <= 0 {
		conc = 64
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, it := range req.Items {
		for i := 0; i < it.N; i++ {
			if !req.Pending(it.ID, i) {
				continue // finished before a restart
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			wg.Add(1)
			r.Started.Add(1)
			go func(it stream.Item, i int) {
				defer wg.Done()
				defer func() { <-sem }()
				if err := r.episode(ctx, req, it, i, out); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}(it, i)
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if req.Agent == "fail" {
		return errors.New("fakerunner: agent fail failed")
	}
	return firstErr
}

func (r *Runner) episode(ctx context.Context, req stream.RolloutRequest, it stream.Item, i int, out stream.Emitter) error {
	if r.Gate != nil {
		select {
		case <-r.Gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	turns := r.Turns
	if turns <= 0 {
		turns = 2
	}
	for t := 0; t < turns; t++ {
		out.Turn(stream.TurnEvent{ItemID: it.ID, SampleIndex: i, Turn: t, Data: json.RawMessage(`{"kind":"turn_end"}`)})
	}
	r.mu.Lock()
	wv := "default"
	if len(r.weights) > 0 {
		wv = r.weights[len(r.weights)-1]
	}
	r.mu.Unlock()
	tokens := r.Tokens
	if tokens <= 0 {
		tokens = 4096
	}
	var traj json.RawMessage
	if r.Reuse {
		r.mu.Lock()
		if r.reused == nil {
			r.reused = map[string]json.RawMessage{}
		}
		traj = r.reused[wv]
		if traj == nil {
			traj = Trajectory("reused", "x", 0, tokens, turns, wv)
			r.reused[wv] = traj
		}
		r.mu.Unlock()
	} else {
		traj = Trajectory(req.ID, it.ID, i, tokens, turns, wv)
	}
	return out.Finish(ctx, stream.Finished{ItemID: it.ID, SampleIndex: i, Trajectory: traj})
}

// Pause records the call.
func (r *Runner) Pause(ctx context.Context, mode string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = mode
	r.calls = append(r.calls, "pause:"+mode)
	return nil
}

// Resume records the call.
func (r *Runner) Resume(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused == "" {
		return errors.New("fakerunner: not paused")
	}
	r.paused = ""
	r.calls = append(r.calls, "resume")
	return nil
}

// UpdateWeights records the call; later trajectories carry the new weight version.
func (r *Runner) UpdateWeights(ctx context.Context, req stream.UpdateWeightsRequest) error {
	if req.ModelPath == "/missing" {
		return errors.New("fakerunner: model_path /missing does not exist")
	}
	if req.ModelPath == "/panic" {
		panic("fakerunner: asked to panic in UpdateWeights")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := req.WeightVersion
	if v == "" {
		v = strconv.Itoa(len(r.weights) + 1)
	}
	r.weights = append(r.weights, v)
	r.calls = append(r.calls, "update_weights:"+req.ModelPath+"@"+v)
	return nil
}

// Trajectory builds a deterministic synthetic trajectory in the runtime's schema: a prompt segment of a quarter
// of the tokens, then turns alternating response and tool-result prompt segments.
func Trajectory(requestID, itemID string, sample, tokens, turns int, weightVersion string) json.RawMessage {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%d", requestID, itemID, sample)
	rng := rand.New(rand.NewPCG(h.Sum64(), 7))
	if turns < 1 {
		turns = 1
	}
	prompt := tokens / 4
	rest := tokens - prompt
	per := rest / (2*turns - 1)
	type info struct {
		Server        string  `json:"server"`
		RID           string  `json:"rid"`
		WeightVersion string  `json:"weight_version"`
		PromptTokens  int     `json:"prompt_tokens"`
		CachedTokens  int     `json:"cached_tokens"`
		FinishReason  string  `json:"finish_reason"`
		LatencyMS     float64 `json:"latency_ms"`
	}
	type seg struct {
		Kind   string `json:"kind"`
		Offset int    `json:"offset"`
		Length int    `json:"length"`
		Turn   int    `json:"turn"`
		Info   *info  `json:"info,omitempty"`
	}
	// Segments follow tito.Trajectory: the prompt sent in call n and the response it returned share Turn n.
	segs := []seg{{Kind: "prompt", Offset: 0, Length: prompt, Turn: 0}}
	off := prompt
	for t := 0; t < turns; t++ {
		n := per
		if t == turns-1 {
			n = tokens - off
		}
		cached := 0
		if t > 0 {
			cached = off - per // everything but the new tool-result prompt was in the radix cache
		}
		segs = append(segs, seg{Kind: "response", Offset: off, Length: n, Turn: t, Info: &info{Server: "fake",
			RID: fmt.Sprintf("%x-%d", h.Sum64(), t), WeightVersion: weightVersion, PromptTokens: off, CachedTokens: cached,
			FinishReason: "stop", LatencyMS: 1}})
		off += n
		if t < turns-1 {
			segs = append(segs, seg{Kind: "prompt", Offset: off, Length: per, Turn: t + 1})
			off += per
		}
	}
	buf := make([]byte, 0, tokens*30+1024)
	buf = append(buf, `{"token_ids":[`...)
	for i := 0; i < tokens; i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(rng.IntN(151_000)), 10)
	}
	mask := make([]byte, tokens)
	for _, s := range segs {
		if s.Kind == "response" {
			for i := s.Offset; i < s.Offset+s.Length; i++ {
				mask[i] = 1
			}
		}
	}
	buf = append(buf, `],"loss_mask":[`...)
	for i := 0; i < tokens; i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '0'+mask[i])
	}
	buf = append(buf, `],"logprobs":[null`...)
	for i := 1; i < tokens; i++ {
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, math.Log(rng.Float64()*0.999+0.001), 'g', -1, 64)
	}
	buf = append(buf, ']')
	rest2, _ := json.Marshal(map[string]any{
		"id":            fmt.Sprintf("%s/%s/%d", requestID, itemID, sample),
		"item_id":       itemID,
		"sample_index":  sample,
		"segments":      segs,
		"status":        "completed",
		"status_reason": "stop",
		"messages":      []map[string]any{{"role": "user", "content": "synthetic " + itemID}, {"role": "assistant", "content": "done"}},
		"reward":        float64(rng.IntN(2)),
		"provenance":    map[string]any{"model": "fake", "tokenizer_sha256": "0"},
	})
	buf = append(buf, ',')
	buf = append(buf, rest2[1:]...)
	return buf
}
