package emulator

import (
	"encoding/json"
	"slices"
	"testing"
)

func FuzzParseIntList(f *testing.F) {
	for _, s := range []string{"[]", "[1]", "[1, 2,3 ]", "[-5, 0]", "[2147483647, -2147483648]", "[2147483648]", "[1.5]", "[01]", "[1,]", "[,1]", "[ ]", "[1 2]", "[-]", "[\"1\"]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseIntList([]byte(s))
		var want []int32
		err := json.Unmarshal([]byte(s), &want)
		if ok && (err != nil || !slices.Equal(got, want)) {
			t.Fatalf("parseIntList(%q) = %v, encoding/json %v %v", s, got, want, err)
		}
	})
}
