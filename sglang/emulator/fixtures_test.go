package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The emulator's JSON shapes against sglang/testdata/fixtures (built from SGLang's source): same keys in the same
// order, same JSON types, the same null/non-null fields.

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func elided(v any) bool {
	if s, ok := v.(string); ok && s == "..." {
		return true
	}
	if a, ok := v.([]any); ok {
		for _, x := range a {
			if elided(x) {
				return true
			}
		}
	}
	return false
}

// shapeDiff lists where got's shape differs from want's. Arrays are compared element-wise against the fixture
// element at the same index, or its last concrete element ("..." marks elided entries in the fixtures).
func shapeDiff(path string, want, got any) []string {
	if elided(want) {
		return nil
	}
	if jsonType(want) != jsonType(got) {
		return []string{fmt.Sprintf("%s: fixture has %s (%v), emulator %s (%v)", path, jsonType(want), want, jsonType(got), got)}
	}
	var d []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for k := range w {
			if k == "_comment" {
				continue
			}
			if _, ok := g[k]; !ok {
				d = append(d, fmt.Sprintf("%s.%s: missing in emulator response", path, k))
				continue
			}
			d = append(d, shapeDiff(path+"."+k, w[k], g[k])...)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				d = append(d, fmt.Sprintf("%s.%s: not in the fixture", path, k))
			}
		}
	case []any:
		g := got.([]any)
		var concrete []any
		for _, x := range w {
			if !elided(x) {
				concrete = append(concrete, x)
			}
		}
		if len(concrete) == 0 {
			return nil
		}
		for i, x := range g {
			ref := concrete[len(concrete)-1]
			if i < len(w) && !elided(w[i]) {
				ref = w[i]
			}
			d = append(d, shapeDiff(fmt.Sprintf("%s[%d]", path, i), ref, x)...)
		}
	}
	return d
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %.80s", raw)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func rawField(t testing.TB, raw []byte, key string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m[key]
}

// checkShape compares a response (raw JSON) with a fixture object, key order of the response and its
// meta_info included.
func checkShape(t *testing.T, name string, want any, got []byte) {
	t.Helper()
	var g any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, d := range shapeDiff(name, want, g) {
		t.Error(d)
	}
}

// modelInfoSince0523 are /model_info keys of SGLang 0.5.23 that the reference fixture (an older SGLang) lacks; the
// contract test (sglang/contract_test.go) checks them against 0.5.23's own handler.
var modelInfoSince0523 = []string{"served_model_name", "load_format", "reasoning_parser", "tool_call_parser", "disaggregation_mode"}

// checkShapeNewer is checkShape that also accepts the top-level keys in newer, which the fixture does not have.
func checkShapeNewer(t *testing.T, name string, want any, got []byte, newer []string) {
	t.Helper()
	var g map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, k := range newer {
		if _, ok := g[k]; !ok {
			t.Errorf("%s lacks %q (SGLang 0.5.23 has it)", name, k)
		}
		delete(g, k)
	}
	for _, d := range shapeDiff(name, want, any(g)) {
		t.Error(d)
	}
}

// fixtureKeyOrder reads the key order of an object at a path inside a fixture file.
func fixtureKeyOrder(t testing.TB, file string, path ...string) []string {
	t.Helper()
	raw := rawFixture(t, file)
	for _, p := range path {
		raw = rawField(t, raw, p)
	}
	return objectKeys(t, raw)
}

func rawFixture(t testing.TB, file string) []byte {
	t.Helper()
	data, err := readRef(file)
	if err != nil {
		t.Skip(err)
	}
	return data
}

func checkKeyOrder(t *testing.T, name string, want []string, got []byte) {
	t.Helper()
	g := objectKeys(t, got)
	if !slices.Equal(want, g) {
		t.Errorf("%s: key order\n fixture:  %v\n emulator: %v", name, want, g)
	}
}

func fixtureRequest(t *testing.T) map[string]any {
	req := refFixture(t, "generate_request.json")
	delete(req, "_comment")
	return req
}

