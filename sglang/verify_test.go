package sglang_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/sglang"
)

// TestVerifyMatchesSGLang holds SamplingParams.Verify to SGLang's own SamplingParams (verify and normalize,
// run by testdata/contract/verify_sampling.py in $AGENTRT_SGLANG_PYTHON on the params as agentrt encodes them):
// every case is accepted by both or refused by both with the same message. Without the interpreter it skips,
// except under CI=true, where it fails.
func TestVerifyMatchesSGLang(t *testing.T) {
	py := os.Getenv("AGENTRT_SGLANG_PYTHON")
	if _, err := os.Stat(py); py == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AGENTRT_SGLANG_PYTHON=%q is missing: run make setup (scripts/setup.d/35-sglang-types.sh)", py)
		}
		t.Skipf("AGENTRT_SGLANG_PYTHON=%q is missing: run make setup and source ~/.cache/agentrt/env.sh", py)
	}
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	many := make([]string, 33)
	for k := range many {
		many[k] = "s"
	}
	cases := []sglang.SamplingParams{
		{MaxNewTokens: 16},
		{MaxNewTokens: 16, Temperature: f(0.7), TopP: f(0.9), TopK: i(20), MinP: f(0.05), FrequencyPenalty: f(0.5), PresencePenalty: f(-0.5), RepetitionPenalty: f(1.1)},
		{MaxNewTokens: 16, Temperature: f(-1)},
		{MaxNewTokens: 16, Temperature: f(-0.5)},
		{MaxNewTokens: 16, Temperature: f(0)},
		{MaxNewTokens: 16, Temperature: f(0), TopK: i(0)}, // greedy: top_k is overridden before verify
		{MaxNewTokens: 16, Temperature: f(1e-7)},
		{MaxNewTokens: 16, TopP: f(0)},
		{MaxNewTokens: 16, TopP: f(1.5)},
		{MaxNewTokens: 16, TopP: f(1)},
		{MaxNewTokens: 16, MinP: f(-0.1)},
		{MaxNewTokens: 16, MinP: f(1.01)},
		{MaxNewTokens: 16, TopK: i(0)},
		{MaxNewTokens: 16, TopK: i(-1)},
		{MaxNewTokens: 16, TopK: i(-2)},
		{MaxNewTokens: 16, TopK: i(1)},
		{MaxNewTokens: 16, FrequencyPenalty: f(2.5)},
		{MaxNewTokens: 16, FrequencyPenalty: f(-2)},
		{MaxNewTokens: 16, PresencePenalty: f(-3)},
		{MaxNewTokens: 16, RepetitionPenalty: f(0)},
		{MaxNewTokens: 16, RepetitionPenalty: f(2.000001)},
		{MaxNewTokens: 16, MinNewTokens: i(-1)},
		{MaxNewTokens: 16, MinNewTokens: i(17)},
		{MaxNewTokens: 16, MinNewTokens: i(16)},
		{MaxNewTokens: 0},
		{MaxNewTokens: 16, JSONSchema: `{"type":"object"}`},
		{MaxNewTokens: 16, JSONSchema: `{"type":"object"}`, Regex: "a+"},
		{MaxNewTokens: 16, Regex: "a+", Extra: map[string]any{"ebnf": `root ::= "a"`}},
		{MaxNewTokens: 16, Stop: many},
		{MaxNewTokens: 16, Stop: many[:32]},
		{MaxNewTokens: 16, Temperature: f(-1), TopP: f(0)}, // the first refusal in SGLang's order
	}
	var in bytes.Buffer
	for _, c := range cases {
		b, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		in.Write(b)
		in.WriteByte('\n')
	}
	cmd := exec.Command(py, "testdata/contract/verify_sampling.py")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("verify_sampling.py: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for k, c := range cases {
		if !sc.Scan() {
			t.Fatalf("verify_sampling.py answered %d of %d cases", k, len(cases))
		}
		want := sc.Text()
		got := "ok"
		if err := c.Verify(); err != nil {
			var pe *sglang.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("case %d: %v is not a *ParamError", k, err)
			}
			got = pe.Msg
			if !strings.Contains(pe.Msg, pe.Param) {
				t.Errorf("case %d: %q does not name its param %q", k, pe.Msg, pe.Param)
			}
		}
		if got != want {
			b, _ := c.MarshalJSON()
			t.Errorf("case %d %s: Verify says %q, SGLang %q", k, b, got, want)
		}
	}
}
