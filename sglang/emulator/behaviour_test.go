package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func qwenIDs(m *testModel, task string, tools ...string) []int32 {
	return m.Tokenizer.Encode(qwenPrompt("You are a helpful assistant.", task, tools...), false)
}

func TestStopToken(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	ids := qwenIDs(m, "Tell me something.")
	g := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 512}})
	last := g.OutputIDs[len(g.OutputIDs)-1]
	if last != 151645 {
		t.Fatalf("output_ids end with %d, want <|im_end|> 151645", last)
	}
	if f := g.finish(); f["type"] != "stop" || f["matched"] != float64(151645) {
		t.Errorf("finish_reason %v", f)
	}
	if want := m.Tokenizer.Decode(g.OutputIDs[:len(g.OutputIDs)-1], true); g.Text != want || strings.Contains(g.Text, "<|im_end|>") {
		t.Errorf("text %q, want the decoded ids without the stop token %q", g.Text, want)
	}
	if g.num("completion_tokens") != len(g.OutputIDs) || g.num("prompt_tokens") != len(ids) {
		t.Errorf("completion_tokens %d prompt_tokens %d", g.num("completion_tokens"), g.num("prompt_tokens"))
	}
	// no_stop_trim + skip_special_tokens=false keeps the stop token in text; output_ids never change
	g2 := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 512, "no_stop_trim": true, "skip_special_tokens": false}})
	if !slices.Equal(g.OutputIDs, g2.OutputIDs) || g2.Text != g.Text+"<|im_end|>" {
		t.Errorf("no_stop_trim: text %q ids %v", g2.Text, g2.OutputIDs)
	}
	// a request stop_token_ids hit inside the reply stops there
	stopAt := g.OutputIDs[2]
	g3 := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 512, "stop_token_ids": []int32{stopAt}}})
	if len(g3.OutputIDs) != 3 || g3.finish()["matched"] != float64(stopAt) {
		t.Errorf("stop_token_ids %d: ids %v finish %v", stopAt, g3.OutputIDs, g3.finish())
	}
	// a stop string: matched is the string, text cut before it
	word := strings.Fields(g.Text)[1]
	g4 := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 512, "stop": word}})
	if g4.finish()["matched"] != word || strings.Contains(g4.Text, word) || !strings.HasPrefix(g.Text, g4.Text) {
		t.Errorf("stop %q: text %q finish %v", word, g4.Text, g4.finish())
	}
}

func TestLength(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	ids := qwenIDs(m, "Tell me something.")
	full := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 512}})
	n := len(full.OutputIDs)
	for _, max := range []int{1, n - 1, n} {
		g := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": max}})
		if len(g.OutputIDs) != max || !slices.Equal(g.OutputIDs, full.OutputIDs[:max]) {
			t.Errorf("max_new_tokens %d: %d ids", max, len(g.OutputIDs))
		}
		// the length check runs before the EOS check: max == n ends on the stop token yet says length
		if f := g.finish(); f["type"] != "length" || f["length"] != float64(max) {
			t.Errorf("max_new_tokens %d: finish_reason %v", max, f)
		}
	}
	g := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": n + 1}})
	if g.finish()["type"] != "stop" {
		t.Errorf("max_new_tokens n+1: %v", g.finish())
	}
	// ignore_eos generates to the limit
	g = generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 2*n + 3, "ignore_eos": true}})
	if len(g.OutputIDs) != 2*n+3 || g.finish()["type"] != "length" {
		t.Errorf("ignore_eos: %d ids, %v", len(g.OutputIDs), g.finish())
	}
	// max_new_tokens 0: nothing
	g = generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 0}})
	if len(g.OutputIDs) != 0 || g.finish()["length"] != float64(0) {
		t.Errorf("max_new_tokens 0: %v %v", g.OutputIDs, g.finish())
	}
}

