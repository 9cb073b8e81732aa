package viewer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/tito"
)

const tinyModel = "../../tito/testdata/model/tiny" // WordLevel: <unk> <s> </s> <eot> hello world !

// traj builds a valid two-turn trajectory the way the agent loop does: a prompt, a response, a tool result's
// delta, a final response.
func traj(t testing.TB, id, group, status string, reward *float64, agent string) *tito.Trajectory {
	t.Helper()
	tr := tito.NewTrajectory()
	lp := func(v float64) *float64 { return &v }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tr.AppendPrompt([]int32{1, 4, 5, 3}))
	ids, start := tr.NextRequest()
	must(tr.AppendResponse(tito.Response{InputIDs: ids, LogprobStartLen: start, OutputIDs: []int32{4, 6, 3},
		OutputLogprobs: []float64{-0.01, -2.5, -0.1}, Turn: tito.TurnInfo{Server: "http://w1", RID: id + ".0",
			WeightVersion: "v7", PromptTokens: 4, CachedTokens: 3, FinishReason: "stop", LatencyMS: 12.5}}))
	must(tr.AppendPrompt([]int32{1, 5, 3}))
	ids, start = tr.NextRequest()
	must(tr.AppendResponse(tito.Response{InputIDs: ids, LogprobStartLen: start, InputLogprobs: []*float64{nil, lp(-3), lp(-1), lp(-0.25)},
		OutputIDs: []int32{5, 3}, OutputLogprobs: []float64{-0.5, -0.25}, Turn: tito.TurnInfo{Server: "http://w2", FinishReason: "stop"}}))
	must(tr.Validate())
	tr.ID, tr.GroupID, tr.ItemID, tr.Status, tr.Reward = id, group, strings.TrimPrefix(group, "r/"), status, reward
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		fmt.Sscan(id[i+1:], &tr.SampleIndex)
	}
	tr.SetProvenance(provAgent, agent)
	tr.SetProvenance(provModel, tinyModel)
	tr.SetMetric("tool_calls.ok", 1)
	tr.SetMetric("tool_calls.parse_error", 1)
	tr.Messages = json.RawMessage(`[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello"}]},` +
		`{"role":"assistant","content":"hello !","tool_calls":[{"id":"call_0","type":"function","function":{"name":"echo","arguments":{"x":1}}}]},` +
		`{"role":"tool","tool_call_id":"call_0","name":"echo","content":"world"},` +
		`{"role":"tool","tool_call_id":"parse_error_0","content":"Error: the tool call could not be parsed"},` +
		`{"role":"assistant","content":"world"}]`)
	return tr
}

func f64(v float64) *float64 { return &v }

func ids(s []Summary) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.ID
	}
	return out
}

func TestSummarize(t *testing.T) {
	s := summarize(traj(t, "r/a/1", "r/a", "completed", f64(0.5), "calc"))
	want := Summary{ID: "r/a/1", GroupID: "r/a", ItemID: "a", SampleIndex: 1, Status: "completed", Reward: s.Reward, Agent: "calc",
		Model: tinyModel, Turns: 2, Tokens: 12, ResponseTokens: 5, ToolCalls: 2, ToolErrors: 1}
	if s != want || *s.Reward != 0.5 {
		t.Errorf("summary\n got %+v\nwant %+v", s, want)
	}
	// Whatever a trajectory holds, a summary is made: no group (its own id), a NaN reward (none).
	bad := &tito.Trajectory{ID: "x", Reward: f64(nan()), Segments: []tito.Segment{{Kind: tito.KindResponse, Length: -3}}}
	if s := summarize(bad); s.GroupID != "x" || s.Reward != nil || s.ResponseTokens != 0 {
		t.Errorf("summary of a bad trajectory %+v", s)
	}
}

func nan() float64 { var z float64; return z / z }

