package stream_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime/stream"
)

// testServer is a stream.Server on an httptest server.
type testServer struct {
	t   *testing.T
	srv *stream.Server
	hs  *httptest.Server
	url string
}

func newTestServer(t *testing.T, cfg stream.Config, runner stream.Runner) *testServer {
	t.Helper()
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = t.TempDir()
	}
	srv, err := stream.New(cfg, runner)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(srv)
	ts := &testServer{t: t, srv: srv, hs: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http")}
	t.Cleanup(ts.close)
	return ts
}

func (ts *testServer) close() {
	if ts.hs == nil {
		return
	}
	ts.hs.CloseClientConnections()
	ts.srv.Close()
	ts.hs.Close()
	ts.hs = nil
}

func testConfig() stream.Config {
	cfg := stream.DefaultConfig()
	cfg.Fsync = false
	cfg.PingInterval = time.Second
	cfg.WriteTimeout = 20 * time.Second
	return cfg
}

// client is a raw protocol client: frames are decoded into generic maps.
type client struct {
	t      *testing.T
	ws     *websocket.Conn
	frames chan map[string]any
	raw    chan []byte
	closed chan error
}

func dial(t *testing.T, url string, hdr http.Header) (*client, *http.Response, error) {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(64 << 20)
	c := &client{t: t, ws: ws, frames: make(chan map[string]any, 1<<16), raw: make(chan []byte, 1<<16), closed: make(chan error, 1)}
	go func() {
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				c.closed <- err
				close(c.frames)
				return
			}
			var m map[string]any
			if len(b) > 64<<10 {
				// Large trajectories: keep the envelope only (building maps of 8k-element arrays is slow
				// under -race, and the tests that use them only count ids).
				var env struct {
					Type         string  `json:"type"`
					Seq          float64 `json:"seq"`
					RequestID    string  `json:"request_id"`
					TrajectoryID string  `json:"trajectory_id"`
				}
				if err := json.Unmarshal(b, &env); err != nil {
					c.closed <- fmt.Errorf("server sent invalid JSON: %v", err)
					close(c.frames)
					return
				}
				c.frames <- map[string]any{"type": env.Type, "seq": env.Seq, "request_id": env.RequestID, "trajectory_id": env.TrajectoryID}
				continue
			}
			if err := json.Unmarshal(b, &m); err != nil {
				c.closed <- fmt.Errorf("server sent invalid JSON: %v: %.200s", err, b)
				close(c.frames)
				return
			}
			c.frames <- m
		}
	}()
	t.Cleanup(func() { ws.Close() })
	return c, resp, nil
}

// connect dials and says hello; it fails the test unless the answer is a welcome.
func connect(t *testing.T, url, consumer string, credits int, extra map[string]any) (*client, map[string]any) {
	t.Helper()
	c, _, err := dial(t, url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	hello := map[string]any{"type": "hello", "protocol": 1, "consumer_id": consumer, "credits": credits}
	for k, v := range extra {
		hello[k] = v
	}
	c.send(hello)
	w := c.next()
	if w["type"] != "welcome" {
		t.Fatalf("hello answered with %v", w)
	}
	return c, w
}

func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(websocket.TextMessage, b)
}

func (c *client) sendRaw(mt int, b []byte) {
	c.t.Helper()
	if err := c.ws.WriteMessage(mt, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next returns the next frame; a hang fails the test with a goroutine dump (testutil.Patience, not a timing
// assertion).
func (c *client) next() map[string]any {
	c.t.Helper()
	m, ok := testutil.Recv(c.t, "the next frame from the server", c.frames)
	if !ok {
		c.t.Fatalf("connection closed: %v", <-c.closed)
	}
	return m
}

// nextType skips frames until one of type typ arrives.
func (c *client) nextType(typ string) map[string]any {
	c.t.Helper()
	for {
		m := c.next()
		if m["type"] == typ {
			return m
		}
	}
}

// waitClosed waits for the connection to end and returns the close error.
func (c *client) waitClosed() error {
	c.t.Helper()
	for {
		if _, ok := testutil.Recv(c.t, "the server to close the connection", c.frames); !ok {
			return <-c.closed
		}
	}
}

func submit(id string, items int, n int) map[string]any {
	its := make([]map[string]any, items)
	for i := range its {
		its[i] = map[string]any{"id": fmt.Sprintf("item%d", i), "n": n,
			"messages": []map[string]any{{"role": "user", "content": fmt.Sprintf("question %d", i)}},
			"label":    fmt.Sprint(i), "metadata": map[string]any{"k": i}}
	}
	return map[string]any{"type": "submit", "request_id": id, "items": its}
}

func num(m map[string]any, k string) uint64 {
	f, _ := m[k].(float64)
	return uint64(f)
}

func newHTTPServer(h http.Handler) *httptest.Server { return httptest.NewServer(h) }

// nextBeforeClose returns the next frame that is not an event, or nil once the connection has closed (failing
// the test if neither happens within 20 s).
func (c *client) nextBeforeClose() map[string]any {
	c.t.Helper()
	for {
		select {
		case m, ok := <-c.frames:
			if !ok {
				return nil
			}
			if m["type"] != "event" {
				return m
			}
		case <-time.After(20 * time.Second):
			c.t.Fatal("neither a frame nor the close within 20s")
		}
	}
}
