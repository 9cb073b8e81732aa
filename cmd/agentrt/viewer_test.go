package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/hfhub/hfhubtest"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/tito"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
)

// The viewer's browser test drives Debian's chromium (scripts/setup.d/90-chromium.sh) headless over the DevTools
// protocol (chromedp) against `agentrt serve` on the built-in emulator and `agentrt view` on a JSONL file, and
// checks what the page draws against the trajectories the trainer received and the model's tokenizer.
// Screenshots go to $AGENTRT_TEST_ARTIFACTS/viewer (default out/test-artifacts/viewer); with
// AGENTRT_VIEWER_SCREENSHOT=PATH the trajectory view is also written there (docs/img/viewer.png comes from
// `make viewer-screenshot`).

// servedAgentrt is an `agentrt serve` subprocess.
type servedAgentrt struct {
	proc    *agentrtProc
	log     string
	base    string // http://host:port
	stream  string // ws://host:port/v1/stream
	viewURL string // printed by serve ("" when the viewer is off)
	token   string
}

// startServe starts `agentrt serve` on a copy of runtime.toml with edits (pairs, as writeConfig takes them) and
// extra appended, on a free loopback port with its spool in dir.
func startServe(t *testing.T, dir, token, extra string, edits ...string) *servedAgentrt {
	t.Helper()
	edits = append([]string{
		`spool_dir = "~/.cache/agentrt/spool"`, fmt.Sprintf("spool_dir = %q", filepath.Join(dir, "spool")),
		`addr = "127.0.0.1:8080"`, `addr = "127.0.0.1:0"`,
		`token = ""`, fmt.Sprintf("token = %q", token),
	}, edits...)
	cfg := writeConfig(t, dir, edits...)
	if extra != "" {
		f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("\n" + extra)
		f.Close()
	}
	s := &servedAgentrt{log: filepath.Join(dir, "serve.log"), token: token}
	s.proc = startAgentrt(t, s.log, "serve", cfg)
	line, err := s.proc.stdout.ReadString('\n')
	_, rest, ok := strings.Cut(line, "(WebSocket ")
	url, _, ok2 := strings.Cut(rest, ")")
	if err != nil || !ok || !ok2 {
		failWithLog(t, s.log, "agentrt serve printed %q (%v)", line, err)
	}
	s.stream = url
	s.base = "http://" + strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/v1/stream")
	if line, err = s.proc.stdout.ReadString('\n'); err == nil {
		if _, u, ok := strings.Cut(line, "trajectory viewer on "); ok {
			s.viewURL = strings.TrimSpace(u)
		}
	}
	return s
}

// trainer is a consumer that keeps every trajectory frame it receives, raw.
type trainer struct {
	ws     *websocket.Conn
	frames [][]byte          // trajectory frames, as received
	trajs  map[string][]byte // trajectory id -> the trajectory's JSON
	log    string
}

