package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

const threeExprTask = "Compute 12*7, then (3+4)/2 and 100-58 for me."

// samplingConfig turns on every per-sample draw, so that samples have many ways to differ.
func samplingConfig(m *testModel) Config {
	cfg := testConfig(m)
	cfg.ThinkRate, cfg.NonCanonicalRate, cfg.MalformedRate = 0.5, 0.5, 0.2
	return cfg
}

// samplePrompts are a tool-using first turn and a plain one.
func samplePrompts(m *testModel) map[string][]int32 {
	return map[string][]int32{
		"calculator": qwenIDs(m, threeExprTask, calcToolJSON),
		"plain":      qwenIDs(m, "Tell me about the sea."),
	}
}

// stable is a /generate response without the fields that legitimately change between two runs of the same
// request: timings, and the prefix-cache hit (the first run fills the cache).
func stable(t *testing.T, raw []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	meta, _ := v["meta_info"].(map[string]any)
	if meta == nil {
		t.Fatalf("no meta_info: %s", raw)
	}
	for _, k := range []string{"e2e_latency", "response_sent_to_client_ts", "cached_tokens", "cached_tokens_details"} {
		delete(meta, k)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSamplesDifferByRID(t *testing.T) {
	m := qwen(t)
	_, url := start(t, samplingConfig(m), m.Tokenizer)
	_, url2 := start(t, samplingConfig(m), m.Tokenizer)
	for name, ids := range samplePrompts(m) {
		replies := map[string]bool{}
		for i := 0; i < 8; i++ {
			body := map[string]any{"input_ids": ids, "rid": fmt.Sprintf("ep-%d.0", i), "return_logprob": true,
				"sampling_params": map[string]any{"temperature": 1, "max_new_tokens": 2048}}
			g := generate(t, url, body)
			replies[fmt.Sprint(g.OutputIDs)] = true
			// a retry (same rid, same body) gets the same reply, from this server or a fresh one
			for _, u := range []string{url, url2} {
				again := generate(t, u, body)
				if stable(t, again.Raw) != stable(t, g.Raw) {
					t.Errorf("%s rid ep-%d.0: a retry got another response:\n%s\n%s", name, i, g.Raw, again.Raw)
				}
			}
		}
		if len(replies) < 2 {
			t.Errorf("%s: 8 rids at temperature 1 all got the same reply", name)
		}
	}
}

// TestIgnoreRID: with Config.IgnoreRID, sampled replies depend on the prompt alone (two clients with different
// rids see the same workload).
func TestIgnoreRID(t *testing.T) {
	m := qwen(t)
	cfg := samplingConfig(m)
	cfg.IgnoreRID = true
	_, url := start(t, cfg, m.Tokenizer)
	for name, ids := range samplePrompts(m) {
		sp := map[string]any{"temperature": 1, "max_new_tokens": 2048}
		want := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": sp}).OutputIDs
		for i := 0; i < 8; i++ {
			g := generate(t, url, map[string]any{"input_ids": ids, "rid": fmt.Sprintf("ep-%d.0", i), "sampling_params": sp})
			if !slices.Equal(g.OutputIDs, want) {
				t.Errorf("%s rid ep-%d.0: the reply depends on the rid under IgnoreRID", name, i)
			}
		}
	}
}

func TestGreedyIgnoresRID(t *testing.T) {
	m := qwen(t)
	_, url := start(t, samplingConfig(m), m.Tokenizer)
	for name, ids := range samplePrompts(m) {
		want := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"temperature": 0}}).OutputIDs
		for i := 0; i < 8; i++ {
			for _, sp := range []map[string]any{{"temperature": 0}, {"temperature": 0.7, "top_k": 1}, {"temperature": 0, "sampling_seed": i}} {
				g := generate(t, url, map[string]any{"input_ids": ids, "rid": fmt.Sprintf("ep-%d.0", i), "sampling_params": sp})
				if !slices.Equal(g.OutputIDs, want) {
					t.Errorf("%s rid ep-%d.0 %v: greedy reply differs from the rid-less one", name, i, sp)
				}
			}
		}
		// the n samples of a greedy request are the argmax, all the same
		r := post(t, url, "/generate", map[string]any{"input_ids": ids, "rid": "greedy-n", "sampling_params": map[string]any{"temperature": 0, "n": 4}})
		for i, g := range decodeBatch(t, r) {
			if !slices.Equal(g.OutputIDs, want) {
				t.Errorf("%s: greedy n=4 sample %d differs", name, i)
			}
		}
	}
}

