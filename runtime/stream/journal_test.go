package stream

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// TestJournalSurvivesReopen: a journaled request, its finished samples (spooled, and one acked since) and a
// cancel are read back by a new spool on the same directory; the request_done put ends the entry.
func TestJournalSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTestSpool(t, dir, 100)
	ctx := context.Background()
	items := []Item{{ID: "q", Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), N: 3}}
	for _, id := range []string{"r1", "r2"} {
		if dup, err := s.journal("a", id, journalEntry{Agent: "math", Items: items, Events: true}); err != nil || dup {
			t.Fatalf("journal %s: dup %v err %v", id, dup, err)
		}
	}
	if dup, err := s.journal("a", "r1", journalEntry{Items: items}); err != nil || !dup {
		t.Fatalf("journal r1 again: dup %v err %v", dup, err)
	}
	put := func(tid string, jr journalRef) {
		t.Helper()
		if _, _, err := s.putValue(ctx, "a", tid, append(recordValue(kindTrajectory, tid, 1), '}'), jr); err != nil {
			t.Fatal(err)
		}
	}
	put("r1/q/0", journalRef{request: "r1", item: "q", sample: 0})
	put("r1/q/2", journalRef{request: "r1", item: "q", sample: 2})
	put("r2/q/1", journalRef{request: "r2", item: "q", sample: 1})
	if n, err := s.ack("a", nil, []string{"r1/q/2"}); err != nil || n != 1 {
		t.Fatalf("ack: %d %v", n, err)
	}
	if err := s.journalCancel("a", "r2"); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}

	s = openTestSpool(t, dir, 100)
	js, err := s.journaled()
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 2 {
		t.Fatalf("journaled = %+v, want r1 and r2", js)
	}
	r1, r2 := js[0], js[1]
	if r1.id != "r1" || r1.consumer != "a" || r1.cancelled || r1.entry.Agent != "math" || !r1.entry.Events || r1.entry.Items[0].N != 3 {
		t.Fatalf("r1 = %+v", r1)
	}
	if want := map[SampleRef]bool{{"q", 0}: true, {"q", 2}: true}; !reflect.DeepEqual(r1.finished, want) {
		t.Fatalf("r1 finished = %v, want %v (an acked sample stays finished)", r1.finished, want)
	}
	if r2.id != "r2" || !r2.cancelled || !reflect.DeepEqual(r2.finished, map[SampleRef]bool{{"q", 1}: true}) {
		t.Fatalf("r2 = %+v", r2)
	}

	// request_done ends the entry, in the transaction that spools it.
	if _, _, err := s.putValue(ctx, "a", doneIDPrefix+"r1", append(recordValue(kindDone, doneIDPrefix+"r1", 1), '}'),
		journalRef{request: "r1", end: true}); err != nil {
		t.Fatal(err)
	}
	if js, err := s.journaled(); err != nil || len(js) != 1 || js[0].id != "r2" {
		t.Fatalf("after r1's request_done: %+v %v", js, err)
	}
	if done, err := s.doneRequests("a"); err != nil || !reflect.DeepEqual(done, []string{"r1"}) {
		t.Fatalf("doneRequests = %v %v", done, err)
	}
	s.close()
}
