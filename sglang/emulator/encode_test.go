package emulator

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// TestAppendResponseMatchesEncodingJSON: the hand-written encoder writes what encoding/json (no HTML
// escaping) writes, for every optional part.
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
	for i, r := range cases {
		want, err := marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendResponse(nil, r); string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\x1f", "\u2028", "\xff\xfe", "é😀", "<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
		if !utf8.Valid(appendString(nil, s)) || !json.Valid(appendString(nil, s)) {
			t.Fatalf("appendString(%q) is not valid JSON", s)
		}
	})
}