func decodeBatch(t *testing.T, r httpResult) []gen {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("/generate: status %d: %s", r.status, r.body)
	}
	var gs []gen
	if err := json.Unmarshal(r.body, &gs); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return gs
}

func TestSamplingSeed(t *testing.T) {
	m := qwen(t)
	_, url := start(t, samplingConfig(m), m.Tokenizer)
	for name, ids := range samplePrompts(m) {
		bySeed := map[string]bool{}
		for seed := 0; seed < 8; seed++ {
			sp := map[string]any{"temperature": 1, "sampling_seed": seed}
			want := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": sp}).OutputIDs
			bySeed[fmt.Sprint(want)] = true
			// the seed, not the rid, picks the sample
			for i := 0; i < 3; i++ {
				g := generate(t, url, map[string]any{"input_ids": ids, "rid": fmt.Sprintf("seed%d-ep-%d.0", seed, i), "sampling_params": sp})
				if !slices.Equal(g.OutputIDs, want) {
					t.Errorf("%s sampling_seed %d: rid %d changed the reply", name, seed, i)
				}
			}
			// SGLang's seeded sampler hashes seed and position only: n samples with one seed agree
			r := post(t, url, "/generate", map[string]any{"input_ids": ids, "sampling_params": map[string]any{"temperature": 1, "sampling_seed": seed, "n": 3}})
			for i, g := range decodeBatch(t, r) {
				if !slices.Equal(g.OutputIDs, want) {
					t.Errorf("%s sampling_seed %d: n=3 sample %d differs", name, seed, i)
				}
			}
		}
		if len(bySeed) < 2 {
			t.Errorf("%s: 8 sampling seeds all got the same reply", name)
		}
		// unseeded n > 1 samples differ, with or without a client rid
		for _, rid := range []any{nil, "group-7"} {
			body := map[string]any{"input_ids": ids, "sampling_params": map[string]any{"temperature": 1, "n": 8}}
			if rid != nil {
				body["rid"] = rid
			}
			seen := map[string]bool{}
			for _, g := range decodeBatch(t, post(t, url, "/generate", body)) {
				seen[fmt.Sprint(g.OutputIDs)] = true
			}
			if len(seen) < 2 {
				t.Errorf("%s rid %v: 8 unseeded samples are all the same", name, rid)
			}
		}
	}
	// a sampling_seed that is not an integer is refused like the other mistyped sampling params
	r := post(t, url, "/generate", map[string]any{"input_ids": []int{1, 2, 3}, "sampling_params": map[string]any{"sampling_seed": "x"}})
	if r.status != http.StatusInternalServerError {
		t.Errorf("sampling_seed \"x\": status %d: %s", r.status, r.body)
	}
}

// TestEpisodesDifferByRID is a GRPO group: episodes of one task with their own rids. Each still calls every
// expression exactly once, in order, then answers; the group's trajectories are not all the same.
func TestEpisodesDifferByRID(t *testing.T) {
	for _, format := range []string{FormatHermes, FormatQwen3Coder, FormatLlama3} {
		t.Run(format, func(t *testing.T) {
			m := qwen(t)
			if format == FormatLlama3 {
				m = llama(t)
			}
			cfg := testConfig(m)
			cfg.ToolFormat, cfg.NonCanonicalRate = format, 0.3
			if format != FormatLlama3 {
				cfg.ThinkRate = 0.3
			}
			_, url := start(t, cfg, m.Tokenizer)
			layouts, trajectories := map[string]bool{}, map[string]bool{}
			for i := 0; i < 8; i++ {
				id := fmt.Sprintf("grp-%d", i)
				ep := runEpisode(t, url, m, format, threeExprTask, id)
				if !slices.Equal(ep.exprs, []string{"12*7", "(3+4)/2", "100-58"}) {
					t.Fatalf("%s: called with %v", id, ep.exprs)
				}
				if !strings.Contains(ep.final, "The answer is 42.") {
					t.Errorf("%s: final answer %q", id, ep.final)
				}
				if format == FormatLlama3 && slices.Max(ep.callsPer) > 1 {
					t.Errorf("%s: llama3 made %v calls per turn", id, ep.callsPer)
				}
				layouts[fmt.Sprint(ep.callsPer)] = true
				last := ep.requests[len(ep.requests)-1]
				trajectories[fmt.Sprint(append(slices.Clone(last), ep.lastOutput...))] = true
				// the same episode id replays the same episode (retries, reruns)
				again := runEpisode(t, url, m, format, threeExprTask, id)
				if !slices.Equal(again.lastOutput, ep.lastOutput) || !slices.Equal(again.requests[len(again.requests)-1], last) {
					t.Errorf("%s: replaying the episode gave another trajectory", id)
				}
			}
			if len(trajectories) < 2 {
				t.Error("8 episodes with different rids have the same trajectory")
			}
			if format != FormatLlama3 && len(layouts) < 2 {
				t.Errorf("8 episodes all spread their calls the same way: %v", layouts)
			}
		})
	}
}

