package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/stream/internal/fakerunner"
)

// memStore is a stream.Store in memory: one outbox per consumer, messages in seq order, each offered until acked.
type memStore struct {
	mu       sync.Mutex
	seq      uint64
	msgs     map[string][]*memMsg // consumer -> messages
	requests map[string]stream.RolloutRequest
	cancels  []string
	sig      chan struct{}
	// onSubmit runs inside Submit (a node finishing a sample before the submit is answered).
	onSubmit func(req stream.RolloutRequest)
}

type memMsg struct {
	m       stream.StoredMessage
	offered bool
	acked   bool
	offers  int
}

func newMemStore() *memStore {
	return &memStore{msgs: map[string][]*memMsg{}, requests: map[string]stream.RolloutRequest{}, sig: make(chan struct{})}
}

func (s *memStore) ID() string { return "mem" }

// put stores a message for consumer and wakes the outboxes.
func (s *memStore) put(consumer string, m stream.StoredMessage) {
	s.mu.Lock()
	s.seq++
	m.Seq = s.seq
	s.msgs[consumer] = append(s.msgs[consumer], &memMsg{m: m})
	close(s.sig)
	s.sig = make(chan struct{})
	s.mu.Unlock()
}

func (s *memStore) trajectory(consumer, request, item string, i int) {
	s.put(consumer, stream.StoredMessage{RequestID: request, Finished: stream.Finished{ItemID: item, SampleIndex: i,
		GroupID: request + "/" + item, TrajectoryID: fmt.Sprintf("%s/%s/%d", request, item, i), Trajectory: json.RawMessage(`{"status":"completed"}`)}})
}

func (s *memStore) Submit(ctx context.Context, req stream.RolloutRequest) (bool, error) {
	s.mu.Lock()
	_, dup := s.requests[req.Consumer+"/"+req.ID]
	s.requests[req.Consumer+"/"+req.ID] = req
	s.mu.Unlock()
	if s.onSubmit != nil && !dup {
		s.onSubmit(req)
	}
	return dup, nil
}

func (s *memStore) Cancel(ctx context.Context, consumer, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.requests[consumer+"/"+id]
	if ok {
		s.cancels = append(s.cancels, id)
	}
	return ok, nil
}

func (s *memStore) Requests(ctx context.Context, consumer string) (active, done []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		if r.Consumer == consumer {
			active = append(active, r.ID)
		}
	}
	return active, nil, nil
}

func (s *memStore) Drop(ctx context.Context, consumer string) (int, error) { return 0, nil }

func (s *memStore) Emit(ctx context.Context, consumer, requestID string, f stream.Finished) (bool, error) {
	s.put(consumer, stream.StoredMessage{RequestID: requestID, Finished: f})
	return false, nil
}

func (s *memStore) Events(consumer string, f func(stream.EventFrame)) (func(), error) {
	return func() {}, nil
}

func (s *memStore) Outbox(ctx context.Context, consumer string) (stream.Outbox, error) {
	return &memOutbox{s: s, consumer: consumer}, nil
}

// offers returns how often each trajectory id was offered.
func (s *memStore) offers(consumer string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, m := range s.msgs[consumer] {
		out[m.m.Finished.TrajectoryID] = m.offers
	}
	return out
}

func (s *memStore) unacked(consumer string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs[consumer] {
		if !m.acked {
			n++
		}
	}
	return n
}

type memOutbox struct {
	s        *memStore
	consumer string
}

func (o *memOutbox) Next(ctx context.Context) (stream.StoredMessage, error) {
	for {
		o.s.mu.Lock()
		for _, m := range o.s.msgs[o.consumer] {
			if !m.offered && !m.acked {
				m.offered = true
				m.offers++
				o.s.mu.Unlock()
				return m.m, nil
			}
		}
		sig := o.s.sig
		o.s.mu.Unlock()
		select {
		case <-sig:
		case <-ctx.Done():
			return stream.StoredMessage{}, ctx.Err()
		}
	}
}

