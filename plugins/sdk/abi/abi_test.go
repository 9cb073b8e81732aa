package abi_test

import (
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

func TestPacked(t *testing.T) {
	tests := []struct {
		ptr, n uint32
		want   abi.Packed
	}{
		{0x12340, 27, 0x0001_2340_0000_001B},
		{0, 0, 0},
		{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF_FFFFFFFF},
	}
	for _, tt := range tests {
		p := abi.Pack(tt.ptr, tt.n)
		if p != tt.want || p.Ptr() != tt.ptr || p.Len() != tt.n {
			t.Errorf("Pack(%#x, %d) = %#x (ptr %#x len %d), want %#x", tt.ptr, tt.n, uint64(p), p.Ptr(), p.Len(), uint64(tt.want))
		}
	}
}

func TestRawJSONRoundTrip(t *testing.T) {
	in := `{"ok":{"calls":[{"name":"f","arguments":{"a":[1,2]},"span":[3,9]}],"normal_text":"hi"}}`
	var env abi.Envelope
	if err := json.Unmarshal([]byte(in), &env); err != nil {
		t.Fatal(err)
	}
	var pr abi.ParseResult
	if err := json.Unmarshal(env.OK, &pr); err != nil {
		t.Fatal(err)
	}
	if string(pr.Calls[0].Arguments) != `{"a":[1,2]}` || pr.Calls[0].Span != (abi.Span{3, 9}) {
		t.Fatalf("got %+v", pr)
	}
	out, err := json.Marshal(abi.Event{Event: abi.EventEpisodeEnd, EpisodeID: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"episode_end","episode_id":"e1","turn":0,"counts":{"messages":0,"model_calls":0,"tool_iters":0,"tool_calls":0,"cancelled_tool_calls":0,"prompt_tokens":0,"response_tokens":0}}`
	if string(out) != want {
		t.Fatalf("got %s\nwant %s", out, want)
	}
}

func TestKnownEvent(t *testing.T) {
	for _, e := range abi.Events() {
		if !abi.KnownEvent(e) {
			t.Errorf("KnownEvent(%q) = false", e)
		}
	}
	if abi.KnownEvent("before_everything") {
		t.Error("KnownEvent accepted an unknown event")
	}
}
