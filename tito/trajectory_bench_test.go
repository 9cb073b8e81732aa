package tito

import (
	"encoding/json"
	"testing"
)

// benchTrajectory builds a trajectory of turns turns, each a prompt of promptLen and a response of respLen
// tokens (a 4k-token trajectory is 8 turns of 200 + 300).
func benchTrajectory(tb testing.TB, turns, promptLen, respLen int) *Trajectory {
	tr := NewTrajectory()
	prompt := make([]int32, promptLen)
	out := make([]int32, respLen)
	for i := range prompt {
		prompt[i] = int32(1000 + i)
	}
	for i := range out {
		out[i] = int32(5000 + i)
	}
	for range turns {
		if err := tr.AppendPrompt(prompt); err != nil {
			tb.Fatal(err)
		}
		if err := tr.AppendResponse(trResponse(tr, out)); err != nil {
			tb.Fatal(err)
		}
	}
	return tr
}

// BenchmarkTrajectoryTurn is the token manager's work per model call: AppendPrompt of a 200-token delta,
// NextRequest, AppendResponse of 300 tokens with all checks, on a trajectory that grows to 8 turns (4k tokens).
func BenchmarkTrajectoryTurn(b *testing.B) {
	prompt := make([]int32, 200)
	out := make([]int32, 300)
	outLP := make([]float64, 300)
	for i := range out {
		out[i], outLP[i] = int32(i), -0.5
	}
	// Input logprobs as SGLang would send them for each turn (window = 1 + 200 tokens, first null).
	in := make([]*float64, 201)
	for i := 1; i < len(in); i++ {
		v := -1.5
		in[i] = &v
	}
	b.ReportAllocs()
	turns := 0
	for b.Loop() {
		tr := NewTrajectory()
		for turn := range 8 {
			if err := tr.AppendPrompt(prompt); err != nil {
				b.Fatal(err)
			}
			ids, start := tr.NextRequest()
			r := Response{InputIDs: ids, LogprobStartLen: start, InputLogprobs: in, OutputIDs: out, OutputLogprobs: outLP}
			if turn == 0 {
				r.InputLogprobs = nil // logprob_start_len -1: no prompt logprobs on the first turn
			}
			if err := tr.AppendResponse(r); err != nil {
				b.Fatal(err)
			}
			turns++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns), "ns/turn")
}

func BenchmarkTrajectoryMarshal4k(b *testing.B) {
	tr := benchTrajectory(b, 8, 200, 300)
	buf, _ := tr.AppendJSON(nil)
	b.SetBytes(int64(len(buf)))
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = tr.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(tr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var back Trajectory
			if err := json.Unmarshal(buf, &back); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkTrajectoryValidate4k(b *testing.B) {
	tr := benchTrajectory(b, 8, 200, 300)
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAudit4k is the drift audit of a 4k-token trajectory (8 responses of 300 real tokens).
func BenchmarkAudit4k(b *testing.B) {
	tk := tkModel(b, "qwen3").Tokenizer
	text := benchText(b, 1200)
	resp := tk.Encode(text, false)[:300]
	tr := NewTrajectory()
	for range 8 {
		if err := tr.AppendPrompt(tk.Encode("<|im_start|>user\nnext<|im_end|>\n<|im_start|>assistant\n", false)); err != nil {
			b.Fatal(err)
		}
		if err := tr.AppendResponse(trResponse(tr, resp)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		tr.Audit(tk)
	}
}
