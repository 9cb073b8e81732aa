package main

import (
	"reflect"
	"testing"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name, response, label string
		extract, match        string
	}{
		{"boxed integer", `So the answer is \boxed{42}.`, "42", "boxed", "exact"},
		{"boxed wins over later number", `\boxed{7} (checked 3 times)`, "7", "boxed", "exact"},
		{"last boxed", `first \boxed{1}, corrected: \boxed{2}`, "2", "boxed", "exact"},
		{"nested braces", `\boxed{\frac{11}{8}}`, "11/8", "boxed", "exact"},
		{"dfrac vs decimal", `\boxed{\dfrac{3}{4}}`, "0.75", "boxed", "numeric"},
		{"decimal vs fraction label", `\boxed{1.375}`, `\frac{11}{8}`, "boxed", "numeric"},
		{"trailing .0", `\boxed{4.0}`, "4", "boxed", "exact"},
		{"trailing zeros", `\boxed{2.50}`, "2.5", "boxed", "exact"},
		{"thousands", `\boxed{1,234,567}`, "1234567", "boxed", "exact"},
		{"dollars and left right", `$\boxed{\left(3\right)}$`, "3", "boxed", "numeric"},
		{"text unit", `\boxed{12\text{ cm}}`, "12cm", "boxed", "exact"},
		{"negative", `\boxed{-17}`, "-17", "boxed", "exact"},
		{"x equals", `\boxed{x = 5}`, "5", "boxed", "exact"},
		{"approx", `\boxed{0.3333333333}`, "1/3", "boxed", "approx"},
		{"wrong", `\boxed{41}`, "42", "boxed", ""},
		{"last number", "12 * 7 = 84\nThe answer is 84.", "84", "last_number", "exact"},
		{"last number fraction", "so it is 11/8", "1.375", "last_number", "numeric"},
		{"last number negative decimal", "result: -2.50", "-5/2", "last_number", "numeric"},
		{"no answer", "I do not know.", "3", "none", ""},
		{"after think", "<think>maybe \\boxed{1}</think>\nThe answer is \\boxed{2}", "2", "boxed", "exact"},
		{"think only", "<think>\\boxed{1}</think>no idea", "1", "none", ""},
		{"symbolic", `\boxed{2\sqrt{3}}`, `2\sqrt{3}`, "boxed", "exact"},
		{"symbolic wrong", `\boxed{2\sqrt{2}}`, `2\sqrt{3}`, "boxed", ""},
		{"division by zero label", `\boxed{1}`, "1/0", "boxed", ""},
	}
	c := defaultConfig()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := c.score(tt.response, tt.label)
			if v.extract != tt.extract || v.match != tt.match {
				t.Errorf("score(%q, %q) = extract %q match %q (answer %q); want %q %q", tt.response, tt.label,
					v.extract, v.match, v.answer, tt.extract, tt.match)
			}
		})
	}
}

func TestBoxedOnlyAndTolerance(t *testing.T) {
	c := config{boxedOnly: true}
	if v := c.score("the answer is 5", "5"); v.extract != "none" || v.correct() {
		t.Errorf("boxed_only: %+v", v)
	}
	if v := c.score(`\boxed{0.3333}`, "1/3"); v.correct() {
		t.Errorf("tolerance 0 accepted an approximation: %+v", v)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		`\dfrac{1}{2}`:          "1/2",
		`\frac12`:               "1/2",
		`\frac{a+1}{2}`:         "(a+1)/2",
		` $ 1,000 $ `:           "1000",
		`3.000`:                 "3",
		`-0.50`:                 "-0.5",
		`\left[1, 2\right]`:     "[1,2]",
		`45^\circ`:              "45",
		`{7}`:                   "7",
		`\frac{\frac{1}{2}}{3}`: "(1/2)/3",
		`50\%`:                  "50",
		`\text{(A)}`:            "(A)",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMetrics(t *testing.T) {
	got := verdict{extract: "boxed", match: "numeric"}.metrics()
	want := map[string]float64{"math_correct": 1, "math_extract_boxed": 1, "math_match_numeric": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metrics = %v, want %v", got, want)
	}
	got = verdict{extract: "none"}.metrics()
	want = map[string]float64{"math_correct": 0, "math_extract_none": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metrics = %v, want %v", got, want)
	}
}

// FuzzScore: scoring never panics, an answer always matches itself as a label, and a match implies a boxed or
// last-number extraction.
func FuzzScore(f *testing.F) {
	for _, s := range []string{`\boxed{\frac{11}{8}}`, "12 * 7 = 84", `\boxed{`, `\boxed{}}`, `\frac{}{}`, "1/0", "-.5",
		`\boxed{\dfrac{\frac{1}{2}}{3}}`, "<think></think>", "1,234,567.000", `\fbox 5`} {
		f.Add(s, "1")
	}
	c := defaultConfig()
	f.Fuzz(func(t *testing.T, response, label string) {
		v := c.score(response, label)
		if v.correct() && v.extract == "none" {
			t.Fatalf("match %q without an extracted answer", v.match)
		}
		if v.extract != "none" && normalize(v.answer) != "" && c.compare(v.answer, v.answer) == "" {
			t.Fatalf("answer %q does not match itself", v.answer)
		}
	})
}
