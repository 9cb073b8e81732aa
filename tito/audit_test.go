package tito

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestAudit(t *testing.T) {
	tk := tkModel(t, "qwen3").Tokenizer
	hello := tk.Encode("Hello", false)
	if len(hello) != 1 {
		t.Fatalf("Encode(Hello) = %v, want one token", hello)
	}
	hel, lo := tk.Encode("Hel", false), tk.Encode("lo", false)
	imEnd, _ := tk.TokenID("<|im_end|>")

	canonical := append(tk.Encode("The answer is 42.", false), imEnd)
	split := append(append(slices.Clone(hel), lo...), imEnd) // "Hello" sampled as Hel+lo: not what encode gives
	tests := []struct {
		name      string
		responses [][]int32
		want      []SegmentDrift
		summary   DriftSummary
	}{
		{"canonical", [][]int32{canonical}, []SegmentDrift{{Canonical: true, ReencodedLength: len(canonical), FirstDiff: -1}}, DriftSummary{Audited: 1}},
		{"split word", [][]int32{canonical, split}, []SegmentDrift{
			{Canonical: true, ReencodedLength: len(canonical), FirstDiff: -1},
			{Canonical: false, ReencodedLength: 2, FirstDiff: 0},
		}, DriftSummary{Audited: 2, Drifted: 1, DriftedTokens: len(split)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTrajectory()
			for _, out := range tt.responses {
				mustNoErr(t, tr.AppendPrompt(tk.Encode("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n", false)))
				mustNoErr(t, tr.AppendResponse(trResponse(tr, out)))
			}
			before := slices.Clone(tr.TokenIDs)
			if got := tr.Audit(tk); got != tt.summary {
				t.Errorf("Audit = %+v, want %+v", got, tt.summary)
			}
			if !slices.Equal(tr.TokenIDs, before) {
				t.Error("Audit changed tokens")
			}
			var got []SegmentDrift
			for _, s := range tr.Segments {
				if s.Kind == KindResponse {
					got = append(got, *s.Drift)
				} else if s.Drift != nil {
					t.Errorf("prompt segment audited")
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("segment drift = %+v, want %+v", got, tt.want)
			}
			if tr.DriftCount() != tt.summary.Drifted {
				t.Errorf("DriftCount = %d", tr.DriftCount())
			}
			b, err := json.Marshal(tr)
			mustNoErr(t, err)
			var back Trajectory
			mustNoErr(t, json.Unmarshal(b, &back))
			if back.DriftCount() != tt.summary.Drifted || back.Segments[1].Drift == nil {
				t.Errorf("drift lost in JSON: %s", b)
			}
		})
	}
	// A multi-sample episode: the audit covers every sample's responses, the earlier samples' too (the drifted
	// response here is in the first sample), and the summary counts them all; JSON keeps each sample's audit.
	t.Run("every sample", func(t *testing.T) {
		tr := NewTrajectory()
		prompt := tk.Encode("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n", false)
		mustNoErr(t, tr.AppendPrompt(prompt))
		mustNoErr(t, tr.AppendResponse(trResponse(tr, split)))
		mustNoErr(t, tr.NewSample(SampleCompaction, json.RawMessage(`[]`)))
		mustNoErr(t, tr.AppendPrompt(prompt))
		mustNoErr(t, tr.AppendResponse(trResponse(tr, canonical)))
		want := DriftSummary{Audited: 2, Drifted: 1, DriftedTokens: len(split)}
		if got := tr.Audit(tk); got != want {
			t.Errorf("Audit = %+v, want %+v", got, want)
		}
		b, err := json.Marshal(tr)
		mustNoErr(t, err)
		var back Trajectory
		mustNoErr(t, json.Unmarshal(b, &back))
		all := back.AllSamples()
		if len(all) != 2 || all[0].Segments[1].Drift == nil || all[0].Segments[1].Drift.Canonical ||
			all[1].Segments[1].Drift == nil || !all[1].Segments[1].Drift.Canonical || back.DriftCount() != 1 {
			t.Errorf("the samples' audit is not in the JSON: %s", b)
		}
	})
	t.Run("nil codec", func(t *testing.T) {
		tr := NewTrajectory()
		if s := tr.Audit(nil); s != (DriftSummary{}) || tr.Drift != nil || tr.DriftCount() != 0 {
			t.Errorf("Audit(nil) = %+v", s)
		}
	})
}