func (o *memOutbox) find(seq uint64) *memMsg {
	for _, m := range o.s.msgs[o.consumer] {
		if m.m.Seq == seq {
			return m
		}
	}
	return nil
}

func (o *memOutbox) Ack(ctx context.Context, m stream.StoredMessage) error {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	o.find(m.Seq).acked = true
	return nil
}

func (o *memOutbox) Release(m stream.StoredMessage) {
	o.s.mu.Lock()
	o.find(m.Seq).offered = false
	close(o.s.sig)
	o.s.sig = make(chan struct{})
	o.s.mu.Unlock()
}

func (o *memOutbox) Unacked(ctx context.Context) int { return o.s.unacked(o.consumer) }

func (o *memOutbox) Close() {}

func newStoreServer(t *testing.T, st stream.Store) string {
	t.Helper()
	srv, err := stream.NewOnStore(testConfig(), st, &fakerunner.Runner{Tokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.CloseClientConnections(); srv.Close(); hs.Close() })
	return "ws" + strings.TrimPrefix(hs.URL, "http")
}

// TestServerOnStore: a server on a Store answers a submit before the request's trajectories even when the
// store's nodes finish samples while the submit is being stored; it sends stored messages within the credits,
// acks by seq and by trajectory id reach the store, a cancel goes to the store, and what a connection was sent
// and did not ack is offered again to the next connection.
func TestServerOnStore(t *testing.T) {
	st := newMemStore()
	st.onSubmit = func(req stream.RolloutRequest) {
		for i := range req.Items[0].N {
			st.trajectory(req.Consumer, req.ID, req.Items[0].ID, i)
		}
	}
	url := newStoreServer(t, st)
	c, w := connect(t, url, "trainer", 3, nil)
	if w["spool_id"] != "mem" || num(w, "unacked") != 0 {
		t.Fatalf("welcome %v", w)
	}
	c.send(submit("r", 1, 4))
	if m := c.next(); m["type"] != "accepted" {
		t.Fatalf("first frame after the submit: %v (accepted must precede its trajectories)", m)
	}
	var got []map[string]any
	for range 3 { // the credits
		m := c.nextType("trajectory")
		got = append(got, m)
	}
	c.send(map[string]any{"type": "ack", "seqs": []any{got[0]["seq"]}, "trajectory_ids": []any{got[1]["trajectory_id"]}})
	c.send(map[string]any{"type": "credit", "credits": 1})
	fourth := c.nextType("trajectory")
	c.send(map[string]any{"type": "cancel", "request_id": "r"})
	c.send(map[string]any{"type": "cancel", "request_id": "nope"})
	if e := c.nextType("error"); e["code"] != "unknown_request" {
		t.Fatalf("cancel of an unknown request: %v", e)
	}
	if st.unacked("trainer") != 2 || len(st.cancels) != 1 || st.cancels[0] != "r" {
		t.Fatalf("store: %d unacked (want 2), cancels %v", st.unacked("trainer"), st.cancels)
	}
	c.ws.Close()
	// The next connection gets the two unacked ones again, at once.
	c2, w2 := connect(t, url, "trainer", 10, nil)
	if num(w2, "unacked") != 2 {
		t.Fatalf("welcome after reconnect: %v", w2)
	}
	again := map[string]bool{}
	for range 2 {
		again[c2.nextType("trajectory")["trajectory_id"].(string)] = true
	}
	if !again[got[2]["trajectory_id"].(string)] || !again[fourth["trajectory_id"].(string)] {
		t.Fatalf("offered again: %v; want %v and %v", again, got[2]["trajectory_id"], fourth["trajectory_id"])
	}
	offers := st.offers("trainer")
	if offers[got[0]["trajectory_id"].(string)] != 1 || offers[got[1]["trajectory_id"].(string)] != 1 {
		t.Errorf("acked messages offered again: %v", offers)
	}
}
