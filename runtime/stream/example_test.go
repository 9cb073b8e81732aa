package stream_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/stream/internal/fakerunner"
)

// Example serves the stream with a synthetic runner and plays a consumer: hello, submit, receive, ack.
// agentrt serve does the same with the runtime's episode scheduler as the Runner.
func Example() {
	dir, _ := os.MkdirTemp("", "spool")
	defer os.RemoveAll(dir)
	cfg := stream.DefaultConfig()
	cfg.SpoolDir = dir
	srv, err := stream.New(cfg, &fakerunner.Runner{Tokens: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	hs := httptest.NewServer(srv) // serve mounts it at /v1/stream
	defer hs.Close()
	defer srv.Close()

	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	ws.WriteJSON(map[string]any{"type": "hello", "protocol": 1, "consumer_id": "trainer-0", "credits": 16})
	ws.WriteJSON(map[string]any{"type": "submit", "request_id": "r1", "items": []map[string]any{
		{"id": "q1", "n": 2, "messages": []map[string]string{{"role": "user", "content": "2+2?"}}}}})
	for done := false; !done; {
		var m struct {
			Type         string          `json:"type"`
			Seq          uint64          `json:"seq"`
			TrajectoryID string          `json:"trajectory_id"`
			Status       string          `json:"status"`
			Samples      int             `json:"samples"`
			Trajectory   json.RawMessage `json:"trajectory"`
		}
		if err := ws.ReadJSON(&m); err != nil {
			fmt.Println(err)
			return
		}
		switch m.Type {
		case stream.TypeWelcome, stream.TypeAccepted:
			fmt.Println(m.Type)
		case stream.TypeTrajectory:
			var t struct {
				TokenIDs []int32 `json:"token_ids"`
			}
			json.Unmarshal(m.Trajectory, &t)
			fmt.Println(m.Type, m.TrajectoryID, len(t.TokenIDs), "tokens")
		case stream.TypeRequestDone:
			fmt.Println(m.Type, m.Status)
			done = true
		}
		if m.Seq != 0 {
			ws.WriteJSON(map[string]any{"type": "ack", "seqs": []uint64{m.Seq}})
		}
	}
	// Unordered output:
	// welcome
	// accepted
	// trajectory r1/q1/0 8 tokens
	// trajectory r1/q1/1 8 tokens
	// request_done completed
}