// recompute is what a client does: the logprob of trajectory position p from the trajectory alone.
func recompute(traj []int32, p int) float64 {
	return Logprob(traj[max(0, p-LogprobWindow):p], traj[p])
}

func TestLogprobAlignment(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	ids := qwenIDs(m, "What is 2+3?", calcToolJSON)
	for _, k := range []int{0, 1, len(ids) / 2, len(ids) - 1, len(ids)} {
		t.Run(fmt.Sprint("logprob_start_len=", k), func(t *testing.T) {
			r := post(t, url, "/generate", map[string]any{"input_ids": ids, "return_logprob": true, "logprob_start_len": k, "top_logprobs_num": 3, "token_ids_logprob": []int{0, 151645}})
			var resp struct {
				OutputIDs []int32 `json:"output_ids"`
				MetaInfo  struct {
					PromptTokens int               `json:"prompt_tokens"`
					In           [][3]any          `json:"input_token_logprobs"`
					Out          [][3]any          `json:"output_token_logprobs"`
					InTop        []json.RawMessage `json:"input_top_logprobs"`
					OutTop       [][][3]any        `json:"output_top_logprobs"`
					OutIDs       [][][3]any        `json:"output_token_ids_logprobs"`
				} `json:"meta_info"`
			}
			if err := json.Unmarshal(r.body, &resp); err != nil {
				t.Fatalf("%v: %s", err, r.body)
			}
			mi := resp.MetaInfo
			if len(mi.In) != mi.PromptTokens-k {
				t.Fatalf("len(input_token_logprobs) = %d, want prompt_tokens - logprob_start_len = %d", len(mi.In), mi.PromptTokens-k)
			}
			traj := append(slices.Clone(ids), resp.OutputIDs...)
			for j, e := range mi.In {
				p := k + j
				if int32(e[1].(float64)) != ids[p] {
					t.Fatalf("input_token_logprobs[%d] id %v, want %d", j, e[1], ids[p])
				}
				if j == 0 {
					if e[0] != nil {
						t.Errorf("input_token_logprobs[0] = %v, want null", e[0])
					}
					continue
				}
				if e[0].(float64) != recompute(traj, p) {
					t.Errorf("input_token_logprobs[%d] = %v, recomputed %v", j, e[0], recompute(traj, p))
				}
			}
			if len(mi.Out) != len(resp.OutputIDs) {
				t.Fatalf("%d output logprobs for %d ids", len(mi.Out), len(resp.OutputIDs))
			}
			for i, e := range mi.Out {
				p := len(ids) + i
				if int32(e[1].(float64)) != resp.OutputIDs[i] || e[0].(float64) != recompute(traj, p) || e[2] != nil {
					t.Errorf("output_token_logprobs[%d] = %v, want [%v, %d, null]", i, e, recompute(traj, p), resp.OutputIDs[i])
				}
				top := mi.OutTop[i]
				if len(top) != 3 || !slices.IsSortedFunc(top, func(a, b [3]any) int { return -cmpF(a[0].(float64), b[0].(float64)) }) {
					t.Errorf("output_top_logprobs[%d] = %v: want 3 entries, best first", i, top)
				}
				for _, e := range mi.OutIDs[i] {
					if e[0].(float64) != Logprob(traj[max(0, p-3):p], int32(e[1].(float64))) {
						t.Errorf("output_token_ids_logprobs[%d] = %v", i, e)
					}
				}
			}
			if len(mi.InTop) != len(mi.In) || (len(mi.InTop) > 0 && string(mi.InTop[0]) != "null") {
				t.Errorf("input_top_logprobs: %d entries, first %s", len(mi.InTop), mi.InTop[0])
			}
		})
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestLogprobPython recomputes Logprob with the Python port in its documentation: bit for bit.
func TestLogprobPython(t *testing.T) {
	py := os.Getenv("AGENTRT_GOLDEN_PYTHON")
	if py == "" {
		var err error
		if py, err = exec.LookPath("python3"); err != nil {
			t.Skip("no python: set AGENTRT_GOLDEN_PYTHON")
		}
	}
	cases := [][]int32{{5}, {151644, 8}, {1, 2, 3, 4, 5}, {-1, 0, 2147483647, 151645}, {198, 151657, 198, 4913, 606}}
	script := `import json, sys
def logprob(prefix, tid):
    h = 0xcbf29ce484222325
    for x in list(prefix[-3:]) + [tid]:
        for b in (x & 0xffffffff).to_bytes(4, "little"):
            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    u = (h >> 11) * 2.0**-53
    return -10.0 * u * u * u
for c in json.load(sys.stdin):
    print(repr(logprob(c[:-1], c[-1])))
`
	in, _ := json.Marshal(cases)
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	lines := strings.Fields(string(out))
	for i, c := range cases {
		want, err := strconv.ParseFloat(lines[i], 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := Logprob(c[:len(c)-1], c[len(c)-1]); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("Logprob(%v) = %v, python %v", c, got, want)
		}
	}
}

func TestCachedTokens(t *testing.T) {
	m := qwen(t)
	srv, url := start(t, testConfig(m), m.Tokenizer)
	turn1 := qwenIDs(m, "What is 12*7?", calcToolJSON)
	g1 := generate(t, url, map[string]any{"input_ids": turn1})
	if g1.num("cached_tokens") != 0 || g1.MetaInfo["cached_tokens_details"] != nil {
		t.Fatalf("first request: cached_tokens %d details %v", g1.num("cached_tokens"), g1.MetaInfo["cached_tokens_details"])
	}
	// turn 2 = turn 1 + its output + template glue + tool response: everything but the last output id is cached
	turn2 := append(append(slices.Clone(turn1), g1.OutputIDs...), m.Tokenizer.Encode(qwenToolTurn("84"), false)...)
	g2 := generate(t, url, map[string]any{"input_ids": turn2})
	if want := len(turn1) + len(g1.OutputIDs) - 1; g2.num("cached_tokens") != want {
		t.Errorf("turn 2: cached_tokens %d, want %d", g2.num("cached_tokens"), want)
	}
	if d, _ := g2.MetaInfo["cached_tokens_details"].(map[string]any); d["device"] != float64(g2.num("cached_tokens")) {
		t.Errorf("cached_tokens_details %v", g2.MetaInfo["cached_tokens_details"])
	}
	// the same prompt again: all but one token (at least one is always recomputed)
	if g := generate(t, url, map[string]any{"input_ids": turn2}); g.num("cached_tokens") != len(turn2)-1 {
		t.Errorf("repeat: cached_tokens %d, want %d", g.num("cached_tokens"), len(turn2)-1)
	}
	// extra_key namespaces the cache
	if g := generate(t, url, map[string]any{"input_ids": turn2, "extra_key": "salt"}); g.num("cached_tokens") != 0 {
		t.Errorf("extra_key: cached_tokens %d, want 0", g.num("cached_tokens"))
	}
	// /flush_cache empties it
	post(t, url, "/flush_cache", nil)
	if g := generate(t, url, map[string]any{"input_ids": turn2}); g.num("cached_tokens") != 0 || srv.CachedTokens() == 0 {
		t.Errorf("after flush: cached_tokens %d", g.num("cached_tokens"))
	}
}

func TestRadixCacheEviction(t *testing.T) {
	c := newRadixCache(100)
	seq := func(base, n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(base + i)
		}
		return s
	}
	c.insert("", seq(0, 60))
	c.insert("", append(seq(0, 30), seq(1000, 30)...)) // shares 30, adds 30
	if c.tokens() != 90 {
		t.Fatalf("tokens %d, want 90", c.tokens())
	}
	if got := c.match("", append(seq(0, 30), seq(1000, 10)...)); got != 40 {
		t.Errorf("match across a split: %d, want 40", got)
	}
	c.match("", seq(0, 60))     // touch the first branch
	c.insert("", seq(5000, 20)) // over capacity: the least recently used leaf (the 1000 branch) goes
	if c.tokens() > 100 {
		t.Errorf("tokens %d over capacity", c.tokens())
	}
	if got := c.match("", append(seq(0, 30), seq(1000, 10)...)); got != 30 {
		t.Errorf("evicted branch still matches %d", got)
	}
	if got := c.match("", seq(0, 60)); got != 60 {
		t.Errorf("recently used branch matches %d, want 60", got)
	}
}

func TestDeterminism(t *testing.T) {
	m := qwen(t)
	ids := qwenIDs(m, "Please compute 3*4 and 10-7 and 6/2.", calcToolJSON)
	run := func(seed uint64) (out [][]int32) {
		cfg := testConfig(m)
		cfg.Seed = seed
		cfg.NonCanonicalRate, cfg.MalformedRate, cfg.ThinkRate = 0.5, 0.5, 0.5
		_, url := start(t, cfg, m.Tokenizer)
		for _, in := range [][]int32{ids, m.Tokenizer.Encode(qwenPrompt("Hi.", "Say something."), false), {1, 2, 3}} {
			g := generate(t, url, map[string]any{"input_ids": in})
			again := generate(t, url, map[string]any{"input_ids": in})
			if !slices.Equal(g.OutputIDs, again.OutputIDs) {
				t.Errorf("seed %d: a replayed request got another reply", seed)
			}
			out = append(out, g.OutputIDs)
		}
		return out
	}
	a, b := run(7), run(7)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Errorf("seed 7, request %d: two servers disagree", i)
		}
	}
	differs := false
	for seed := uint64(8); seed < 16 && !differs; seed++ {
		c := run(seed)
		for i := range a {
			differs = differs || !slices.Equal(a[i], c[i])
		}
	}
	if !differs {
		t.Error("no other seed changes any reply")
	}
}