func TestShapeGenerateResponse(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	req := fixtureRequest(t)
	r := post(t, url, "/generate", req)
	if r.status != http.StatusOK || !strings.HasPrefix(r.ctype, "application/json") {
		t.Fatalf("status %d %s: %s", r.status, r.ctype, r.body)
	}
	want := refFixture(t, "generate_response.json")["response"]
	checkShape(t, "generate_response", want, r.body)
	checkKeyOrder(t, "response", fixtureKeyOrder(t, "generate_response.json", "response"), r.body)
	checkKeyOrder(t, "meta_info", fixtureKeyOrder(t, "generate_response.json", "response", "meta_info"), rawField(t, r.body, "meta_info"))

	var g gen
	_ = json.Unmarshal(r.body, &g)
	// skip_special_tokens=false and no_stop_trim=true: the stop token stays in text, as in the fixture
	if !strings.HasSuffix(g.Text, "<|im_end|>") {
		t.Errorf("text %q: want the <|im_end|> kept (no_stop_trim, skip_special_tokens=false)", g.Text)
	}
	if g.OutputIDs[len(g.OutputIDs)-1] != 151645 {
		t.Errorf("output_ids end with %d, want 151645", g.OutputIDs[len(g.OutputIDs)-1])
	}
	if f := g.finish(); f["type"] != "stop" || f["matched"] != float64(151645) {
		t.Errorf("finish_reason %v", f)
	}
	if g.num("completion_tokens") != len(g.OutputIDs) || g.num("output_token_logprobs_length") != len(g.OutputIDs) {
		t.Errorf("completion_tokens %d, output_token_logprobs_length %d, want %d", g.num("completion_tokens"), g.num("output_token_logprobs_length"), len(g.OutputIDs))
	}
	for i, pos := range g.MetaInfo["output_top_logprobs"].([]any) {
		if n := len(pos.([]any)); n != 2 {
			t.Fatalf("output_top_logprobs[%d] has %d entries, want top_logprobs_num=2", i, n)
		}
	}
}

func TestShapeLogprobStartLen0(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	fx := refFixture(t, "generate_response_logprob_start_len0.json")
	req := fixtureRequest(t)
	maps.Copy(req, fx["request_delta"].(map[string]any))
	r := post(t, url, "/generate", req)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	checkShape(t, "logprob_start_len0", fx["response"], r.body)
	checkKeyOrder(t, "meta_info", fixtureKeyOrder(t, "generate_response_logprob_start_len0.json", "response", "meta_info"), rawField(t, r.body, "meta_info"))
	var g gen
	_ = json.Unmarshal(r.body, &g)
	if strings.Contains(g.Text, "<|im_end|>") || g.OutputIDs[len(g.OutputIDs)-1] != 151645 {
		t.Errorf("text %q must have the stop trimmed while output_ids keep it (%v)", g.Text, g.OutputIDs[len(g.OutputIDs)-1])
	}
	in := g.MetaInfo["input_token_logprobs"].([]any)
	if len(in) != g.num("prompt_tokens") {
		t.Errorf("input_token_logprobs has %d entries, want prompt_tokens %d", len(in), g.num("prompt_tokens"))
	}
	if first := in[0].([]any); first[0] != nil || first[2] != "<|im_start|>" {
		t.Errorf("input_token_logprobs[0] = %v, want [null, 151644, \"<|im_start|>\"]", first)
	}
	if g.MetaInfo["input_top_logprobs"].([]any)[0] != nil {
		t.Error("input_top_logprobs[0] must be null")
	}
}

func TestShapeStream(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	req := fixtureRequest(t)
	req["stream"] = true
	r := post(t, url, "/generate", req)
	if r.status != http.StatusOK || !strings.HasPrefix(r.ctype, "text/event-stream") {
		t.Fatalf("status %d %s", r.status, r.ctype)
	}
	if !bytes.HasSuffix(r.body, []byte("data: [DONE]\n\n")) {
		t.Errorf("stream does not end with data: [DONE]: %q", r.body[max(0, len(r.body)-40):])
	}
	got := sseEvents(t, r.body)
	want := refSSE(t, "generate_stream.txt")
	if got[len(got)-1] != "[DONE]" || len(got) < 3 {
		t.Fatalf("events: %d, last %q", len(got), got[len(got)-1])
	}
	got = got[:len(got)-1]
	want = want[:len(want)-1]
	var prev []int32
	for i, ev := range got {
		ref := want[1] // a middle chunk
		switch i {
		case 0:
			ref = want[0]
		case len(got) - 1:
			ref = want[len(want)-1]
		}
		var w any
		_ = json.Unmarshal([]byte(ref), &w)
		checkShape(t, fmt.Sprintf("event[%d]", i), w, []byte(ev))
		checkKeyOrder(t, fmt.Sprintf("event[%d].meta_info", i), objectKeys(t, rawField(t, []byte(ref), "meta_info")), rawField(t, []byte(ev), "meta_info"))
		var g gen
		_ = json.Unmarshal([]byte(ev), &g)
		if !slices.Equal(prev, g.OutputIDs[:min(len(prev), len(g.OutputIDs))]) || len(g.OutputIDs) < len(prev) {
			t.Errorf("event[%d]: output_ids not cumulative", i)
		}
		prev = g.OutputIDs
	}
}

