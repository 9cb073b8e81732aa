package stream_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime/stream/internal/fakerunner"
)

// FuzzFrames sends arbitrary text frames on one consumer connection. Property: the server never crashes and
// never drops the connection; after each frame a ping is still answered with its pong.
func FuzzFrames(f *testing.F) {
	for _, seed := range []string{
		`{"type":"submit","request_id":"r","items":[{"id":"a","n":2,"messages":[]}]}`,
		`{"type":"ack","seqs":[1,2,3],"trajectory_ids":["r/a/0"]}`,
		`{"type":"credit","credits":5}`,
		`{"type":"cancel","request_id":"r"}`,
		`{"type":"pause","id":"p","mode":"abort"}`,
		`{"type":"resume","id":"q"}`,
		`{"type":"update_weights","id":"u","model_path":"/x"}`,
		`{"type":"hello","protocol":1,"consumer_id":"x"}`,
		`{"type":"submit","items":[{"id":"a","n":1e9,"messages":[]}]}`,
		`{"type":"ack","seqs":[-1]}`,
		`{"type":null}`, `[]`, `""`, `{`, `{"type":"\u0000"}`, strings.Repeat("[", 5000),
	} {
		f.Add(seed)
	}
	cfg := testConfig()
	cfg.MaxMessageBytes = 4096
	cfg.SpoolDir = f.TempDir()
	ts := newTestServer(&testing.T{}, cfg, &fakerunner.Runner{Tokens: 8})
	defer ts.close()
	ws, _, err := websocket.DefaultDialer.Dial(ts.url, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer ws.Close()
	ws.WriteJSON(map[string]any{"type": "hello", "protocol": 1, "consumer_id": "fuzz", "credits": 1 << 20})
	if _, _, err := ws.ReadMessage(); err != nil {
		f.Fatal(err)
	}
	n := 0
	f.Fuzz(func(t *testing.T, frame string) {
		if len(frame) > 4*4096 {
			t.Skip("larger than the hard read limit: closing is the specified answer")
		}
		n++
		id := fmt.Sprintf("sync-%d", n)
		if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			t.Fatalf("write: %v", err)
		}
		ws.WriteJSON(map[string]any{"type": "ping", "id": id})
		ws.SetReadDeadline(time.Now().Add(testutil.Patience)) // a hang, not a timing assertion
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("after %q, waiting for pong %s: %v\n%s", frame, id, err, testutil.Goroutines())
			}
			var m struct{ Type, ID string }
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("server sent invalid JSON %q", b)
			}
			if m.Type == "pong" && m.ID == id {
				return
			}
		}
	})
}