func TestNonCanonical(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.NonCanonicalRate = 1
	_, url := start(t, cfg, m.Tokenizer)
	canon := testConfig(m)
	_, curl := start(t, canon, m.Tokenizer)
	for _, task := range []string{"Tell me something.", "What is 5*5?", "Explain the weather."} {
		for _, tools := range [][]string{nil, {calcToolJSON}} {
			ids := qwenIDs(m, task, tools...)
			g := generate(t, url, map[string]any{"input_ids": ids})
			c := generate(t, curl, map[string]any{"input_ids": ids})
			body := g.OutputIDs[:len(g.OutputIDs)-1]
			text := m.Tokenizer.Decode(body, false)
			if text != m.Tokenizer.Decode(c.OutputIDs[:len(c.OutputIDs)-1], false) {
				t.Errorf("%q: non-canonical ids decode to %q, the canonical reply is %q", task, text, c.Text)
			}
			if re := m.Tokenizer.Encode(text, false); slices.Equal(re, body) {
				t.Errorf("%q: decode-then-encode gives the same ids: not non-canonical", task)
			}
			if g.Text != c.Text {
				t.Errorf("%q: text %q differs from the canonical %q", task, g.Text, c.Text)
			}
		}
	}
}

func TestServerClose(t *testing.T) {
	m := qwen(t)
	srv, err := New(testConfig(m), m.Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Policy = "oracle" },
		func(c *Config) { c.ToolFormat = "xml" },
		func(c *Config) { c.StopIDs = nil },
		func(c *Config) { c.ContextLength = 1 },
		func(c *Config) { c.MalformedRate = 2 },
		func(c *Config) { c.WeightVersion = "" },
	} {
		c := testConfig(m)
		bad(&c)
		if _, err := New(c, m.Tokenizer); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	c := testConfig(m)
	c.Policy = PolicyScripted
	if _, err := New(c, m.Tokenizer); err == nil || !strings.Contains(err.Error(), "script") {
		t.Errorf("scripted without a script: %v", err)
	}
	if _, err := New(testConfig(m), nil); err == nil {
		t.Error("nil tokenizer accepted")
	}
}