func TestShapeBatch(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	fx := refFixture(t, "generate_batch_response.json")
	r := post(t, url, "/generate", fx["request"])
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	checkShape(t, "batch", fx["response"], r.body)
	var arr []gen
	if err := json.Unmarshal(r.body, &arr); err != nil || len(arr) != 2 {
		t.Fatalf("want a JSON array of 2: %v %s", err, r.body)
	}
	for i, g := range arr {
		if id := g.MetaInfo["id"]; id != fmt.Sprintf("batch-7_%d", i) {
			t.Errorf("item %d: id %v, want batch-7_%d", i, id, i)
		}
	}
	// n > 1: an array, prompt-major, fresh uuid rids
	r = post(t, url, "/generate", map[string]any{"rid": "x", "input_ids": []int{1, 2, 3}, "sampling_params": map[string]any{"n": 3, "max_new_tokens": 8}})
	if err := json.Unmarshal(r.body, &arr); err != nil || len(arr) != 3 {
		t.Fatalf("n=3: want an array of 3: %v %s", err, r.body)
	}
	for _, g := range arr {
		if id, _ := g.MetaInfo["id"].(string); len(id) != 32 {
			t.Errorf("n=3: id %q, want a uuid4 hex", id)
		}
	}
	// streaming batch: every event carries "index"
	r = post(t, url, "/generate", map[string]any{"rid": "b", "stream": true, "input_ids": [][]int{{1, 2}, {3, 4}}, "sampling_params": map[string]any{"max_new_tokens": 4}})
	seen := map[float64]bool{}
	for _, ev := range sseEvents(t, r.body) {
		if ev == "[DONE]" {
			continue
		}
		var e map[string]any
		_ = json.Unmarshal([]byte(ev), &e)
		idx, ok := e["index"].(float64)
		if !ok {
			t.Fatalf("batch stream event without index: %s", ev)
		}
		seen[idx] = true
	}
	if !seen[0] || !seen[1] {
		t.Errorf("batch stream indexes %v", seen)
	}
}

