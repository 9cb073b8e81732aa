package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
)

func openTestSpool(t *testing.T, dir string, maxRecords int) *spool {
	t.Helper()
	// A small cache, so both the cached and the database paths of next are exercised.
	s, err := openSpool(spoolConfig{dir: dir, maxRecords: maxRecords, maxBytes: 1 << 30, noSync: true, cacheBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSpoolPutAckReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTestSpool(t, dir, 100)
	ctx := context.Background()
	var seqs []uint64
	for i := 0; i < 5; i++ {
		seq, dup, err := s.put(ctx, "a", kindTrajectory, fmt.Sprintf("t%d", i), []byte(fmt.Sprintf(`,"n":%d}`, i)))
		if err != nil || dup {
			t.Fatalf("put %d: %v %v", i, err, dup)
		}
		seqs = append(seqs, seq)
	}
	if _, _, err := s.put(ctx, "b", kindDone, "done/x", []byte(`}`)); err != nil {
		t.Fatal(err)
	}
	// Same id again: nothing stored, the first seq returned.
	if seq, dup, err := s.put(ctx, "a", kindTrajectory, "t1", []byte(`,"n":99}`)); err != nil || !dup || seq != seqs[1] {
		t.Fatalf("duplicate put = %d %v %v", seq, dup, err)
	}
	if n, _, _ := s.stats(); n != 6 {
		t.Fatalf("count = %d", n)
	}
	// Ack by seq and by id; unknown ones and other consumers' ids are ignored.
	n, err := s.ack("a", []uint64{seqs[0], 12345}, []string{"t2", "done/x"})
	if err != nil || n != 2 {
		t.Fatalf("ack = %d %v", n, err)
	}
	recs, err := s.next("a", 0, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf(`{"type":"trajectory","seq":%d,"n":1}`, seqs[1]),
		fmt.Sprintf(`{"type":"trajectory","seq":%d,"n":3}`, seqs[3]),
		fmt.Sprintf(`{"type":"trajectory","seq":%d,"n":4}`, seqs[4]),
	}
	if len(recs) != len(want) {
		t.Fatalf("next = %d records", len(recs))
	}
	for i, r := range recs {
		if got := string(r.head) + string(r.tail); got != want[i] {
			t.Errorf("frame %d = %s, want %s", i, got, want[i])
		}
	}
	if recs2, _ := s.next("a", seqs[3], 10, 1<<20); len(recs2) != 1 || recs2[0].seq != seqs[4] {
		t.Fatalf("next after cursor = %+v", recs2)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.put(ctx, "a", kindTrajectory, "late", []byte("}")); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after close = %v", err)
	}

	s2 := openTestSpool(t, dir, 100)
	defer s2.close()
	if n, _, _ := s2.stats(); n != 4 || s2.unacked("a") != 3 || s2.unacked("b") != 1 {
		t.Fatalf("after reopen: count %d, a %d, b %d", n, s2.unacked("a"), s2.unacked("b"))
	}
	seq, _, err := s2.put(ctx, "a", kindTrajectory, "t9", []byte("}"))
	if err != nil || seq <= seqs[4] {
		t.Fatalf("seq after reopen = %d (last before: %d), err %v", seq, seqs[4], err)
	}
	if n, err := s2.drop("a"); n != 4 || err != nil {
		t.Fatalf("drop = %d %v", n, err)
	}
}

// TestSpoolBoundBlocks: a put into a full spool waits until an ack frees room, and gives up with ctx.
func TestSpoolBoundBlocks(t *testing.T) {
	s := openTestSpool(t, t.TempDir(), 3)
	defer s.close()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, _, err := s.put(ctx, "a", kindTrajectory, fmt.Sprint(i), []byte("}")); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.put(short, "a", kindTrajectory, "x", []byte("}")); !errors.Is(err, context.Canceled) {
		t.Fatalf("put into a full spool with a cancelled ctx = %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.put(ctx, "a", kindTrajectory, "4", []byte("}"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("put into a full spool returned %v", err)
	case <-time.After(50 * time.Millisecond): // not a timing assertion: it must still be blocked
	}
	if _, err := s.ack("a", nil, []string{"0"}); err != nil {
		t.Fatal(err)
	}
	if err, _ := testutil.Recv(t, "the blocked put to return after the ack", done); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.stats(); n != 3 {
		t.Fatalf("count = %d", n)
	}
}

// TestSpoolHammer: concurrent puts, acks and reads keep the counters exact.
func TestSpoolHammer(t *testing.T) {
	s := openTestSpool(t, t.TempDir(), 64)
	defer s.close()
	ctx := context.Background()
	const producers, each = 8, 200
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, _, err := s.put(ctx, "c", kindTrajectory, fmt.Sprintf("%d/%d", p, i), []byte(`,"x":1}`)); err != nil {
					t.Error(err)
					return
				}
			}
		}(p)
	}
	acked := 0
	var cursor uint64
	notify, unwatch := s.watch("c")
	defer unwatch()
	for acked < producers*each {
		recs, err := s.next("c", cursor, 16, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			testutil.Wait(t, "the spool to announce a new record", notify)
			continue
		}
		seqs := make([]uint64, len(recs))
		for i, r := range recs {
			seqs[i] = r.seq
			cursor = r.seq
		}
		n, err := s.ack("c", seqs, nil)
		if err != nil || n != len(recs) {
			t.Fatalf("ack = %d %v", n, err)
		}
		acked += n
	}
	wg.Wait()
	if n, b, _ := s.stats(); n != 0 || b != 0 {
		t.Fatalf("after draining: %d records, %d bytes", n, b)
	}
}
