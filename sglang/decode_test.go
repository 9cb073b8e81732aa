package sglang

import (
	"encoding/json"
	"reflect"
	"testing"
)

func decodeSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{
		fixture(t, "generate_response.json", "response"),
		stripElisions(t, fixture(t, "generate_response_logprob_start_len0.json", "response")),
		fixture(t, "abort_responses.json", "abort_running_response"),
		fixture(t, "abort_responses.json", "abort_waiting_response"),
		fixture(t, "generate_batch_response.json", "response"),
		benchBody(),
		[]byte(`{"text":"a\"b\u00e9\n","output_ids":[1,-2,0],"meta_info":{"id":"r","finish_reason":{"type":"length","length":3},"x":[{"y":null},true,false,-1.5e-3,"s\\"]}}`),
		[]byte(`{"text":null,"output_ids":null,"meta_info":null}`),
		[]byte(`{"TEXT":"x","output_ids":[],"meta_info":{"ID":"r"}}`),
		[]byte(`{"output_ids":[1.0],"meta_info":{}}`),
		[]byte(` { "output_ids" : [ 1 , 2 ] , "meta_info" : { "output_token_logprobs" : [ [ null , 1 , null ] , null , [ -0.5 , 2 , "t" ] , [-1,3] ] } } `),
		[]byte(`{"output_ids":[2147483648],"meta_info":{}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"e2e_latency":1e400}}`),
		[]byte(`{"output_ids":[1],"meta_info":{}} x`),
		// finish_reason's shapes (read without encoding/json since Phase 4 of issue 25)
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":{"type":"stop","matched":"</s>\n"},"dp_rank":null,"cached_tokens_details":null}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":{"type":"stop","matched":151645,"matched":null,"extra":[1]}}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":{"type":"abort","message":"Aborted","status_code":400,"err_type":"BadRequestError","status_code":null}}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":{"Type":"stop","matched":-3}}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":{"type":"stop","matched":2147483648}}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":{"type":"length","length":null,"matched":1.5}}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":"stop"}}`),
		[]byte(`{"output_ids":[1],"meta_info":{"finish_reason":null,"weight_versions":null,"input_top_logprobs":null,"dp_rank":2,"cached_tokens_details":{"device":3}}}`),
	}
	return seeds
}

// TestFastDecodeAgreesOnSeeds runs the differential check on the seeds even without -fuzz.
func TestFastDecodeAgreesOnSeeds(t *testing.T) {
	fastOK := 0
	for _, s := range decodeSeeds(t) {
		if checkFastDecode(t, s) {
			fastOK++
		}
	}
	if fastOK < 8 {
		t.Errorf("the fast decoder handled only %d seeds", fastOK)
	}
}

// checkFastDecode: when fastDecode succeeds, encoding/json must succeed with the same value.
func checkFastDecode(t *testing.T, body []byte) bool {
	t.Helper()
	fast, ok := fastDecode(body)
	if !ok {
		return false
	}
	var slow responseWire
	if err := json.Unmarshal(body, &slow); err != nil {
		t.Fatalf("fastDecode accepted what encoding/json rejects (%v):\n%s", err, body)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fastDecode and encoding/json differ on\n%s\nfast %+v\nslow %+v", body, fast, slow)
	}
	return true
}

// FuzzDecodeResponse: go test -run '^$' -fuzz FuzzDecodeResponse -fuzzminimizetime 5x ./sglang/ (the seeds are
// several KB, and unbounded minimization stalls the run on a loaded machine).
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range decodeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastDecode(t, body)
		_, _ = decodeGenerateResponse(body, true) // never panics
	})
}

func benchBody() []byte {
	resp := GenerateResponse{Text: "x", OutputIDs: make([]int32, 200)}
	m := &resp.MetaInfo
	m.ID = "bench"
	m.FinishReason = &FinishReason{Type: FinishStop, MatchedTokenID: 151645}
	m.PromptTokens, m.CompletionTokens, m.CachedTokens = 2000, 200, 1999
	m.WeightVersion = "default"
	m.InputTokenLogprobs = []LogprobEntry{{Null: true, TokenID: 100}}
	for i := range resp.OutputIDs {
		resp.OutputIDs[i] = int32(1000 + i)
		m.OutputTokenLogprobs = append(m.OutputTokenLogprobs, LogprobEntry{Logprob: -0.0001234567 * float64(i+1), TokenID: int32(1000 + i)})
	}
	b, _ := json.Marshal(resp)
	return b
}

// BenchmarkDecodeResponse compares the client's decoder with plain encoding/json on a 200-token answer
// with logprobs.
func BenchmarkDecodeResponse(b *testing.B) {
	body := benchBody()
	b.Run("client", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeGenerateResponse(body, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var w responseWire
			if err := json.Unmarshal(body, &w); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A turn generated across a weight update carries two spans (the meta_info.weight_versions shape slime reads).
func TestDecodeWeightVersionSpans(t *testing.T) {
	body := []byte(`{"text":"ab","output_ids":[1,2,3],"meta_info":{"id":"r","finish_reason":{"type":"stop"},` +
		`"weight_version":"8","weight_versions":[{"version":"7","start":0,"end":2},{"version":"8","start":2,"end":3}]}}`)
	checkFastDecode(t, body)
	resp, err := decodeGenerateResponse(body, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []WeightSpan{{Version: "7", Start: 0, End: 2}, {Version: "8", Start: 2, End: 3}}
	if got := resp.MetaInfo.WeightVersions; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("weight_versions = %+v, want %+v", got, want)
	}
}