// TestCalledExpressions: the calls already made are read back from every format's rendering, malformed ones
// included, and a repeated expression needs as many calls as it occurs.
func TestCalledExpressions(t *testing.T) {
	exprs := []string{"2+2", "12*7", "2+2", "(3+4)/2"}
	for _, format := range []string{FormatHermes, FormatQwen3Coder, FormatLlama3, FormatMistralNemo} {
		for malformed := -1; malformed < 3; malformed++ {
			c := &conversation{taskIdx: 1, messages: []message{{"system", "s"}, {"user", "task"},
				{"assistant", renderCalls(format, []call{{name: "calculator", args: []kv{{"expression", "2+2"}}}}, malformed)},
				{"user", "<tool_response>\n4\n</tool_response>"},
				{"assistant", renderCalls(format, []call{{name: "calculator", args: []kv{{"expression", "(3+4)/2"}}}}, -1)},
			}}
			got := calledExpressions(c, "expression", exprs)
			if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
				t.Errorf("%s malformed %d: called %v, want %v", format, malformed, got, want)
			}
		}
	}
	// a call to 12+2 is not a call to 2+2, and nothing before the task counts
	c := &conversation{taskIdx: 1, messages: []message{
		{"assistant", `<tool_call>{"name": "calculator", "arguments": {"expression": "2+2"}}</tool_call>`},
		{"user", "task"},
		{"assistant", `<tool_call>{"name": "calculator", "arguments": {"expression": "12+2"}}</tool_call>`},
	}}
	if got := calledExpressions(c, "expression", []string{"2+2"}); got[0] {
		t.Error("12+2 or an assistant message before the task counted as a call to 2+2")
	}
}

// TestWrongAnswerRate: a slipping final answer misreports the last value, for some samples of a group at 0.5
// and for all at 1; the calls are unchanged.
func TestWrongAnswerRate(t *testing.T) {
	m := qwen(t)
	for _, rate := range []float64{0.5, 1} {
		cfg := testConfig(m)
		cfg.WrongAnswerRate = rate
		_, url := start(t, cfg, m.Tokenizer)
		finals := map[string]int{}
		for i := 0; i < 16; i++ {
			ep := runEpisode(t, url, m, FormatHermes, threeExprTask, fmt.Sprintf("slip-%d", i))
			if !slices.Equal(ep.exprs, []string{"12*7", "(3+4)/2", "100-58"}) {
				t.Fatalf("rate %v: called with %v", rate, ep.exprs)
			}
			switch {
			case strings.Contains(ep.final, "The answer is 42."):
				finals["right"]++
			case strings.Contains(ep.final, "The answer is 43."):
				finals["wrong"]++
			default:
				t.Fatalf("rate %v: final answer %q", rate, ep.final)
			}
		}
		if (rate == 1 && finals["right"] > 0) || (rate < 1 && (finals["right"] == 0 || finals["wrong"] == 0)) {
			t.Errorf("rate %v: %v of 16 answers", rate, finals)
		}
	}
	for v, want := range map[string]string{"42": "43", "-1": "0", "3.5": "8", "1e3": "2001", "x": "0"} {
		if got := wrongValue(v); got != want {
			t.Errorf("wrongValue(%q) = %q, want %q", v, got, want)
		}
	}
}