func (s *servedAgentrt) trainer(t *testing.T) *trainer {
	t.Helper()
	h := http.Header{}
	if s.token != "" {
		h.Set("Authorization", "Bearer "+s.token)
	}
	ws, _, err := websocket.DefaultDialer.Dial(s.stream, h)
	if err != nil {
		failWithLog(t, s.log, "dial %s: %v", s.stream, err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { ws.Close() })
	tr := &trainer{ws: ws, trajs: map[string][]byte{}, log: s.log}
	tr.send(t, map[string]any{"type": "hello", "protocol": 1, "consumer_id": "trainer", "credits": 10000})
	if m, _ := tr.read(t); m["type"] != "welcome" {
		failWithLog(t, s.log, "hello answered %v", m)
	}
	return tr
}

func (tr *trainer) send(t *testing.T, v any) {
	t.Helper()
	if err := tr.ws.WriteJSON(v); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func (tr *trainer) read(t *testing.T) (map[string]any, []byte) {
	t.Helper()
	tr.ws.SetReadDeadline(time.Now().Add(testutil.Patience))
	_, b, err := tr.ws.ReadMessage()
	if err != nil {
		failWithLog(t, tr.log, "waiting for a frame from the server: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("the server sent invalid JSON: %v", err)
	}
	return m, b
}

// run submits one request and reads (and acks) until its request_done, keeping its trajectories.
func (tr *trainer) run(t *testing.T, req map[string]any) {
	t.Helper()
	req["type"] = "submit"
	tr.send(t, req)
	for {
		m, b := tr.read(t)
		switch m["type"] {
		case "accepted":
			continue
		case "trajectory":
			tr.frames = append(tr.frames, b)
			var f struct {
				ID         string          `json:"trajectory_id"`
				Trajectory json.RawMessage `json:"trajectory"`
			}
			json.Unmarshal(b, &f)
			tr.trajs[f.ID] = f.Trajectory
		case "request_done":
			if m["request_id"] == req["request_id"] {
				tr.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
				return
			}
		default:
			failWithLog(t, tr.log, "request %v answered %v", req["request_id"], m)
		}
		tr.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
}

// trajectory decodes one received trajectory.
func (tr *trainer) trajectory(t *testing.T, id string) *tito.Trajectory {
	t.Helper()
	raw, ok := tr.trajs[id]
	if !ok {
		t.Fatalf("the trainer never received %s", id)
	}
	var traj tito.Trajectory
	if err := json.Unmarshal(raw, &traj); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return &traj
}

func items(prefix string, n int, prompts ...string) []map[string]any {
	var out []map[string]any
	for i, p := range prompts {
		out = append(out, map[string]any{"id": fmt.Sprintf("%s%d", prefix, i), "n": n, "label": labelOf(p),
			"messages": []map[string]any{{"role": "user", "content": p}}})
	}
	return out
}

// labelOf is the answer of the arithmetic prompts below ("What is A*B+C?").
func labelOf(p string) string {
	var a, b, c int
	fmt.Sscanf(p, "What is %d*%d+%d?", &a, &b, &c)
	return fmt.Sprint(a*b + c)
}

// browser is a headless chromium; tab returns a fresh page context.
type browser struct {
	ctx context.Context
	art string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed: make setup runs scripts/setup.d/90-chromium.sh")
		}
		t.Skip("chromium is not installed: run scripts/setup.d/90-chromium.sh (make setup)")
	}
	// The flags keep chromium off the network (this machine's is closed: without them it keeps dialling out).
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1440, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 2*testutil.Patience)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	art := os.Getenv("AGENTRT_TEST_ARTIFACTS")
	if art == "" {
		art = filepath.Join("..", "..", "out", "test-artifacts")
	}
	art = filepath.Join(art, "viewer")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{ctx: ctx, art: art}
}

// do runs actions; on failure it saves a screenshot and fails naming what it was doing.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testutil.Patience)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot(t, "failed")
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	for {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
		if err == nil {
			return v
		}
		if !navigatedAway(err) {
			b.shot(t, "failed")
			t.Fatalf("browser: evaluate %s: %v", expr, err)
		}
	}
}

// navigatedAway reports whether err says a navigation (a redirect finishing) replaced the page a script ran in:
// the script is run again in the new page.
func navigatedAway(err error) bool {
	return strings.Contains(err.Error(), "Cannot find context with specified id") || strings.Contains(err.Error(), "context was destroyed")
}

// until waits for a JavaScript condition to hold, polling in the page.
func (b *browser) until(t *testing.T, what, cond string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testutil.Patience)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[any](cond, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(testutil.Patience)))
		if err == nil {
			return
		}
		if ctx.Err() == nil && navigatedAway(err) {
			continue
		}
		b.shot(t, "failed")
		t.Fatalf("browser: waiting for %s (%s): %v", what, cond, err)
	}
}

// shot saves a screenshot of the viewport as ART/name.png.
func (b *browser) shot(t *testing.T, name string) string {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(b.art, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	return p
}

// hover moves the mouse onto the element that sel finds.
func (b *browser) hover(t *testing.T, sel string) {
	t.Helper()
	b.do(t, "scroll "+sel+" into view", chromedp.ScrollIntoView(chromedp.CSS(sel)))
	xy := eval[[]float64](t, b, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, sel))
	b.do(t, "hover "+sel, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, xy[0], xy[1]))
}

