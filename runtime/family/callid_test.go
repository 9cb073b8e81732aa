package family

import "testing"

func TestCallIDStyles(t *testing.T) {
	for i := range 3 {
		if id := CallIDDefault.ID("ep/1", i, "f", 7); id != []string{"call_0000", "call_0001", "call_0002"}[i] || !CallIDDefault.Valid(id) {
			t.Errorf("default id %d: %q", i, id)
		}
		id := CallIDAlnum9.ID("ep/1", i, "f", 7)
		if !CallIDAlnum9.Valid(id) || id != CallIDAlnum9.ID("ep/1", i, "f", 7) {
			t.Errorf("alnum9 id %d: %q (valid %v, repeatable %v)", i, id, CallIDAlnum9.Valid(id), id == CallIDAlnum9.ID("ep/1", i, "f", 7))
		}
		if id == CallIDAlnum9.ID("ep/2", i, "f", 7) || id == CallIDAlnum9.ID("ep/1", i+1, "f", 7) {
			t.Errorf("alnum9 id %d: %q repeats for another seed or index", i, id)
		}
	}
	for id, want := range map[string]bool{"a1B2c3D4e": true, "call_0000": false, "abcdefgh": false, "abcdefghij": false, "abcdéfgh": false, "": false} {
		if CallIDAlnum9.Valid(id) != want {
			t.Errorf("CallIDAlnum9.Valid(%q) = %v", id, !want)
		}
	}
	// Kimi K2: functions.NAME:N, N counting the conversation's calls (SGLang's history count plus the index).
	if id := CallIDKimi.ID("ep/1", 1, "calculator", 3); id != "functions.calculator:4" || !CallIDKimi.Valid(id) {
		t.Errorf("kimi id: %q", id)
	}
	for id, want := range map[string]bool{"functions.get_weather:12": true, "functions.a.b:0": true, "call_0000": false, "functions.f": false,
		"functions.:0": false, "functions.f:": false, "functions.f:1a": false, "get_weather:0": false} {
		if CallIDKimi.Valid(id) != want {
			t.Errorf("CallIDKimi.Valid(%q) = %v", id, !want)
		}
	}
	if CallIDDefault.Valid("") || !CallIDDefault.Valid("x") {
		t.Error("CallIDDefault.Valid: want any non-empty id")
	}
}
