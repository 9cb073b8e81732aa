package system_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// queueObserver reports the service's queue moves on a channel and records the order episodes finish in.
type queueObserver struct {
	moves    chan int
	mu       sync.Mutex
	finished []string
}

func (o *queueObserver) EpisodeQueued(delta int) { o.moves <- delta }
func (o *queueObserver) EpisodeFinished(t *tito.Trajectory) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = append(o.finished, t.ID)
}

// waitQueued reads queue moves until enqueued episodes and granted slots reach the given totals.
func (o *queueObserver) waitQueued(t *testing.T, enqueued, granted *int, wantEnqueued, wantGranted int) {
	t.Helper()
	for *enqueued < wantEnqueued || *granted < wantGranted {
		select {
		case d := <-o.moves:
			if d > 0 {
				*enqueued++
			} else {
				*granted++
			}
		case <-time.After(time.Minute):
			var dump bytes.Buffer
			pprof.Lookup("goroutine").WriteTo(&dump, 1)
			t.Fatalf("waited a minute for %d episodes in line and %d slots granted; saw %d and %d\n%s", wantEnqueued, wantGranted, *enqueued, *granted, dump.String())
		}
	}
}

// TestServiceFairBetweenConsumers: with one episode slot, a trainer floods the service with five requests
// (their episodes queue), then a second trainer submits one request. Its episode runs next, not after the
// flood's: the order of episode starts (one slot: the order they finish) shows it, whatever the timing.
func TestServiceFairBetweenConsumers(t *testing.T) {
	gate := &turn.Gate{}
	h := newHarnessWith(t, emulator.DefaultConfig(), defaultAgent(), fastRetry(), gate)
	obs := &queueObserver{moves: make(chan int, 1024)}
	svc, err := rollout.NewService(map[string]*runtime.Agent{"calc": h.agent}, 1, gate, h.client, obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Paused: the episode that gets the slot holds it at its first turn until the others are in line.
	if err := svc.Pause(ctx, sglang.PauseInPlace); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	runs := func(consumer string, k int) {
		for i := range k {
			req := request(fmt.Sprintf("%s-%d", consumer, i), 3, "What is 2+3?")
			req.Consumer = consumer
			wg.Go(func() {
				if err := svc.Run(ctx, req, &emitter{}); err != nil {
					t.Errorf("%s: %v", req.ID, err)
				}
			})
		}
	}
	var enqueued, granted int
	runs("flood", 5)
	// Each of the five requests has one episode in line; the one that got the slot has its second in line.
	obs.waitQueued(t, &enqueued, &granted, 6, 1)
	runs("other", 1)
	obs.waitQueued(t, &enqueued, &granted, 7, 1)
	if err := svc.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.finished) != 18 {
		t.Fatalf("%d episodes finished, want 18", len(obs.finished))
	}
	// The flood's episode held the slot; the newcomer's comes next (before: 6th, behind the flood's line).
	pos := -1
	for i, id := range obs.finished {
		if strings.HasPrefix(id, "other-0/") {
			pos = i
			break
		}
	}
	if pos != 1 {
		t.Fatalf("the second consumer's first episode finished %d-th, want 2nd (right after the one holding the slot): %v", pos+1, obs.finished)
	}
	var others []int
	for i, id := range obs.finished {
		if strings.HasPrefix(id, "other-0/") {
			others = append(others, i+1)
		}
	}
	t.Logf("the second consumer's episodes finished at positions %v of 18", others)
}
