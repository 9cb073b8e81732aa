package envtool

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/agentrt/agentrt/internal/slots"
	"github.com/agentrt/agentrt/internal/testutil"
)

// SetShare makes a service's limits this node's part of them, for services open now and opened later; None
// admits no create (even without max_concurrent); a lowered limit lets live environments be and holds creates
// until the service is under it (Within says when).
func TestSetShare(t *testing.T) {
	t.Cleanup(func() { SetShare(slots.Share{}) })
	srv := startReference(t)
	a := open(t, Config{URL: srv.URL, MaxConcurrent: 5, CreatesPerSecond: 4})
	SetShare(slots.Share{Rank: 1, Nodes: 2})
	if a.slots.Limit() != 2 || a.limiter.Limit() != rate.Limit(2) {
		t.Fatalf("rank 1 of 2: max_concurrent %d, creates_per_second %v; want 2 and 2", a.slots.Limit(), a.limiter.Limit())
	}
	b := open(t, Config{URL: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), MaxConcurrent: 7}) // another service, for its limits
	if b.slots.Limit() != 3 {
		t.Fatalf("a service opened later: max_concurrent %d, want 3 (rank 1 of 2)", b.slots.Limit())
	}

	ctx := context.Background()
	if err := a.BeginEpisode(ctx, "e1", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.BeginEpisode(ctx, "e2", nil); err != nil {
		t.Fatal(err)
	}
	SetShare(slots.Share{Rank: 2, Nodes: 3}) // 1 of 5: two live environments stay
	if Within() {
		t.Fatal("two live environments above a limit of 1, and Within says so")
	}
	waited := make(chan error, 1)
	go func() { waited <- a.BeginEpisode(ctx, "e3", nil) }()
	testutil.Until(t, "the third create to wait for the lowered limit", func() bool { return a.slots.Waiting() == 1 })
	a.CloseEpisode(ctx, "e1")
	a.CloseEpisode(ctx, "e2")
	if err, _ := testutil.Recv(t, "the third create, once the service is under its limit", waited); err != nil {
		t.Fatal(err)
	}
	if !Within() {
		t.Fatal("one live environment under a limit of 1, and Within says no")
	}
	a.CloseEpisode(ctx, "e3")

	a.Close(ctx) // its service's limits go with it
	unbounded := open(t, Config{URL: srv.URL})
	SetShare(slots.None)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := unbounded.BeginEpisode(cctx, "e4", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a create under a None share (no max_concurrent): %v, want it held until its context ended", err)
	}
}