func TestRingBoundsAndFilters(t *testing.T) {
	r := NewRing("test", 5, 1<<30)
	defer r.Close()
	for i := range 7 {
		reward := f64(float64(i % 3))
		status := "completed"
		if i%2 == 1 {
			status = "truncated"
		}
		agent := "a"
		if i >= 4 {
			agent = "b"
		}
		r.Add(traj(t, fmt.Sprintf("r/g%d/%d", i/2, i%2), fmt.Sprintf("r/g%d", i/2), status, reward, agent))
	}
	all, n := r.List(Filter{}, 100)
	if want := []string{"r/g3/0", "r/g2/1", "r/g2/0", "r/g1/1", "r/g1/0"}; n != 5 || !slices.Equal(ids(all), want) {
		t.Fatalf("the ring holds %v (%d), want the newest 5 %v", ids(all), n, want)
	}
	if _, err := r.Get("r/g0/0"); err != ErrNotFound {
		t.Errorf("evicted r/g0/0: Get = %v", err)
	}
	cases := []struct {
		name string
		f    Filter
		want []string
	}{
		{"status", Filter{Status: "truncated"}, []string{"r/g2/1", "r/g1/1"}},
		{"agent", Filter{Agent: "b"}, []string{"r/g3/0", "r/g2/1", "r/g2/0"}},
		{"min reward", Filter{MinReward: f64(1)}, []string{"r/g2/1", "r/g2/0", "r/g1/0"}},
		{"reward range", Filter{MinReward: f64(1), MaxReward: f64(1)}, []string{"r/g2/0"}},
		{"query", Filter{Query: "g2"}, []string{"r/g2/1", "r/g2/0"}},
		{"none", Filter{Status: "failed"}, nil},
	}
	for _, c := range cases {
		got, n := r.List(c.f, 100)
		if !slices.Equal(ids(got), c.want) || n != len(c.want) {
			t.Errorf("%s: %v (%d), want %v", c.name, ids(got), n, c.want)
		}
	}
	if got, n := r.List(Filter{}, 2); len(got) != 2 || n != 5 {
		t.Errorf("limit 2: %d shown of %d", len(got), n)
	}
	f := r.Facets()
	if f.Total != 5 || f.Statuses["completed"] != 3 || f.Statuses["truncated"] != 2 || !slices.Equal(f.Agents, []string{"a", "b"}) {
		t.Errorf("facets %+v", f)
	}
	g, _ := r.Group("r/g2")
	if len(g) != 2 || g[0].SampleIndex != 0 || g[1].SampleIndex != 1 {
		t.Errorf("group r/g2: %d samples", len(g))
	}
	// A trajectory delivered again replaces the earlier one: still 5, it is now the newest.
	again := traj(t, "r/g1/0", "r/g1", "completed", f64(9), "a")
	r.Add(again)
	all, n = r.List(Filter{}, 100)
	if n != 5 || all[0].ID != "r/g1/0" || *all[0].Reward != 9 {
		t.Errorf("after a redelivery: %v", ids(all))
	}
	if got, _ := r.Get("r/g1/0"); got != again {
		t.Error("Get does not return the redelivered trajectory")
	}
}

func TestRingMemoryBound(t *testing.T) {
	one := trajectorySize(traj(t, "x", "x", "completed", nil, "a"))
	r := NewRing("test", 1000, 3*one)
	for i := range 10 {
		r.Add(traj(t, fmt.Sprint(i), "g", "completed", nil, "a"))
	}
	if got, n := r.List(Filter{}, 100); n != 3 || got[0].ID != "9" {
		t.Errorf("a ring of 3 trajectories' memory holds %v", ids(got))
	}
	// One trajectory larger than the bound is still kept (the page can show the latest).
	r = NewRing("test", 1000, 1)
	r.Add(traj(t, "big", "g", "completed", nil, "a"))
	if _, n := r.List(Filter{}, 100); n != 1 {
		t.Errorf("a ring smaller than one trajectory holds %d", n)
	}
}

