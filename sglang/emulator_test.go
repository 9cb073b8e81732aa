package sglang_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// These tests run the client against the SGLang emulator (sglang/emulator) with a real Qwen3 tokenizer.

var (
	qwenOnce sync.Once
	qwenTok  *tito.Tokenizer
	qwenErr  error
)

func qwenTokenizer(t testing.TB) *tito.Tokenizer {
	t.Helper()
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		t.Skip("AGENTRT_QWEN3_MODEL is not set: run `source ~/.cache/agentrt/env.sh` (make setup fetches the model folders)")
	}
	qwenOnce.Do(func() {
		var m *tito.Model
		m, qwenErr = tito.LoadModel(dir)
		if qwenErr == nil {
			qwenTok = m.Tokenizer
		}
	})
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenTok
}

// startEmulator serves an emulator on a loopback port for the test's lifetime.
func startEmulator(t testing.TB, mut func(*emulator.Config)) (*emulator.Server, string) {
	t.Helper()
	cfg := emulator.DefaultConfig()
	if mut != nil {
		mut(&cfg)
	}
	srv, err := emulator.New(cfg, qwenTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		hs.Close()
	})
	return srv, hs.URL
}

func newClient(t testing.TB, mut func(*sglang.Config), urls ...string) *sglang.Client {
	t.Helper()
	cfg := sglang.DefaultConfig()
	cfg.Workers = urls
	cfg.Retry.InitialBackoff = time.Millisecond
	cfg.Retry.MaxBackoff = 10 * time.Millisecond
	if mut != nil {
		mut(&cfg)
	}
	c, err := sglang.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func qwenPrompt(tok *tito.Tokenizer, task string) []int32 {
	return tok.Encode("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"+task+"<|im_end|>\n<|im_start|>assistant\n", false)
}

// TestEmulatorGenerate checks one TITO call end to end: stop token kept, logprobs aligned and equal to the
// emulator's published scoring function, input logprobs from logprob_start_len with a null first entry.
func TestEmulatorGenerate(t *testing.T) {
	tok := qwenTokenizer(t)
	_, url := startEmulator(t, nil)
	c := newClient(t, nil, url)
	prompt := qwenPrompt(tok, "Say hello.")
	start := len(prompt) - 5
	resp, err := c.Generate(t.Context(), "ep-1", &sglang.GenerateRequest{
		InputIDs:        prompt,
		SamplingParams:  sglang.SamplingParams{MaxNewTokens: 256, Temperature: new(0.7)},
		ReturnLogprob:   true,
		LogprobStartLen: start,
		RID:             "ep-1.0",
	})
	if err != nil {
		t.Fatal(err)
	}
	m := resp.MetaInfo
	if m.FinishReason.Type != sglang.FinishStop || m.FinishReason.MatchedTokenID != 151645 || resp.OutputIDs[len(resp.OutputIDs)-1] != 151645 {
		t.Errorf("finish %+v, last id %d: want a stop on <|im_end|>, kept in output_ids", m.FinishReason, resp.OutputIDs[len(resp.OutputIDs)-1])
	}
	if m.ID != "ep-1.0" || m.PromptTokens != len(prompt) || m.CompletionTokens != len(resp.OutputIDs) || resp.Server != url {
		t.Errorf("meta %+v server %s", m, resp.Server)
	}
	traj := append(append([]int32{}, prompt...), resp.OutputIDs...)
	for i, e := range m.OutputTokenLogprobs {
		p := len(prompt) + i
		if e.TokenID != traj[p] || e.Null || math.Float64bits(e.Logprob) != math.Float64bits(emulator.Logprob(traj[:p], traj[p])) {
			t.Fatalf("output logprob %d = %+v, want Logprob(traj[:%d]) bit for bit", i, e, p)
		}
	}
	if len(m.InputTokenLogprobs) != len(prompt)-start || !m.InputTokenLogprobs[0].Null {
		t.Fatalf("input logprobs: %d entries (want %d), first %+v (want null)", len(m.InputTokenLogprobs), len(prompt)-start, m.InputTokenLogprobs[0])
	}
	for i, e := range m.InputTokenLogprobs[1:] {
		p := start + 1 + i
		if e.TokenID != prompt[p] || math.Float64bits(e.Logprob) != math.Float64bits(emulator.Logprob(prompt[:p], prompt[p])) {
			t.Fatalf("input logprob at %d = %+v", p, e)
		}
	}
	if got := tok.Decode(resp.OutputIDs[:len(resp.OutputIDs)-1], false); got != resp.Text {
		t.Errorf("text %q != decode(output_ids minus stop) %q", resp.Text, got)
	}
}

// TestEmulatorAffinityReusesCache runs multi-turn episodes over three emulators: every turn of an episode
// lands on its home worker, so each later turn finds its whole history in that worker's radix cache.
func TestEmulatorAffinityReusesCache(t *testing.T) {
	tok := qwenTokenizer(t)
	var urls []string
	for range 3 {
		_, u := startEmulator(t, nil)
		urls = append(urls, u)
	}
	c := newClient(t, nil, urls...)
	servers := map[string]bool{}
	for e := range 9 {
		ep := fmt.Sprintf("episode-%d", e)
		ids := qwenPrompt(tok, fmt.Sprintf("Tell me fact number %d.", e))
		for turn := range 3 {
			resp, err := c.Generate(t.Context(), ep, &sglang.GenerateRequest{InputIDs: ids, SamplingParams: sglang.SamplingParams{MaxNewTokens: 64}})
			if err != nil {
				t.Fatal(err)
			}
			servers[resp.Server] = true
			if resp.Server != c.Rank(ep)[0] {
				t.Fatalf("%s turn %d on %s, home %s", ep, turn, resp.Server, c.Rank(ep)[0])
			}
			if turn > 0 && resp.MetaInfo.CachedTokens != len(ids)-len(tok.Encode("\n<|im_start|>user\nGo on.<|im_end|>\n<|im_start|>assistant\n", false))-1 {
				t.Errorf("%s turn %d: cached_tokens %d of %d prompt tokens: the previous turn's prefix was not reused",
					ep, turn, resp.MetaInfo.CachedTokens, len(ids))
			}
			ids = append(append(ids, resp.OutputIDs...), tok.Encode("\n<|im_start|>user\nGo on.<|im_end|>\n<|im_start|>assistant\n", false)...)
		}
	}
	if len(servers) < 2 {
		t.Errorf("9 episodes used only %v", servers)
	}
}

// TestEmulatorFaultsRetried: 503s, 500s, connection resets and truncated bodies are retried until a clean
// answer, and the answers are still exact.
func TestEmulatorFaultsRetried(t *testing.T) {
	tok := qwenTokenizer(t)
	_, url := startEmulator(t, func(c *emulator.Config) {
		c.Seed = 7
		c.Faults = emulator.Faults{HTTP503: 0.15, HTTP500: 0.1, Reset: 0.1, Truncate: 0.1}
	})
	c := newClient(t, func(c *sglang.Config) { c.Retry.MaxAttempts = 20; c.UnhealthyAfter = 1000 }, url)
	prompt := qwenPrompt(tok, "Count to three.")
	for i := range 40 {
		resp, err := c.Generate(t.Context(), "ep", &sglang.GenerateRequest{
			InputIDs: prompt, SamplingParams: sglang.SamplingParams{MaxNewTokens: 32}, ReturnLogprob: true, LogprobStartLen: -1,
			RID: fmt.Sprint("req-", i),
		})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if len(resp.MetaInfo.OutputTokenLogprobs) != len(resp.OutputIDs) {
			t.Fatalf("request %d: misaligned logprobs", i)
		}
	}
	if s := c.Stats(); s.Retries == 0 || s.Workers[0].Failures == 0 {
		t.Errorf("stats %+v: with a 45%% fault rate some retries were expected", s)
	}
}

// TestEmulatorContextLengthNotRetried: the emulator's context-length 400 is classified and not retried.
func TestEmulatorContextLengthNotRetried(t *testing.T) {
	tok := qwenTokenizer(t)
	_, url := startEmulator(t, func(c *emulator.Config) { c.ContextLength = 64 })
	c := newClient(t, nil, url)
	long := qwenPrompt(tok, strings.Repeat("word ", 100))
	_, err := c.Generate(t.Context(), "ep", &sglang.GenerateRequest{InputIDs: long, SamplingParams: sglang.SamplingParams{MaxNewTokens: 8}})
	var e *sglang.Error
	if !errors.Is(err, sglang.ErrContextLength) || !errors.As(err, &e) || e.Attempts != 1 {
		t.Fatalf("err = %v, want ErrContextLength after 1 attempt", err)
	}
	if n, err := c.MaxModelLen(t.Context(), ""); err != nil || n != 64 {
		t.Errorf("MaxModelLen = %d, %v; want 64", n, err)
	}
}

// TestEmulatorStallCutByAttemptTimeout: a stalled attempt is abandoned at Retry.AttemptTimeout and retried.
func TestEmulatorStallCutByAttemptTimeout(t *testing.T) {
	tok := qwenTokenizer(t)
	_, url := startEmulator(t, func(c *emulator.Config) {
		c.Seed = 3
		c.Faults = emulator.Faults{Stall: 0.5, StallFor: time.Hour}
	})
	c := newClient(t, func(c *sglang.Config) {
		// Long enough that an answer that is not stalled comes back within it on a loaded machine.
		c.Retry.AttemptTimeout = time.Second
		c.Retry.MaxAttempts = 30
		c.UnhealthyAfter = 1000
	}, url)
	for i := range 6 {
		if _, err := c.Generate(t.Context(), "ep", &sglang.GenerateRequest{InputIDs: qwenPrompt(tok, "Hi."), SamplingParams: sglang.SamplingParams{MaxNewTokens: 8}, RID: fmt.Sprint("s", i)}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if c.Stats().Retries == 0 {
		t.Error("no retries with a 50% stall rate")
	}
}

// TestEmulatorAbortAndPause: AbortRequest and PauseGeneration(abort) end a running generation with a typed
// abort carrying the partial output; UpdateWeightsFromDisk changes the weight_version later responses carry.
func TestEmulatorAbortAndPause(t *testing.T) {
	tok := qwenTokenizer(t)
	emu, url := startEmulator(t, func(c *emulator.Config) {
		c.Latency = emulator.Latency{PerOutputToken: 20 * time.Millisecond}
		c.Policy = emulator.PolicyAgentic
	})
	c := newClient(t, nil, url)
	run := func(rid string) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Generate(t.Context(), "ep", &sglang.GenerateRequest{
				InputIDs:       qwenPrompt(tok, "Write a long story about a lighthouse keeper."),
				SamplingParams: sglang.SamplingParams{MaxNewTokens: 4000, IgnoreEOS: true}, RID: rid,
			})
			done <- err
		}()
		return done
	}
	waitAbort := func(done chan error, abort func() error) error {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case err := <-done:
				return err
			case <-tick.C:
				if err := abort(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	err := waitAbort(run("story-1"), func() error { return c.AbortRequest(t.Context(), "story-1") })
	var ae *sglang.AbortError
	if !errors.Is(err, sglang.ErrAborted) || !errors.As(err, &ae) || ae.Response == nil || ae.Response.MetaInfo.ID != "story-1" {
		t.Fatalf("abort: %v", err)
	}

	err = waitAbort(run("story-2"), func() error { return c.PauseGeneration(t.Context(), "", sglang.PauseAbort) })
	if !errors.Is(err, sglang.ErrAborted) {
		t.Fatalf("pause(abort): %v", err)
	}
	wv := "step-1"
	if _, err := c.UpdateWeightsFromDisk(t.Context(), "", &sglang.UpdateWeightsFromDiskRequest{ModelPath: "/ckpt/step-1", WeightVersion: &wv}); err != nil {
		t.Fatal(err)
	}
	if err := c.ContinueGeneration(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Generate(t.Context(), "ep", &sglang.GenerateRequest{InputIDs: qwenPrompt(tok, "Hi."), SamplingParams: sglang.SamplingParams{MaxNewTokens: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.MetaInfo.WeightVersion != "step-1" || emu.WeightVersion() != "step-1" {
		t.Errorf("weight_version %q after the update", resp.MetaInfo.WeightVersion)
	}
	mi, err := c.ModelInfo(t.Context(), "")
	if err != nil || mi.WeightVersion != "step-1" {
		t.Errorf("model_info %+v, %v", mi, err)
	}
	if err := c.FlushCache(t.Context(), ""); err != nil {
		t.Errorf("flush_cache on an idle server: %v", err)
	}
	if err := c.Health(t.Context(), ""); err != nil {
		t.Errorf("health: %v", err)
	}
}

// TestEmulatorMatchLimit checks SGLang's radix match limit (Req._compute_max_prefix_len): with logprobs asked
// from logprob_start_len >= 0 the match stops there, so a repeated prompt sent with 0 finds nothing cached; with
// -1 (output logprobs only) it finds all but the last token; with k it finds k.
func TestEmulatorMatchLimit(t *testing.T) {
	tok := qwenTokenizer(t)
	_, url := startEmulator(t, nil)
	c := newClient(t, nil, url)
	prompt := qwenPrompt(tok, "Say hello.")
	for i, tc := range []struct {
		start, want int
	}{{-1, 0}, {0, 0}, {-1, len(prompt) - 1}, {5, 5}, {len(prompt) - 1, len(prompt) - 1}} {
		resp, err := c.Generate(t.Context(), "ep", &sglang.GenerateRequest{InputIDs: prompt,
			SamplingParams: sglang.SamplingParams{MaxNewTokens: 8}, ReturnLogprob: true, LogprobStartLen: tc.start})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.MetaInfo.CachedTokens; got != tc.want {
			t.Errorf("call %d (logprob_start_len %d): cached_tokens %d, want %d", i, tc.start, got, tc.want)
		}
		wantIn := 0
		if tc.start >= 0 {
			wantIn = len(prompt) - tc.start
		}
		if len(resp.MetaInfo.InputTokenLogprobs) != wantIn {
			t.Errorf("call %d: %d input logprobs, want %d", i, len(resp.MetaInfo.InputTokenLogprobs), wantIn)
		}
	}
}

// The adaptive limit follows the emulator's /v1/loads: from its initial 2 it grows while the KV pool has room
// and requests wait on agentrt's side (here: the emulator is paused, so the pool stays empty while requests pile
// up), and every request completes once generation continues.
func TestEmulatorAdaptiveLimit(t *testing.T) {
	tok := qwenTokenizer(t)
	prompt := qwenPrompt(tok, "Count to ten.")
	srv, url := startEmulator(t, func(c *emulator.Config) {
		c.KVTokens = (len(prompt) + 64) * 12
		c.Latency = emulator.Latency{PerOutputToken: 100 * time.Microsecond}
	})
	c := newClient(t, func(c *sglang.Config) {
		c.MaxInFlightPerWorker = 16
		c.Adaptive = sglang.AdaptiveConfig{Enabled: true, Initial: 2, Min: 2, Increase: 2, Interval: 5 * time.Millisecond}
	}, url)
	if l, err := c.Loads(t.Context(), url); err != nil || l.TokenUsage != 0 || l.Running != 0 {
		t.Fatalf("Loads at rest = %+v, %v", l, err)
	}
	if err := c.PauseGeneration(t.Context(), url, "in_place"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			resp, err := c.Generate(t.Context(), "", &sglang.GenerateRequest{InputIDs: prompt, RID: fmt.Sprint("ad-", i),
				SamplingParams: sglang.SamplingParams{MaxNewTokens: 64, IgnoreEOS: true}})
			if err != nil || len(resp.OutputIDs) != 64 {
				t.Errorf("request %d: %v", i, err)
			}
		})
	}
	testutil.Until(t, "the adaptive limit to grow from 2 to the ceiling of 16", func() bool { return c.Stats().Workers[0].Limit == 16 })
	if err := c.ContinueGeneration(t.Context(), url); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("limit %d, %d retractions", c.Stats().Workers[0].Limit, srv.Retractions())
}