// probBin is the page's colour bin of a logprob (app.js bin(): p >= .95, .8, .6, .4, .2, .1, .05, .01, below).
func probBin(lp float64) int {
	p := math.Exp(lp)
	for i, th := range []float64{0.95, 0.8, 0.6, 0.4, 0.2, 0.1, 0.05, 0.01} {
		if p >= th {
			return i
		}
	}
	return 8
}

// checkTokens compares the tokens the page draws in container (one trajectory) with the trajectory and the
// model's tokenizer: one span per token, its loss mask and logprob bin in its classes, and the spans' texts
// joined equal to the tokenizer's decode of all the ids.
func checkTokens(t *testing.T, b *browser, container string, tr *tito.Trajectory, tok *tito.Tokenizer) {
	t.Helper()
	type span struct {
		I    int    `json:"i"`
		Cls  string `json:"cls"`
		Text string `json:"text"`
	}
	spans := eval[[]span](t, b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => ({i: +e.dataset.i, cls: e.className, text: e.textContent.replace(/↵(?=\n)/g, "").replace(/→(?=\t)/g, "")}))`, container+" .toks .t"))
	if len(spans) != tr.Len() {
		t.Fatalf("%s: the page draws %d tokens, the trajectory has %d", tr.ID, len(spans), tr.Len())
	}
	var text strings.Builder
	masked := 0
	for i, s := range spans {
		cls := strings.Fields(s.Cls)
		if s.I != i {
			t.Fatalf("%s: span %d is token %d", tr.ID, i, s.I)
		}
		if want := fmt.Sprintf("m%d", tr.LossMask[i]); !slices.Contains(cls, want) {
			t.Errorf("%s: token %d has classes %q, want %s (loss mask)", tr.ID, i, s.Cls, want)
		}
		want := "nolp"
		if !math.IsNaN(tr.Logprobs[i]) {
			want = fmt.Sprintf("b%d", probBin(tr.Logprobs[i]))
		}
		if !slices.Contains(cls, want) {
			t.Errorf("%s: token %d (logprob %v) has classes %q, want %s", tr.ID, i, tr.Logprobs[i], s.Cls, want)
		}
		masked += int(tr.LossMask[i])
		text.WriteString(s.Text)
	}
	if got := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, container+" .toks .t.m1")); got != masked {
		t.Errorf("%s: %d tokens drawn with loss mask 1, the trajectory has %d", tr.ID, got, masked)
	}
	if want := tok.Decode(tr.TokenIDs, false); text.String() != want {
		t.Errorf("%s: the page's token texts joined differ from the tokenizer's decode\n got %q\nwant %q", tr.ID, text.String(), want)
	}
}

// TestViewerInBrowser: a trainer runs requests on `agentrt serve` (token set, two agents, rewards that vary within
// a group, some malformed tool calls, some truncated episodes); the viewer page, opened in chromium with the
// token, lists every trajectory, draws one token by token as the trainer received it, shows a token's id, text
// and logprob on hover, a group's samples side by side with their rewards, filters by status, reward and agent,
// and lists a trajectory that finishes while it is open. Then `agentrt view` shows the trainer's saved frames
// and follows the file as lines are appended.
func TestViewerInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt serve and chromium")
	}
	b := newBrowser(t)
	dir := t.TempDir()
	model := os.Getenv("AGENTRT_QWEN3_MODEL")
	const token = "s3cret-viewer-token"
	extra := `[agent.reward]
plugin = "builtin:math_reward"

[[agent]]
name = "terse"
model = "` + model + `"
chat_template_kwargs = { enable_thinking = false }
[agent.sampling]
max_new_tokens = 8
[[agent.tools]]
plugin = "builtin:calculator"
`
	srv := startServe(t, dir, token, extra, "wrong_answer_rate = 0.0", "wrong_answer_rate = 0.4",
		"malformed_rate = 0.0", "malformed_rate = 0.3")
	defer srv.proc.kill9(t)
	if srv.viewURL != srv.base+"/view/" {
		failWithLog(t, srv.log, "agentrt serve printed the viewer at %q, want %s/view/", srv.viewURL, srv.base)
	}
	tr := srv.trainer(t)
	tr.run(t, map[string]any{"request_id": "r1", "agent": "calculator",
		"items": items("q", 4, "What is 17*23+5?", "What is 12*12+1?", "What is 7*8+9?")})
	tr.run(t, map[string]any{"request_id": "r2", "agent": "terse", "items": items("t", 2, "What is 3*4+5?")})
	tok, err := tito.LoadTokenizer(filepath.Join(model, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	all := map[string]*tito.Trajectory{}
	for id := range tr.trajs {
		all[id] = tr.trajectory(t, id)
	}

	// Without the token the page is refused; ?token= once sets the cookie and drops the token from the address.
	b.do(t, "open the viewer without the token", chromedp.Navigate(srv.base+"/view/"))
	if body := eval[string](t, b, `document.body.innerText`); !strings.Contains(body, "server.token") {
		t.Fatalf("without the token the page shows %q", body)
	}
	b.do(t, "open the viewer with ?token=", chromedp.Navigate(srv.base+"/view/?token="+token))
	if loc := eval[string](t, b, `location.href`); loc != srv.base+"/view/" {
		t.Errorf("after signing in the address is %s, want %s/view/", loc, srv.base)
	}
	b.until(t, "the list of every trajectory", fmt.Sprintf(`document.querySelectorAll("#list .item").length === %d`, len(all)))
	if got := eval[string](t, b, `document.querySelector("#count").textContent`); got != fmt.Sprintf("%d trajectories", len(all)) {
		t.Errorf("the list's count reads %q", got)
	}
	b.until(t, "the live indicator", `document.querySelector("#live").classList.contains("on")`)

	// One trajectory with a tool call, drawn token by token.
	var withCall *tito.Trajectory // the first (by id) with a successful tool call, rewarded 1 if one is
	for _, id := range slices.Sorted(maps.Keys(all)) {
		if t := all[id]; strings.HasPrefix(id, "r1/") && t.Metrics["tool_calls.ok"] > 0 && t.Reward != nil &&
			(withCall == nil || *withCall.Reward != 1 && *t.Reward == 1) {
			withCall = t
		}
	}
	if withCall == nil {
		t.Fatal("no r1 trajectory made a successful tool call")
	}
	b.do(t, "click "+withCall.ID, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#list .item[data-id=%q]`, withCall.ID))))
	b.until(t, "the trajectory view", fmt.Sprintf(`document.querySelector("#main").dataset.id === %q && !!document.querySelector(".tview")`, withCall.ID))
	checkTokens(t, b, ".tview", withCall, tok)
	var msgs []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	json.Unmarshal(withCall.Messages, &msgs)
	var calls, results []string
	for _, m := range msgs[2:] { // after the system and user messages
		for _, c := range m.ToolCalls {
			calls = append(calls, c.Function.Name)
		}
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if got := eval[[]string](t, b, `[...document.querySelectorAll(".tview .card.call .ch b")].map(e => e.textContent)`); !slices.Equal(got, calls) {
		t.Errorf("tool call cards %q, the trajectory's calls %q", got, calls)
	}
	if got := eval[[]string](t, b, `[...document.querySelectorAll(".tview .card.result pre")].map(e => e.textContent)`); !slices.Equal(got, results) {
		t.Errorf("tool result cards %q, the trajectory's results %q", got, results)
	}
	head := eval[string](t, b, `document.querySelector(".tview .thead").textContent`)
	if want := fmt.Sprintf("reward %v", *withCall.Reward); !strings.Contains(head, withCall.Status) || !strings.Contains(head, want) {
		t.Errorf("the header reads %q, want status %s and %q", head, withCall.Status, want)
	}
	resp := withCall.Segments[1]
	segHead := eval[string](t, b, `document.querySelector('.tview .seg[data-seg="1"] .seghead').textContent`)
	for _, want := range []string{"worker " + resp.Info.Server, fmt.Sprintf("cached %d/%d", resp.Info.CachedTokens, resp.Info.PromptTokens),
		"weights " + resp.Info.WeightVersion, "finish " + resp.Info.FinishReason} {
		if !strings.Contains(segHead, want) {
			t.Errorf("the first response's header %q lacks %q", segHead, want)
		}
	}
	// Hover the first token of the last response: its id, text and logprob.
	last := withCall.Segments[len(withCall.Segments)-1]
	i := last.Offset
	b.hover(t, fmt.Sprintf(`.tview .t[data-i="%d"]`, i))
	b.until(t, "the token's tooltip", `!document.querySelector("#tip").hidden`)
	tip := eval[string](t, b, `document.querySelector("#tip").innerText`)
	text, _ := json.Marshal(tok.Decode(withCall.TokenIDs[i:i+1], false))
	for _, want := range []string{fmt.Sprint(withCall.TokenIDs[i]), string(text), fmt.Sprintf("%.4f", withCall.Logprobs[i]), "loss mask\t1"} {
		if !strings.Contains(tip, want) {
			t.Errorf("the tooltip of token %d reads %q, lacking %q", i, tip, want)
		}
	}
	// The picture for the docs: the top of the trajectory, a token of its first response under the mouse.
	eval[any](t, b, `document.querySelector("#main").scrollTop = 0`)
	b.hover(t, fmt.Sprintf(`.tview .t[data-i="%d"]`, resp.Offset+min(12, resp.Length-1)))
	b.until(t, "the token's tooltip", `!document.querySelector("#tip").hidden`)
	b.shot(t, "trajectory")
	if p := os.Getenv("AGENTRT_VIEWER_SCREENSHOT"); p != "" {
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil || os.WriteFile(p, png, 0o644) != nil {
			t.Fatalf("AGENTRT_VIEWER_SCREENSHOT %s: %v", p, err)
		}
	}

	// A malformed tool call: its error result, carrying the raw text, is drawn as one.
	var malformed *tito.Trajectory
	for _, id := range slices.Sorted(maps.Keys(all)) {
		if t := all[id]; t.Metrics["tool_calls.parse_error"] > 0 {
			malformed = t
			break
		}
	}
	if malformed == nil {
		t.Fatal("no trajectory has a malformed tool call (emulator malformed_rate 0.3)")
	}
	b.do(t, "click "+malformed.ID, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#list .item[data-id=%q]`, malformed.ID))))
	b.until(t, "the malformed call's error result", fmt.Sprintf(`document.querySelector("#main").dataset.id === %q && document.querySelectorAll(".tview .card.result.err").length === %d`,
		malformed.ID, int(malformed.Metrics["tool_calls.parse_error"])))
	b.shot(t, "malformed")

	// The group side by side: one column per sample with its reward, the shared prompt once.
	group := withCall.GroupID
	b.do(t, "open group "+group, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#list .ghead[data-group=%q]`, group))))
	b.until(t, "the group view", fmt.Sprintf(`document.querySelector("#main").dataset.id === %q && document.querySelectorAll(".gview .col").length === 4`, group))
	var wantRewards []string
	for k := range 4 {
		s := all[fmt.Sprintf("%s/%d", group, k)]
		if s == nil {
			t.Fatalf("sample %d of %s never arrived", k, group)
		}
		wantRewards = append(wantRewards, fmt.Sprintf("#%d reward %v", k, *s.Reward))
	}
	got := eval[[]string](t, b, `[...document.querySelectorAll(".gview .colhead")].map(e => e.querySelector(".sid").textContent + " " + e.querySelector(".reward").textContent)`)
	if !slices.Equal(got, wantRewards) {
		t.Errorf("the group's columns read %q, want %q", got, wantRewards)
	}
	if n := eval[int](t, b, `document.querySelectorAll('.gview [data-sample="shared"] .t').length`); n != withCall.Segments[0].Length {
		t.Errorf("the shared prompt has %d tokens, want %d", n, withCall.Segments[0].Length)
	}
	b.shot(t, "group")

	// Filters: status, reward, agent.
	count := func(f func(*tito.Trajectory) bool) int {
		n := 0
		for _, t := range all {
			if f(t) {
				n++
			}
		}
		return n
	}
	filter := func(sel, value string, want int, what string) {
		t.Helper()
		eval[any](t, b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); })()`, sel, value))
		b.until(t, what, fmt.Sprintf(`document.querySelector("#count").dataset.matched === "%d" && document.querySelectorAll("#list .item").length === %d`, want, want))
	}
	truncated := count(func(t *tito.Trajectory) bool { return t.Status == "truncated" })
	if truncated == 0 {
		t.Fatal("no truncated trajectory to filter for")
	}
	filter("#f-status", "truncated", truncated, "the truncated ones")
	if st := eval[[]string](t, b, `[...document.querySelectorAll("#list .item")].map(e => e.dataset.status)`); slices.ContainsFunc(st, func(s string) bool { return s != "truncated" }) {
		t.Errorf("status filter shows %q", st)
	}
	filter("#f-status", "", len(all), "all again")
	filter("#f-min", "1", count(func(t *tito.Trajectory) bool { return t.Reward != nil && *t.Reward >= 1 }), "reward >= 1")
	b.shot(t, "filtered")
	filter("#f-min", "", len(all), "all again")
	filter("#f-agent", "terse", count(func(t *tito.Trajectory) bool { return t.Provenance["agent"] == "terse" }), "agent terse")
	filter("#f-agent", "", len(all), "all again")

	// Live: a trajectory that finishes while the page is open appears in the list.
	b.do(t, "open "+group, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#list .ghead[data-group=%q]`, group))))
	tr.run(t, map[string]any{"request_id": "r3", "agent": "calculator", "items": items("live", 1, "What is 6*7+0?")})
	b.until(t, "the live trajectory in the list", `!!document.querySelector('#list .item[data-id="r3/live0/0"]')`)
	if n := eval[string](t, b, `document.querySelector("#live").dataset.new`); n != "1" {
		t.Errorf("the live indicator counts %s new trajectories, want 1", n)
	}

	// agentrt view on the frames the trainer saved: the same trajectories, and the file followed as it grows.
	frames := filepath.Join(dir, "frames.jsonl")
	first := len(tr.frames) / 2
	writeLines(t, frames, tr.frames[:first], os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	vp := startAgentrt(t, filepath.Join(dir, "view.log"), "view", frames, "--open=false")
	defer vp.kill9(t)
	line, err := vp.stdout.ReadString('\n')
	viewURL, _, _ := strings.Cut(strings.TrimPrefix(line, "agentrt view: "), " ")
	if err != nil || !strings.HasPrefix(viewURL, "http://127.0.0.1:") {
		failWithLog(t, filepath.Join(dir, "view.log"), "agentrt view printed %q (%v)", line, err)
	}
	b.do(t, "open agentrt view", chromedp.Navigate(viewURL))
	b.until(t, "the file's trajectories", fmt.Sprintf(`document.querySelectorAll("#list .item").length === %d`, first))
	if src := eval[string](t, b, `document.querySelector("#source").textContent`); !strings.Contains(src, frames) {
		t.Errorf("the header names %q, not the file", src)
	}
	var f struct {
		ID string `json:"trajectory_id"`
	}
	json.Unmarshal(tr.frames[0], &f)
	b.do(t, "open "+f.ID, chromedp.Navigate(viewURL+"#t="+urlQueryEscape(f.ID)))
	b.until(t, "the file's trajectory", fmt.Sprintf(`document.querySelector("#main").dataset.id === %q && !!document.querySelector(".tview")`, f.ID))
	checkTokens(t, b, ".tview", all[f.ID], tok)
	writeLines(t, frames, tr.frames[first:], os.O_APPEND|os.O_WRONLY)
	b.until(t, "the appended trajectories", fmt.Sprintf(`document.querySelectorAll("#list .item").length === %d`, len(tr.frames)))
	b.shot(t, "file")
}