func TestRingSubscription(t *testing.T) {
	r := NewRing("test", 10, 1<<30)
	sub := r.Subscribe()
	r.Add(traj(t, "r/g/0", "r/g", "completed", nil, "a"))
	s, _ := testutil.Recv(t, "the summary of r/g/0", sub.C)
	if s.ID != "r/g/0" || sub.Lagged() {
		t.Errorf("got %+v (lagged %v)", s, sub.Lagged())
	}
	// A subscriber that does not read falls behind: Add never waits for it, and it is told once.
	for i := range subscriptionBuffer + 5 {
		r.Add(traj(t, fmt.Sprint(i), "g", "completed", nil, "a"))
	}
	if !sub.Lagged() || sub.Lagged() {
		t.Error("a subscriber past its buffer is not told once that it lagged")
	}
	sub.Close()
	r.Add(traj(t, "after", "g", "completed", nil, "a")) // no subscriber: nothing blocks
	r.Close()
	testutil.Wait(t, "the subscription's end", sub.Done())
}

// writeRunFile writes trajectories as `agentrt run --out` does, one JSON line each.
func writeRunFile(t *testing.T, path string, trs ...*tito.Trajectory) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		b, err := tr.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(append(b, '\n'))
	}
	f.Close()
}

func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	a := traj(t, "r/a/0", "r/a", "completed", f64(1), "calc")
	writeRunFile(t, path, a)
	// A trajectory frame of the stream, a blank line, a line that is no trajectory, a non-trajectory frame.
	b := traj(t, "", "", "truncated", nil, "calc")
	bj, _ := b.AppendJSON(nil)
	frame := fmt.Sprintf(`{"type":"trajectory","seq":4,"request_id":"r","item_id":"b","sample_index":0,"group_id":"r/b","trajectory_id":"r/b/0","trajectory":%s}`, bj)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(frame + "\n\n{\"hello\": 1}\n" + `{"type":"request_done","seq":5,"request_id":"r"}` + "\n")
	f.Close()
	src, err := OpenFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sub := src.Subscribe()
	defer sub.Close()
	testutil.Wait(t, "the first pass over the file", src.Indexed())
	got, n := src.List(Filter{}, 10)
	if n != 2 || !slices.Equal(ids(got), []string{"r/b/0", "r/a/0"}) || got[0].GroupID != "r/b" {
		t.Fatalf("indexed %v", got)
	}
	info := src.Info()
	if info.Kind != "file" || info.Skipped != 2 || !strings.Contains(info.FirstSkip, "neither a trajectory nor a trajectory frame") {
		t.Errorf("info %+v: want 2 lines skipped, the first for being neither a trajectory nor a frame", info)
	}
	back, err := src.Get("r/a/0")
	if err != nil || !slices.Equal(back.TokenIDs, a.TokenIDs) || *back.Reward != 1 {
		t.Fatalf("Get read back %v, %v", back, err)
	}

	// Appended lines are indexed as they complete: half a line waits for its newline.
	c := traj(t, "r/c/0", "r/c", "completed", nil, "calc")
	cj, _ := c.AppendJSON(nil)
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(cj[:len(cj)/2])
	f.Sync()
	f.Write(append(cj[len(cj)/2:], '\n'))
	f.Close()
	var s Summary
	for s.ID != "r/c/0" {
		s, _ = testutil.Recv(t, "the appended trajectory r/c/0", sub.C)
	}
	if _, n := src.List(Filter{}, 10); n != 3 {
		t.Errorf("after the append the file holds %d trajectories, want 3", n)
	}

	// Replaced (as agentrt run rewrites its --out): the source starts over and tells the page.
	tmp := filepath.Join(dir, "t.tmp")
	writeRunFile(t, tmp, c)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for !sub.Lagged() {
		testutil.Recv(t, "the reset after the file was replaced", sub.C)
	}
	testutil.Until(t, "the replaced file indexed", func() bool { _, n := src.List(Filter{}, 10); return n == 1 })
	if _, err := src.Get("r/a/0"); err != ErrNotFound {
		t.Errorf("r/a/0 is gone with the old file: Get = %v", err)
	}
	g, err := src.Group("r/c")
	if err != nil || len(g) != 1 || g[0].ID != "r/c/0" {
		t.Errorf("group r/c: %v, %v", g, err)
	}
}

