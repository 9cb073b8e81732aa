package emulator

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// A weight update that lands while a request decodes splits its output into one span per version, as SGLang
// reports in meta_info.weight_versions; an output made by one version has none.
func TestOutputSpansAcrossUpdates(t *testing.T) {
	s := &Server{weightVersion: "v1"}
	t0 := time.Now()
	per := time.Millisecond
	if got := s.outputSpans(t0, per, 10); got != nil {
		t.Fatalf("no update: %v", got)
	}
	s.mu.Lock()
	s.setWeightVersionLocked("v2")
	s.mu.Unlock()
	// hand-place the change between tokens 3 and 4 (token i is generated at t0 + per*(i+1))
	s.versions[1].at = t0.Add(4*per + per/2)
	want := []versionSpan{{"v1", 0, 4}, {"v2", 4, 10}}
	if got := s.outputSpans(t0, per, 10); !slices.Equal(got, want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
	// a request whose decode began after the update, or that finished before it, has one version
	if got := s.outputSpans(t0.Add(time.Second), per, 10); got != nil {
		t.Fatalf("decode after the update: %v", got)
	}
	if got := s.outputSpans(t0, per, 3); got != nil {
		t.Fatalf("finished before the update: %v", got)
	}
	// a second update inside the same request makes a third span
	s.mu.Lock()
	s.setWeightVersionLocked("v3")
	s.mu.Unlock()
	s.versions[2].at = t0.Add(7*per + per/2)
	want = []versionSpan{{"v1", 0, 4}, {"v2", 4, 7}, {"v3", 7, 10}}
	if got := s.outputSpans(t0, per, 10); !slices.Equal(got, want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
	// the hand-written encoder writes them as encoding/json would
	m := &metaInfo{ID: "r", WeightVersion: "v3", WeightVersions: want}
	ref, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	json.Unmarshal(appendMeta(nil, m), &a)
	json.Unmarshal(ref, &b)
	ja, _ := json.Marshal(a["weight_versions"])
	jb, _ := json.Marshal(b["weight_versions"])
	if string(ja) != string(jb) || string(ja) == "null" {
		t.Fatalf("encoded %s, encoding/json %s", ja, jb)
	}
	// the history stays bounded, its first entry the version in force before the kept changes
	s.mu.Lock()
	for i := range 100 {
		s.setWeightVersionLocked(string(rune('a' + i%26)))
	}
	s.mu.Unlock()
	if len(s.versions) != 65 {
		t.Fatalf("history of %d entries", len(s.versions))
	}
}
