package rollout

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/tito"
)

func versioned(version string) *tito.Trajectory {
	return &tito.Trajectory{Segments: []tito.Segment{{Kind: tito.KindPrompt, Length: 3},
		{Kind: tito.KindResponse, Offset: 3, Length: 2, Info: &tito.TurnInfo{WeightVersion: version}}}}
}

// TestWeightWatch: a consumer whose trajectories keep one weight_version for the threshold, over two requests,
// is warned about once (log + stale count) until a new version arrives; a single long request, another
// consumer's progress, and a consumer whose version changes are not.
func TestWeightWatch(t *testing.T) {
	var logs bytes.Buffer
	w := newWeightWatch(time.Hour, slog.New(slog.NewTextHandler(&logs, nil)))
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return clock }
	step := func(d time.Duration) { clock = clock.Add(d) }

	w.observe("slime", "r1", versioned("v1"))
	w.observe("fresh", "f1", versioned("a"))
	step(2 * time.Hour)
	w.observe("slime", "r1", versioned("v1")) // one request, however long, is not a series of steps
	if n := w.stale(); n != 0 {
		t.Fatalf("stale after one request: %d", n)
	}
	w.observe("slime", "r2", versioned("v1"))
	w.observe("fresh", "f2", versioned("b")) // updated: a new run starts
	if n := w.stale(); n != 1 || !strings.Contains(logs.String(), "weight_version has not changed") ||
		!strings.Contains(logs.String(), "consumer=slime") || strings.Contains(logs.String(), "consumer=fresh") {
		t.Fatalf("stale %d, log:\n%s", n, logs.String())
	}
	w.observe("slime", "r3", versioned("v1"))
	if c := strings.Count(logs.String(), "has not changed"); c != 1 {
		t.Errorf("warned %d times, want once per version", c)
	}
	w.observe("slime", "r4", versioned("v2"))
	if n := w.stale(); n != 0 || !strings.Contains(logs.String(), "weight_version changed") {
		t.Errorf("after an update: stale %d, log:\n%s", n, logs.String())
	}
	// Spans win over the turn's weight_version: the last span is what generated the last tokens.
	tr := versioned("v2")
	tr.Segments[1].Info.WeightVersions = []tito.WeightSpan{{Version: "v2", Start: 0, End: 1}, {Version: "v3", Start: 1, End: 2}}
	if v := lastWeightVersion(tr); v != "v3" {
		t.Errorf("lastWeightVersion = %q, want v3", v)
	}
}
