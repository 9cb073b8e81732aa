package family

import "testing"

func TestCallIDStyles(t *testing.T) {
	for i := range 3 {
		if id := CallIDDefault.ID("ep/1", i); id != []string{"call_0000", "call_0001", "call_0002"}[i] || !CallIDDefault.Valid(id) {
			t.Errorf("default id %d: %q", i, id)
		}
		id := CallIDAlnum9.ID("ep/1", i)
		if !CallIDAlnum9.Valid(id) || id != CallIDAlnum9.ID("ep/1", i) {
			t.Errorf("alnum9 id %d: %q (valid %v, repeatable %v)", i, id, CallIDAlnum9.Valid(id), id == CallIDAlnum9.ID("ep/1", i))
		}
		if id == CallIDAlnum9.ID("ep/2", i) || id == CallIDAlnum9.ID("ep/1", i+1) {
			t.Errorf("alnum9 id %d: %q repeats for another seed or index", i, id)
		}
	}
	for id, want := range map[string]bool{"a1B2c3D4e": true, "call_0000": false, "abcdefgh": false, "abcdefghij": false, "abcdéfgh": false, "": false} {
		if CallIDAlnum9.Valid(id) != want {
			t.Errorf("CallIDAlnum9.Valid(%q) = %v", id, !want)
		}
	}
	if CallIDDefault.Valid("") || !CallIDDefault.Valid("x") {
		t.Error("CallIDDefault.Valid: want any non-empty id")
	}
}