func TestConversation(t *testing.T) {
	tr := traj(t, "r/a/0", "r/a", "completed", nil, "calc")
	prompt, calls := conversation(tr.Messages, 2)
	if len(prompt) != 2 || prompt[0].Role != "system" || prompt[1].Content != "hello" {
		t.Errorf("prompt %+v", prompt)
	}
	if len(calls) != 2 || calls[0].Turn != 0 || calls[1].Turn != 1 {
		t.Fatalf("calls %+v", calls)
	}
	c := calls[0]
	if len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != "echo" || string(c.ToolCalls[0].Arguments) != `{"x":1}` ||
		len(c.Results) != 2 || c.Results[0].Content != "world" || c.Results[1].ToolCallID != "parse_error_0" {
		t.Errorf("call 0 %+v", c)
	}
	if calls[1].Content != "world" || calls[1].ToolCalls != nil || calls[1].Results != nil {
		t.Errorf("call 1 %+v", calls[1])
	}
	// Few-shot history in the request: only the last `turns` assistant messages are the episode's calls.
	p, cs := conversation(json.RawMessage(`[{"role":"user","content":"q"},{"role":"assistant","content":"shot"},{"role":"user","content":"q2"},{"role":"assistant","content":"mine"}]`), 1)
	if len(p) != 3 || len(cs) != 1 || cs[0].Content != "mine" || cs[0].Turn != 0 {
		t.Errorf("with history: prompt %d messages, calls %+v", len(p), cs)
	}
	if p, cs := conversation(json.RawMessage(`not json`), 3); len(p) != 0 || len(cs) != 0 {
		t.Error("bad messages are shown as none")
	}
	// A turn whose every call was malformed is answered by one user message with an error result per call: drawn
	// as one result card each. A user message that is not that feedback is not a result.
	feedback := `Error: the tool call could not be parsed (bad_json): x\nThe call was: {\n\nError: the tool call could not be parsed (unknown_tool): y\nThe call was: <f>`
	_, cs = conversation(json.RawMessage(`[{"role":"user","content":"q"},{"role":"assistant","content":"bad"},{"role":"user","content":"`+feedback+`"},{"role":"assistant","content":"ok"},{"role":"user","content":"next question"}]`), 2)
	if len(cs) != 2 || len(cs[0].Results) != 2 || !strings.HasPrefix(cs[0].Results[1].Content, "Error: the tool call could not be parsed (unknown_tool)") || cs[1].Results != nil {
		t.Errorf("malformed-turn feedback: calls %+v", cs)
	}
}

// TestTokenTexts: on real tokenizers (Qwen3's byte-level BPE, Gemma 3's byte-fallback SentencePiece BPE, which
// spells spaces "▁"), each token's text joined
// is exactly the tokenizer's decode of all the ids, a character split over tokens goes whole to the token that
// completes it, and SentencePiece's spaces stay where they are.
func TestTokenTexts(t *testing.T) {
	texts := []string{
		"Hello, world! How are you today?",
		"I ❤️ 🍕 and 🚀! 👨‍👩‍👧‍👦 你好，世界！今天天气很好。",
		"  leading spaces\n\n\ttabs and\r\nCRLF   trailing  ",
		"مرحبا بالعالم! नमस्ते दुनिया",
		"<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"x\": \"2*3\"}}\n</tool_call>",
	}
	for _, env := range []string{"AGENTRT_QWEN3_MODEL", "AGENTRT_GEMMA3_MODEL"} {
		dir := os.Getenv(env)
		if dir == "" {
			t.Skipf("$%s is not set: source ~/.cache/agentrt/env.sh after make setup", env)
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tok, err := tito.LoadTokenizer(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer tok.Close()
			for _, text := range texts {
				ids := tok.Encode(text, true)
				got := tokenTexts(tok, ids)
				if len(got) != len(ids) {
					t.Fatalf("%d texts for %d tokens", len(got), len(ids))
				}
				if want := tok.Decode(ids, false); strings.Join(got, "") != want {
					t.Errorf("%q: texts joined\n got %q\nwant %q", text, strings.Join(got, ""), want)
				}
				for i, s := range got {
					if strings.ContainsRune(s, '\uFFFD') {
						t.Errorf("%q: token %d (%d) shows a replacement character: %q", text, i, ids[i], s)
					}
				}
			}
			// A multi-byte character cut after its first token, as a response stopped mid-character would be.
			ids := tok.Encode("🚀", false)
			if len(ids) > 1 {
				got := tokenTexts(tok, ids[:1])
				if want := tok.Decode(ids[:1], false); got[0] != want {
					t.Errorf("half a character: %q, want the decoder's %q", got[0], want)
				}
				got = tokenTexts(tok, ids)
				if got[0] != "" || strings.Join(got, "") != "🚀" {
					t.Errorf("🚀 over %d tokens shows %q", len(ids), got)
				}
			}
		})
	}
}

