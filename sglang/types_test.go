package sglang

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixture reads testdata/fixtures/name and returns the value at the given top-level key (or the whole
// document when key is "").
func fixture(t testing.TB, name, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	if key == "" {
		return b
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	v, ok := m[key]
	if !ok {
		t.Fatalf("%s has no key %q", name, key)
	}
	return v
}

// marshalNoHTML is json.Marshal without HTML escaping (SGLang's orjson does not escape '<', '>', '&').
func marshalNoHTML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// stripElisions removes the "..." placeholders the reference fixtures use for omitted list items, which
// are not wire data.
func stripElisions(t testing.TB, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) (any, bool)
	walk = func(x any) (any, bool) {
		switch x := x.(type) {
		case string:
			return x, x == "..."
		case []any:
			out := []any{}
			for _, e := range x {
				e2, elided := walk(e)
				if !elided {
					out = append(out, e2)
				}
			}
			if len(x) > 0 && len(out) == 0 {
				return nil, true
			}
			return out, false
		case map[string]any:
			for k, e := range x {
				x[k], _ = walk(e)
			}
			return x, false
		}
		return x, false
	}
	v, _ = walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oracleTriples decodes meta_info[key] with plain encoding/json, independent of LogprobEntry.
func oracleTriples(t *testing.T, body []byte, key string) [][]any {
	t.Helper()
	var w struct {
		MetaInfo map[string]json.RawMessage `json:"meta_info"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	var out [][]any
	if err := json.Unmarshal(w.MetaInfo[key], &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkTriples(t *testing.T, what string, got []LogprobEntry, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if w[0] == nil {
			if !g.Null {
				t.Errorf("%s[%d]: logprob %v, want null", what, i, g.Logprob)
			}
		} else if g.Null || math.Float64bits(g.Logprob) != math.Float64bits(w[0].(float64)) {
			t.Errorf("%s[%d]: logprob %v (null %v), want %v bit for bit", what, i, g.Logprob, g.Null, w[0])
		}
		if float64(g.TokenID) != w[1].(float64) {
			t.Errorf("%s[%d]: token %d, want %v", what, i, g.TokenID, w[1])
		}
		switch {
		case w[2] == nil && g.Text != nil:
			t.Errorf("%s[%d]: text %q, want null", what, i, *g.Text)
		case w[2] != nil && (g.Text == nil || *g.Text != w[2].(string)):
			t.Errorf("%s[%d]: text %v, want %q", what, i, g.Text, w[2])
		}
	}
}

func TestDecodeResponseFixture(t *testing.T) {
	body := fixture(t, "generate_response.json", "response")
	resp, err := decodeGenerateResponse(body, true)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []int32{10234, 1513, 944, 13923, 6950, 32199, 30, 9211, 807, 1281, 705, 4297, 13, 151645}
	if !reflect.DeepEqual(resp.OutputIDs, wantIDs) {
		t.Errorf("output_ids = %v", resp.OutputIDs)
	}
	if resp.Text != "Why don't scientists trust atoms? Because they make up everything.<|im_end|>" {
		t.Errorf("text = %q", resp.Text)
	}
	m := resp.MetaInfo
	if m.ID != "rollout-42-turn-0" || m.PromptTokens != 33 || m.CompletionTokens != 14 || m.CachedTokens != 0 ||
		m.WeightVersion != "default" || m.E2ELatency != 0.2871 || m.OutputTokenLogprobsLength != 14 ||
		m.ResponseSentToClientTS != 1784592000.123 || m.DPRank != nil || m.CachedTokensDetails != nil {
		t.Errorf("meta_info = %+v", m)
	}
	if fr := m.FinishReason; fr == nil || fr.Type != FinishStop || fr.MatchedTokenID != 151645 || fr.MatchedText != "" {
		t.Errorf("finish_reason = %+v", fr)
	}
	if m.InputTokenLogprobs == nil || len(m.InputTokenLogprobs) != 0 {
		t.Errorf("input_token_logprobs = %v, want present and empty", m.InputTokenLogprobs)
	}
	checkTriples(t, "output_token_logprobs", m.OutputTokenLogprobs, oracleTriples(t, body, "output_token_logprobs"))
	if len(m.OutputTopLogprobs) != 14 || len(m.OutputTopLogprobs[4]) != 2 || m.OutputTopLogprobs[4][1].Logprob != -8.1 ||
		m.OutputTopLogprobs[4][1].TokenID != 6016 {
		t.Errorf("output_top_logprobs[4] = %+v", m.OutputTopLogprobs[4])
	}
}

func TestDecodeResponseLogprobStartLen0Fixture(t *testing.T) {
	body := stripElisions(t, fixture(t, "generate_response_logprob_start_len0.json", "response"))
	resp, err := decodeGenerateResponse(body, true)
	if err != nil {
		t.Fatal(err)
	}
	m := resp.MetaInfo
	checkTriples(t, "input_token_logprobs", m.InputTokenLogprobs, oracleTriples(t, body, "input_token_logprobs"))
	checkTriples(t, "output_token_logprobs", m.OutputTokenLogprobs, oracleTriples(t, body, "output_token_logprobs"))
	if !m.InputTokenLogprobs[0].Null || m.InputTokenLogprobs[0].TokenID != 151644 {
		t.Errorf("first input logprob = %+v, want null for token 151644", m.InputTokenLogprobs[0])
	}
	if m.InputTopLogprobs[0] != nil || len(m.InputTopLogprobs[1]) != 2 {
		t.Errorf("input_top_logprobs = %+v, want [null, [2 entries]]", m.InputTopLogprobs)
	}
	if !strings.HasSuffix(resp.Text, "everything.") || resp.OutputIDs[len(resp.OutputIDs)-1] != 151645 {
		t.Errorf("text %q / output_ids %v: stop trimmed from text only", resp.Text, resp.OutputIDs)
	}
}

func TestDecodeAbortFixtures(t *testing.T) {
	for _, key := range []string{"abort_running_response", "abort_waiting_response"} {
		resp, err := decodeGenerateResponse(fixture(t, "abort_responses.json", key), true)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if fr := resp.MetaInfo.FinishReason; fr.Type != FinishAbort || fr.Message == "" || fr.StatusCode != 0 || fr.ErrType != "" {
			t.Errorf("%s: finish_reason = %+v", key, fr)
		}
	}
}

func TestDecodeResponseRequiredFields(t *testing.T) {
	good := fixture(t, "generate_response.json", "response")
	drop := func(path ...string) []byte {
		var v map[string]any
		if err := json.Unmarshal(good, &v); err != nil {
			t.Fatal(err)
		}
		m := v
		for _, p := range path[:len(path)-1] {
			m = m[p].(map[string]any)
		}
		delete(m, path[len(path)-1])
		b, _ := json.Marshal(v)
		return b
	}
	tests := []struct {
		name      string
		body      []byte
		logprobs  bool
		wantField string
		retry     bool
	}{
		{"no output_ids", drop("output_ids"), false, `"output_ids"`, false},
		{"no meta_info", drop("meta_info"), false, `"meta_info"`, false},
		{"no finish_reason", drop("meta_info", "finish_reason"), false, `"meta_info.finish_reason"`, false},
		{"no output logprobs", drop("meta_info", "output_token_logprobs"), true, `"meta_info.output_token_logprobs"`, false},
		{"truncated", good[:len(good)/2], false, "undecodable", true},
		{"html", []byte("<html>Bad Gateway</html>"), false, "undecodable", true},
		{"array", fixture(t, "generate_batch_response.json", "response"), false, "array", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeGenerateResponse(tt.body, tt.logprobs)
			if err == nil || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("err = %v, want one naming %s", err, tt.wantField)
			}
			if retryable(err) != tt.retry {
				t.Errorf("retryable = %v, want %v", retryable(err), tt.retry)
			}
		})
	}
	// Unknown fields are tolerated.
	var v map[string]any
	_ = json.Unmarshal(good, &v)
	v["brand_new_field"] = []any{1, "x"}
	v["meta_info"].(map[string]any)["spec_accept_rate"] = 0.5
	b, _ := json.Marshal(v)
	if _, err := decodeGenerateResponse(b, true); err != nil {
		t.Errorf("unknown fields: %v", err)
	}
}

func TestEncodeRequestMatchesFixture(t *testing.T) {
	req := &GenerateRequest{
		RID:      "rollout-42-turn-0",
		InputIDs: []int32{151644, 8948, 198, 2610, 525, 1207, 16948, 11, 3465, 553, 54364, 14817, 13, 1446, 525, 264, 10950, 17847, 13, 151645, 198, 151644, 872, 198, 72357, 752, 264, 21646, 151645, 198, 151644, 77091, 198},
		SamplingParams: SamplingParams{
			MaxNewTokens:               512,
			Temperature:                new(1.0),
			TopP:                       new(1.0),
			TopK:                       new(-1),
			MinP:                       new(0.0),
			StopTokenIDs:               []int32{151645, 151643},
			SkipSpecialTokens:          new(false),
			SpacesBetweenSpecialTokens: new(false),
			NoStopTrim:                 true,
		},
		ReturnLogprob:   true,
		LogprobStartLen: -1,
		TopLogprobsNum:  2,
	}
	got, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var gotV, wantV map[string]any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("our encoding is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(fixture(t, "generate_request.json", ""), &wantV); err != nil {
		t.Fatal(err)
	}
	delete(wantV, "_comment")
	delete(wantV, "return_text_in_logprobs") // false is the server default; we omit it
	if !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("encoding differs from the fixture\ngot  %s", got)
	}

	// Decoding our own encoding gives the request back, and does not touch the input.
	var back GenerateRequest
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, req) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", back, *req)
	}
}

func TestEncodeRequestMinimal(t *testing.T) {
	req := &GenerateRequest{InputIDs: []int32{1, 2}, SamplingParams: SamplingParams{MaxNewTokens: 0}}
	got, _ := json.Marshal(req)
	if want := `{"input_ids":[1,2],"sampling_params":{"max_new_tokens":0},"stream":false}`; string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestEncodeExtra(t *testing.T) {
	req := &GenerateRequest{
		InputIDs:       []int32{1},
		SamplingParams: SamplingParams{MaxNewTokens: 4, Stop: []string{"</tool_call>", "a\"b\n"}, Extra: map[string]any{"logit_bias": map[string]float64{"5": -100}}},
		Extra:          map[string]any{"extra_key": "salt", "return_prompt_token_ids": true},
	}
	got, err := marshalNoHTML(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"input_ids":[1],"sampling_params":{"max_new_tokens":4,"stop":["</tool_call>","a\"b\n"],"logit_bias":{"5":-100}},"stream":false,"extra_key":"salt","return_prompt_token_ids":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var back GenerateRequest
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Extra["extra_key"] != "salt" || back.SamplingParams.Extra["logit_bias"] == nil || back.LogprobStartLen != -1 {
		t.Errorf("decoded %+v", back)
	}

	req.Extra = map[string]any{"rid": "x"}
	if _, err := json.Marshal(req); err == nil || !strings.Contains(err.Error(), `"rid"`) {
		t.Errorf("duplicate key: err = %v", err)
	}
	req.Extra = nil
	req.SamplingParams.Extra = map[string]any{"temperature": 0.5}
	if _, err := json.Marshal(req); err == nil || !strings.Contains(err.Error(), `"temperature"`) {
		t.Errorf("duplicate sampling key: err = %v", err)
	}
	req.SamplingParams.Extra = nil
	req.SamplingParams.Temperature = new(math.NaN())
	if _, err := json.Marshal(req); err == nil {
		t.Error("NaN temperature encoded")
	}
}

func TestDecodeSamplingParamsStopString(t *testing.T) {
	var p SamplingParams
	if err := json.Unmarshal([]byte(`{"max_new_tokens":3,"stop":"END","seed":7}`), &p); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Stop, []string{"END"}) || p.Extra["seed"] != float64(7) {
		t.Errorf("got %+v", p)
	}
}

func TestFinishReasonRoundTrip(t *testing.T) {
	tests := []string{
		`{"type":"stop","matched":151645}`,
		`{"type":"stop","matched":"</tool_call>"}`,
		`{"type":"length","length":512}`,
		`{"type":"abort","message":"Aborted","status_code":null,"err_type":null}`,
		`{"type":"abort","message":"req.logprob_start_len=40 is higher","status_code":400,"err_type":"BadRequestError"}`,
	}
	for _, in := range tests {
		var f FinishReason
		if err := json.Unmarshal([]byte(in), &f); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := marshalNoHTML(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("round trip\n in  %s\n out %s", in, out)
		}
	}
}

// FuzzLogprobEntry checks the hand-written triple decoder against encoding/json.
func FuzzLogprobEntry(f *testing.F) {
	for _, s := range []string{`[-1.4453125, 10234, null]`, `[null,151644,"<|im_start|>"]`, `[-0.5,13,"a\"b"]`,
		`[1e-05, 7, "x"]`, `[ -2 , 0 , null ]`, `[-1,2]`, `null`, `[1,2,3]`, `["x",1,null]`, `[1,99999999999,null]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got LogprobEntry
		gotErr := got.UnmarshalJSON([]byte(s))
		if !json.Valid([]byte(s)) {
			return // encoding/json only ever passes valid JSON; it must just not panic
		}
		var raw []json.RawMessage
		if json.Unmarshal([]byte(s), &raw) != nil || (len(raw) != 3 && len(raw) != 2) {
			if gotErr == nil && strings.TrimSpace(s) != "null" {
				t.Fatalf("%q: accepted, encoding/json does not see a 2- or 3-element array", s)
			}
			return
		}
		var want LogprobEntry
		wantOK := true
		if string(bytes.TrimSpace(raw[0])) == "null" {
			want.Null = true
		} else if json.Unmarshal(raw[0], &want.Logprob) != nil {
			wantOK = false
		}
		if string(bytes.TrimSpace(raw[1])) == "null" || json.Unmarshal(raw[1], &want.TokenID) != nil {
			wantOK = false
		}
		if len(raw) == 3 && string(bytes.TrimSpace(raw[2])) != "null" {
			var s string
			if json.Unmarshal(raw[2], &s) != nil {
				wantOK = false
			}
			want.Text = &s
		}
		if !wantOK {
			if gotErr == nil {
				t.Fatalf("%q: accepted, encoding/json rejects an element", s)
			}
			return
		}
		if gotErr != nil {
			t.Fatalf("%q: %v, encoding/json accepts it", s, gotErr)
		}
		if got.Null != want.Null || math.Float64bits(got.Logprob) != math.Float64bits(want.Logprob) || got.TokenID != want.TokenID ||
			(got.Text == nil) != (want.Text == nil) || (got.Text != nil && *got.Text != *want.Text) {
			t.Fatalf("%q: got %+v want %+v", s, got, want)
		}
	})
}

// FuzzEncodeRequest checks the hand-written request encoder: its output is valid JSON that decodes (with
// encoding/json, through a plain struct without custom methods) to the fields it was given.
func FuzzEncodeRequest(f *testing.F) {
	f.Add("rollout-1", "hello", "</tool_call>", int32(151645), -1, 0.7, int64(3))
	f.Add("", "", "", int32(-5), 0, -0.0, int64(-1))
	f.Add("a\"b\\c\x00\u2028", "bad\xff\xfeutf8 <&>", "\t\n", int32(2147483647), 40, 1e-7, int64(1<<62))
	f.Fuzz(func(t *testing.T, rid, text, stop string, id int32, start int, temp float64, seed int64) {
		if math.IsNaN(temp) || math.IsInf(temp, 0) {
			return
		}
		req := &GenerateRequest{
			InputIDs:        []int32{id, 0, -id, 7},
			Text:            text,
			SamplingParams:  SamplingParams{MaxNewTokens: start, Temperature: &temp, Stop: []string{stop, text}, StopTokenIDs: []int32{id}, SamplingSeed: &seed},
			ReturnLogprob:   true,
			LogprobStartLen: start,
			RID:             rid,
		}
		b, err := req.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			InputIDs       []int32 `json:"input_ids"`
			Text           string  `json:"text"`
			SamplingParams struct {
				MaxNewTokens int      `json:"max_new_tokens"`
				Temperature  float64  `json:"temperature"`
				Stop         []string `json:"stop"`
				StopTokenIDs []int32  `json:"stop_token_ids"`
				SamplingSeed int64    `json:"sampling_seed"`
			} `json:"sampling_params"`
			LogprobStartLen int    `json:"logprob_start_len"`
			RID             string `json:"rid"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("invalid JSON %s: %v", b, err)
		}
		valid := func(s string) string { // invalid UTF-8 is sent as U+FFFD per byte, as encoding/json does
			enc, _ := json.Marshal(s)
			var out string
			_ = json.Unmarshal(enc, &out)
			return out
		}
		sp := got.SamplingParams
		if !reflect.DeepEqual(got.InputIDs, req.InputIDs) || got.Text != valid(text) || got.RID != valid(rid) ||
			got.LogprobStartLen != start || sp.MaxNewTokens != start || math.Float64bits(sp.Temperature) != math.Float64bits(temp) && temp != 0 ||
			sp.SamplingSeed != seed || !reflect.DeepEqual(sp.StopTokenIDs, []int32{id}) ||
			len(sp.Stop) != 2 || sp.Stop[0] != valid(stop) || sp.Stop[1] != valid(text) {
			t.Fatalf("round trip of %s\ngot %+v", b, got)
		}
	})
}