func TestShapeEndpoints(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	var eps struct {
		Endpoints []map[string]any `json:"endpoints"`
	}
	raw, err := readRef("endpoints.json")
	if err != nil {
		t.Skip(err)
	}
	if err := json.Unmarshal(raw, &eps); err != nil {
		t.Fatal(err)
	}
	byPath := map[string]map[string]any{}
	for _, e := range eps.Endpoints {
		byPath[e["path"].(string)] = e
	}
	for _, path := range []string{"/model_info", "/v1/models"} {
		r := get(t, url, path)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d", path, r.status)
		}
		if path == "/model_info" {
			checkShapeNewer(t, path, byPath[path]["response_example"], r.body, modelInfoSince0523)
			continue
		}
		checkShape(t, path, byPath[path]["response_example"], r.body)
	}
	r := get(t, url, "/server_info")
	var si map[string]any
	_ = json.Unmarshal(r.body, &si)
	for k := range byPath["/server_info"]["response_example_subset"].(map[string]any) {
		if _, ok := si[k]; !ok {
			t.Errorf("/server_info lacks %q", k)
		}
	}
	for _, c := range []struct {
		path string
		body any
	}{
		{"/pause_generation", map[string]any{"mode": "in_place"}},
		{"/continue_generation", map[string]any{"torch_empty_cache": true}},
		{"/update_weights_from_disk", byPath["/update_weights_from_disk"]["request_example"]},
		{"/update_weight_version", byPath["/update_weight_version"]["request_example"]},
	} {
		r := post(t, url, c.path, c.body)
		if r.status != http.StatusOK {
			t.Errorf("%s: status %d: %s", c.path, r.status, r.body)
			continue
		}
		var g any
		_ = json.Unmarshal(r.body, &g)
		want := byPath[c.path]["response_example"]
		for _, d := range shapeDiff(c.path, want, g) {
			t.Error(d)
		}
		if c.path == "/pause_generation" || c.path == "/continue_generation" {
			if !jsonEqual(want, g) {
				t.Errorf("%s: %s, want %v", c.path, r.body, want)
			}
		}
	}
	// /get_weight_version is gone: 404 with SGLang's body
	r = get(t, url, "/get_weight_version")
	var g any
	_ = json.Unmarshal(r.body, &g)
	if r.status != http.StatusNotFound || !jsonEqual(byPath["/get_weight_version"]["response_example"], g) {
		t.Errorf("/get_weight_version: %d %s", r.status, r.body)
	}
	// /abort_request: 200, empty body, whatever the rid
	r = post(t, url, "/abort_request", map[string]any{"rid": "nope", "abort_all": false})
	if r.status != http.StatusOK || len(r.body) != 0 {
		t.Errorf("/abort_request: %d %q", r.status, r.body)
	}
	// health: 200, empty body
	for _, p := range []string{"/health", "/health_generate"} {
		if r := get(t, url, p); r.status != http.StatusOK || len(r.body) != 0 {
			t.Errorf("%s: %d %q", p, r.status, r.body)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestShapeStreamIncremental(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.IncrementalStreaming = true
	_, url := start(t, cfg, m.Tokenizer)
	req := fixtureRequest(t)
	req["stream"] = true
	cum := generate(t, url, func() map[string]any { r := maps.Clone(req); r["stream"] = false; return r }())
	post(t, url, "/flush_cache", nil) // no cache hit, like the fixture
	r := post(t, url, "/generate", req)
	got := sseEvents(t, r.body)
	want := refSSE(t, "generate_stream_incremental.txt")
	got, want = got[:len(got)-1], want[:len(want)-1]
	var ids []int32
	var text string
	for i, ev := range got {
		ref := want[1]
		switch i {
		case 0:
			ref = want[0]
		case len(got) - 1:
			ref = want[len(want)-1]
		}
		var w any
		_ = json.Unmarshal([]byte(ref), &w)
		checkShape(t, fmt.Sprintf("event[%d]", i), w, []byte(ev))
		var g gen
		_ = json.Unmarshal([]byte(ev), &g)
		if n := len(g.MetaInfo["output_token_logprobs"].([]any)); n != len(g.OutputIDs) {
			t.Errorf("event[%d]: %d logprobs for %d delta ids", i, n, len(g.OutputIDs))
		}
		ids = append(ids, g.OutputIDs...)
		text += g.Text
		if g.num("completion_tokens") != len(ids) || g.num("output_token_logprobs_length") != len(ids) {
			t.Errorf("event[%d]: completion_tokens %d, output_token_logprobs_length %d, want cumulative %d", i, g.num("completion_tokens"), g.num("output_token_logprobs_length"), len(ids))
		}
	}
	if !slices.Equal(ids, cum.OutputIDs) || text != cum.Text {
		t.Errorf("deltas add up to %v %q, want %v %q", ids, text, cum.OutputIDs, cum.Text)
	}
}

func TestAPIKey(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.APIKey = "sekret"
	_, url := start(t, cfg, m.Tokenizer)
	fx := refFixture(t, "error_unauthorized.json")
	r := post(t, url, "/generate", map[string]any{"input_ids": []int{1}})
	if r.status != http.StatusUnauthorized || !jsonEqualRaw(fx["body"], r.body) {
		t.Errorf("no key: %d %s", r.status, r.body)
	}
	if r := get(t, url, "/health"); r.status != http.StatusOK {
		t.Errorf("/health needs no key: %d", r.status)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/model_info", nil)
	req.Header.Set("Authorization", "Bearer sekret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("with the key: %v %v", err, resp.Status)
	}
	resp.Body.Close()
}