// viewer is a test server over a ring of three trajectories, decoded with the tiny model's tokenizer.
func viewer(t *testing.T, opts ...Option) (*httptest.Server, *Ring, *Handler) {
	t.Helper()
	r := NewRing("test service", 100, 1<<30)
	for i := range 3 {
		r.Add(traj(t, fmt.Sprintf("r/g/%d", i), "r/g", "completed", f64(float64(i)), "calc"))
	}
	folders := NewFolders(func(model, _ string) (string, error) { return model, nil })
	h := NewHandler(r, append([]Option{WithTokenizers(folders.Lookup)}, opts...)...)
	mux := http.NewServeMux()
	mux.Handle(Prefix, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { h.Close(); srv.Close(); r.Close(); folders.Close() })
	return srv, r, h
}

func get(t *testing.T, c *http.Client, u string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHandlerAPI(t *testing.T) {
	srv, _, _ := viewer(t)
	c := srv.Client()
	resp, body := get(t, c, srv.URL+Prefix)
	if resp.StatusCode != 200 || !strings.Contains(body, `<script src="static/app.js"`) {
		t.Fatalf("the page: %d %q", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	for _, asset := range []string{"static/app.js", "static/style.css"} {
		if resp, body := get(t, c, srv.URL+Prefix+asset); resp.StatusCode != 200 || len(body) < 1000 {
			t.Errorf("%s: %d, %d bytes", asset, resp.StatusCode, len(body))
		}
	}
	var info infoResponse
	_, body = get(t, c, srv.URL+Prefix+"api/info")
	if json.Unmarshal([]byte(body), &info); info.Source.Kind != "live" || info.Total != 3 || info.Source.Name != "test service" {
		t.Errorf("info %s", body)
	}
	var list listResponse
	_, body = get(t, c, srv.URL+Prefix+"api/trajectories?min_reward=1&limit=1")
	if json.Unmarshal([]byte(body), &list); list.Matched != 2 || list.Total != 3 || len(list.Items) != 1 || list.Items[0].ID != "r/g/2" {
		t.Errorf("min_reward=1 limit=1: %s", body)
	}
	for _, q := range []string{"min_reward=abc", "max_reward=1e", "limit=0", "limit=x"} {
		if resp, body := get(t, c, srv.URL+Prefix+"api/trajectories?"+q); resp.StatusCode != 400 || !strings.Contains(body, strings.Split(q, "=")[0]) {
			t.Errorf("%s: %d %s (want 400 naming the parameter)", q, resp.StatusCode, body)
		}
	}

	var d Detail
	resp, body = get(t, c, srv.URL+Prefix+"api/trajectory?id="+url.QueryEscape("r/g/1"))
	if err := json.Unmarshal([]byte(body), &d); err != nil || resp.StatusCode != 200 {
		t.Fatalf("trajectory: %d %s", resp.StatusCode, body)
	}
	tk := d.TokenView
	// WordLevel's decode joins tokens with spaces: each token after the first shows the space before it.
	if !tk.HaveTexts || tk.Tokenizer != tinyModel || !slices.Equal(tk.Text, []string{"<s>", " hello", " world", " <eot>", " hello", " !", " <eot>", " <s>", " world", " <eot>", " world", " <eot>"}) {
		t.Errorf("token texts %q (tokenizer %q)", tk.Text, tk.Tokenizer)
	}
	if !slices.Equal(tk.Piece, []string{"<s>", "hello", "world", "<eot>", "hello", "!", "<eot>", "<s>", "world", "<eot>", "world", "<eot>"}) || !slices.Equal(tk.Special, []int{0, 3, 6, 7, 9, 11}) {
		t.Errorf("pieces %q, special %v", tk.Piece, tk.Special)
	}
	if len(tk.Mask) != 12 || tk.Mask[4] != 1 || tk.Mask[7] != 0 || !isNaN(tk.Logprob[0]) || tk.Logprob[5] != -2.5 || tk.Logprob[8] != -1 {
		t.Errorf("mask %v logprobs %v", tk.Mask, tk.Logprob)
	}
	if d.Segments[1].Info.Server != "http://w1" || d.Segments[1].Info.CachedTokens != 3 || len(d.Calls) != 2 || d.Invalid != "" {
		t.Errorf("segments %+v calls %+v invalid %q", d.Segments, d.Calls, d.Invalid)
	}
	if resp, body := get(t, c, srv.URL+Prefix+"api/trajectory?id=nope"); resp.StatusCode != 404 || !strings.Contains(body, "nope") {
		t.Errorf("unknown id: %d %s", resp.StatusCode, body)
	}
	var g groupResponse
	_, body = get(t, c, srv.URL+Prefix+"api/group?id=r/g")
	if json.Unmarshal([]byte(body), &g); len(g.Samples) != 3 || g.Samples[2].SampleIndex != 2 || *g.Samples[2].Reward != 2 {
		t.Errorf("group: %.300s", body)
	}
	if resp, _ := get(t, c, srv.URL+Prefix+"api/group?id=none"); resp.StatusCode != 404 {
		t.Errorf("unknown group: %d", resp.StatusCode)
	}
}

func isNaN(f float64) bool { return f != f }

// TestHandlerNoTokenizer: without a tokenizer for the model the page gets ids and the reason.
func TestHandlerNoTokenizer(t *testing.T) {
	r := NewRing("t", 10, 1<<30)
	tr := traj(t, "a", "a", "completed", nil, "calc")
	tr.SetProvenance(provModel, "/no/such/model")
	r.Add(tr)
	folders := NewFolders(func(model, _ string) (string, error) { return model, nil })
	defer folders.Close()
	srv := httptest.NewServer(NewHandler(r, WithTokenizers(folders.Lookup)))
	defer srv.Close()
	var d Detail
	_, body := get(t, srv.Client(), srv.URL+Prefix+"api/trajectory?id=a")
	json.Unmarshal([]byte(body), &d)
	if d.TokenView.HaveTexts || d.TokenView.Text != nil || !strings.Contains(d.TokenView.Tokenizer, "/no/such/model") || len(d.TokenView.IDs) != 12 {
		t.Errorf("without a tokenizer: have_texts %v, tokenizer %q", d.TokenView.HaveTexts, d.TokenView.Tokenizer)
	}
}

func TestHandlerAuth(t *testing.T) {
	t.Run("no token: loopback hosts only", func(t *testing.T) {
		srv, _, _ := viewer(t)
		c := srv.Client()
		for host, want := range map[string]int{"": 200, "localhost:8080": 200, "127.0.0.2": 200, "[::1]:80": 200,
			"evil.example:8080": 403, "10.0.0.1": 403} {
			req, _ := http.NewRequest("GET", srv.URL+Prefix+"api/info", nil)
			if host != "" {
				req.Host = host // what a DNS-rebinding page's requests carry
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
			}
		}
	})
	t.Run("token", func(t *testing.T) {
		srv, _, _ := viewer(t, WithToken("tok-123"))
		c := srv.Client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		if resp, body := get(t, c, srv.URL+Prefix); resp.StatusCode != 401 || !strings.Contains(body, "?token=") {
			t.Errorf("the page without the token: %d %q", resp.StatusCode, body)
		}
		if resp, _ := get(t, c, srv.URL+Prefix+"api/info", "Authorization", "Bearer wrong"); resp.StatusCode != 401 {
			t.Errorf("a wrong bearer token: %d", resp.StatusCode)
		}
		if resp, _ := get(t, c, srv.URL+Prefix+"api/info", "Authorization", "Bearer tok-123"); resp.StatusCode != 200 {
			t.Errorf("the bearer token: %d", resp.StatusCode)
		}
		if resp, _ := get(t, c, srv.URL+Prefix+"?token=wrong"); resp.StatusCode != 401 {
			t.Errorf("?token=wrong: %d", resp.StatusCode)
		}
		resp, _ := get(t, c, srv.URL+Prefix+"?token=tok-123&x=1")
		cookies := resp.Cookies()
		if resp.StatusCode != 303 || resp.Header.Get("Location") != Prefix+"?x=1" || len(cookies) != 1 {
			t.Fatalf("?token=: %d to %q with %d cookies", resp.StatusCode, resp.Header.Get("Location"), len(cookies))
		}
		ck := cookies[0]
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != Prefix || strings.Contains(ck.Value, "tok-123") {
			t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, path %s, not the token itself", ck, Prefix)
		}
		if resp, _ := get(t, c, srv.URL+Prefix+"api/info", "Cookie", ck.Name+"="+ck.Value); resp.StatusCode != 200 {
			t.Errorf("with the cookie: %d", resp.StatusCode)
		}
		if resp, _ := get(t, c, srv.URL+Prefix+"api/info", "Cookie", ck.Name+"=forged"); resp.StatusCode != 401 {
			t.Errorf("with a forged cookie: %d", resp.StatusCode)
		}
	})
}

// readEvent reads one server-sent event (its name and data).
func readEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var name, data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

func TestHandlerEvents(t *testing.T) {
	srv, r, h := viewer(t)
	resp, err := srv.Client().Get(srv.URL + Prefix + "api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	if name, _ := readEvent(t, br); name != "hello" {
		t.Fatalf("first event %q", name)
	}
	testutil.Until(t, "the page's subscription", func() bool { return r.hub.subscribers() == 1 })
	r.Add(traj(t, "r/new/0", "r/new", "aborted", nil, "calc"))
	name, data := readEvent(t, br)
	var s Summary
	if json.Unmarshal([]byte(data), &s); name != "trajectory" || s.ID != "r/new/0" || s.Status != "aborted" {
		t.Errorf("event %q %s", name, data)
	}
	// Close ends the stream (so that an HTTP server's shutdown does not wait on it), and later requests get 503.
	h.Close()
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("the stream ended with %v", err)
	}
	if resp, _ := get(t, srv.Client(), srv.URL+Prefix+"api/info"); resp.StatusCode != 503 {
		t.Errorf("after Close: %d", resp.StatusCode)
	}
}

func TestConfigValidate(t *testing.T) {
	if key, err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %s: %v", key, err)
	}
	for _, c := range []struct {
		cfg Config
		key string
	}{{Config{Recent: 0, RecentMB: 1}, "recent"}, {Config{Recent: 1, RecentMB: 0}, "recent_mb"}} {
		if key, err := c.cfg.Validate(); key != c.key || err == nil {
			t.Errorf("%+v: key %q, err %v; want %q", c.cfg, key, err, c.key)
		}
	}
}

// TestDetailStopMessage: a truncated trajectory's stop message (a hook's, the context window's) reaches the page,
// beside its error (failed and aborted ones only).
func TestDetailStopMessage(t *testing.T) {
	tr := traj(t, "r/s/0", "r/s", "truncated", nil, "calc")
	tr.StatusReason, tr.StopMessage = "max_tool_iters", "Max tool iterations (5) reached."
	d := detail(tr, func(string, string) (Tokenizer, string) { return nil, "no tokenizer in this test" })
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if d.StopMessage != tr.StopMessage || d.Error != "" || !strings.Contains(string(b), `"stop_message":"Max tool iterations (5) reached."`) {
		t.Errorf("detail %s, want the stop message and no error", b)
	}
}
