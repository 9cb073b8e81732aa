package main

import (
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	tests := []struct {
		expr, want, wantErr string
	}{
		{"2+2", "4", ""},
		{" (2 + 3) * 4 ", "20", ""},
		{"2 ** 10", "1024", ""},
		{"2 ** 3 ** 2", "512", ""}, // right-associative, as in Python
		{"-2 ** 2", "-4", ""},      // unary minus binds looser than **, as in Python
		{"2 ** -1", "0.5", ""},
		{"7 / 2", "3.5", ""},
		{"-7 % 3", "2", ""}, // floored modulo, as in Python
		{"7 % -3", "-2", ""},
		{"7.5 % 2", "1.5", ""},
		{"--3", "3", ""},
		{"+3 - -3", "6", ""},
		{"0.1 + 0.2", "0.30000000000000004", ""},
		{".5 * 4", "2", ""},
		{"1.5e3 + 1", "1501", ""},
		{"1e300 * 1e300", "", "result is not a finite number"},
		{"1 / 0", "", "division by zero at offset 2"},
		{"5 % (3 - 3)", "", "modulo by zero at offset 2"},
		{"0 ** -1", "", "zero raised to a negative power at offset 2"},
		{"(-8) ** 0.5", "", "negative number raised to a fractional power"},
		{"", "", "empty expression"},
		{"2 +", "", "unexpected end of expression at offset 3"},
		{"(1 + 2", "", "unclosed '(' at offset 0"},
		{"1 + 2)", "", "unmatched ')' at offset 5"},
		{"2 x 3", "", "unexpected 'x' at offset 2"},
		{"sqrt(4)", "", "unexpected 's' at offset 0: only numbers"},
		{"1..2", "", "invalid number \"1..2\" at offset 0"},
		{"3 * * 4", "", "unexpected '*' at offset 4"},
		{strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), "", "nested too deeply"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			v, err := evaluate(tt.expr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("evaluate(%q) = %v, %v; want error containing %q", tt.expr, v, err, tt.wantErr)
				}
				return
			}
			if err != nil || format(v) != tt.want {
				t.Fatalf("evaluate(%q) = %s, %v; want %s", tt.expr, format(v), err, tt.want)
			}
		})
	}
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"1+2*3", "(1-2)**3 % 4", "-.5e-3/7", "((((", "2**2**2**2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = evaluate(s) // must not panic
	})
}