func writeLines(t *testing.T, path string, lines [][]byte, flag int) {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		f.Write(append(l, '\n'))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func urlQueryEscape(s string) string {
	return strings.NewReplacer("%", "%25", "#", "%23", "&", "%26", "+", "%2B", " ", "%20").Replace(s)
}

// TestViewUsage: agentrt view refuses what it cannot serve, naming the problem.
func TestViewUsage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.jsonl")
	os.WriteFile(file, nil, 0o644)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage: agentrt view FILE"},
		{[]string{file, "--addr", "0.0.0.0:0"}, exitUsage, "not a loopback address"},
		{[]string{file, "--model", filepath.Join(dir, "nope")}, exitUsage, "--model"},
		{[]string{filepath.Join(dir, "missing.jsonl"), "--open=false"}, exitStartup, "missing.jsonl"},
		{[]string{file, "extra"}, exitUsage, "usage: agentrt view FILE"},
	} {
		code, _, stderr := runCLI(t, append([]string{"view"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("agentrt view %q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// TestViewerHubModel: trajectories of a model named by its Hugging Face id get their token texts from the files
// pinned to their model_revision: `agentrt view` takes them from the Hugging Face cache (here offline, the hub
// gone), and serve's viewer from the model it loaded for that commit (and no other).
func TestViewerHubModel(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	commit, err := hub.PushDir("Qwen/Qwen3-8B", os.Getenv("AGENTRT_QWEN3_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	hubEnv(t, hub.URL)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `model = "`+os.Getenv("AGENTRT_QWEN3_MODEL")+`"`, `model = "Qwen/Qwen3-8B"`)
	trajs := runOnce(t, cfg)
	checkPinned(t, trajs, commit)

	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := system.Build(context.Background(), c, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok, why := sys.Tokenizer("Qwen/Qwen3-8B", commit); tok == nil {
		t.Errorf("serve's viewer finds no tokenizer for its hub model at %s: %s", commit, why)
	}
	if tok, _ := sys.Tokenizer("Qwen/Qwen3-8B", strings.Repeat("0", 40)); tok != nil {
		t.Error("serve's viewer decodes another commit's trajectories with its model")
	}
	sys.Close()

	hub.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	file := filepath.Join(dir, "out.jsonl")
	var lines [][]byte
	for _, id := range slices.Sorted(maps.Keys(trajs)) {
		b, _ := json.Marshal(trajs[id])
		lines = append(lines, b)
	}
	writeLines(t, file, lines, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"view", file, "--open=false"}, stdio{strings.NewReader(""), out, io.Discard})
	}()
	defer func() { cancel(); testutil.Wait(t, "agentrt view to stop", done) }()
	var url string
	testutil.Until(t, "agentrt view's URL", func() bool {
		_, rest, ok := strings.Cut(out.String(), "agentrt view: ")
		url, _, _ = strings.Cut(rest, " ")
		return ok && strings.HasSuffix(url, "/view/")
	})
	id := slices.Sorted(maps.Keys(trajs))[0]
	var d struct {
		TokenView struct {
			IDs       []int32  `json:"ids"`
			Text      []string `json:"text"`
			HaveTexts bool     `json:"have_texts"`
			Tokenizer string   `json:"tokenizer"`
		} `json:"token_view"`
	}
	testutil.Until(t, "the file indexed", func() bool {
		resp, err := http.Get(url + "api/trajectory?id=" + urlQueryEscape(id))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&d) == nil
	})
	tok, err := tito.LoadTokenizer(filepath.Join(os.Getenv("AGENTRT_QWEN3_MODEL"), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	if !d.TokenView.HaveTexts || d.TokenView.Tokenizer != "Qwen/Qwen3-8B" || strings.Join(d.TokenView.Text, "") != tok.Decode(d.TokenView.IDs, false) {
		t.Errorf("agentrt view offline on a hub model's trajectory: have_texts %v, tokenizer %q", d.TokenView.HaveTexts, d.TokenView.Tokenizer)
	}
}
