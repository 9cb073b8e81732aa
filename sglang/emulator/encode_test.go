package emulator

import (
	"strings"
	"testing"
)

// TestAppendResponseMatchesEncodingJSON: the hand-written encoder writes what encoding/json (no HTML
// escaping) writes, for every optional part, but for U+2028 and U+2029, which it leaves unescaped as orjson does
// (internal/jsonw's policy; its FuzzAppend covers strings of every kind).
func TestAppendResponseMatchesEncodingJSON(t *testing.T) {
	txt := "a"
	n, idx, rank := 3, 4, 0
	e2e, ts := 0.25, 1784592000.123
	lp := lpList{{lp: -0.5, id: 1}, {null: true, id: 2, text: &txt}, {lp: -1e-9, id: 3}}
	top := topLists{nil, lp}
	cases := []*genResponse{
		{Text: "plain", OutputIDs: []int32{}, MetaInfo: &metaInfo{ID: "x", WeightVersion: "default"}},
		{Text: "quote \" back \\ nl \n tab \t ctl \x01 <tag> & \u2028 \u2029 é 😀 bad \xff", OutputIDs: []int32{-1, 0, 151645}, PromptTokenIDs: []int32{7},
			MetaInfo: &metaInfo{ID: "r\"id", FinishReason: &finishReason{kind: "stop", matchedStr: "</s>", matchedIsS: true}, PromptTokens: 9, WeightVersion: "v",
				InputTokenLogprobs: &lp, OutputTokenLogprobs: &lp, OutputTokenLogprobsLen: &n, InputTopLogprobs: &top, OutputTopLogprobs: &top,
				InputTokenIDsLogprobs: &top, OutputTokenIDsLogprobs: &top, CompletionTokens: 3, CachedTokens: 5,
				CachedTokensDetails: &cacheDetails{Device: 5}, DPRank: &rank, E2ELatency: &e2e, ResponseSentToClientTS: &ts}, Index: &idx},
		{Text: "", OutputIDs: []int32{}, MetaInfo: &waitingAbortMeta{ID: "w", FinishReason: &finishReason{kind: "abort", message: "Abort in waiting queue", waiting: true}, WeightVersion: "default", E2ELatency: 0.01, ResponseSentToClientTS: ts}},
		{Text: "x", OutputIDs: []int32{5}, MetaInfo: &metaInfo{ID: "a", FinishReason: &finishReason{kind: "abort", message: "Aborted"}, WeightVersion: "d"}},
		{Text: "x", OutputIDs: []int32{5}, MetaInfo: &metaInfo{ID: "a", FinishReason: &finishReason{kind: "length", length: 1}, WeightVersion: "d"}},
	}
	orjson := strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029") // no case holds the text `\u2028` itself
	for i, r := range cases {
		want, err := marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		want = []byte(orjson.Replace(string(want)))
		if got := appendResponse(nil, r); string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// BenchmarkAppendResponse is the encoding of a /generate answer alone: 256 output ids with their logprobs and a
// 1 KB text (escapes and non-ASCII in it).
func BenchmarkAppendResponse(b *testing.B) {
	const n = 256
	text := ""
	for len(text) < 1024 {
		text += "The \"answer\" is 84.\nÉtape 2: <tool_call>{\"name\": \"calc\"}</tool_call> "
	}
	ids := make([]int32, n)
	lp := make(lpList, n)
	for i := range ids {
		ids[i] = int32(100 + 397*i%151000)
		lp[i] = lpEntry{lp: -0.0123456789 * float64(i%7), id: ids[i]}
	}
	n1, e2e, ts := n, 0.8125, 1784592000.123
	r := &genResponse{Text: text, OutputIDs: ids, MetaInfo: &metaInfo{ID: "0123456789abcdef", FinishReason: &finishReason{kind: "stop", matchedID: 151645},
		PromptTokens: 2000, WeightVersion: "default", OutputTokenLogprobs: &lp, OutputTokenLogprobsLen: &n1, CompletionTokens: n,
		CachedTokens: 1999, E2ELatency: &e2e, ResponseSentToClientTS: &ts}}
	buf := appendResponse(nil, r)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = appendResponse(buf[:0], r)
	}
}
