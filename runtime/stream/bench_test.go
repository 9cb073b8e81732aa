package stream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/stream/internal/fakerunner"
)

// benchRunner emits N copies of one pre-built trajectory from Concurrency goroutines, so the benchmark
// measures the stream (spool, framing, socket), not trajectory generation.
type benchRunner struct {
	fakerunner.Runner
	payload     json.RawMessage
	concurrency int
}

func (r *benchRunner) Run(ctx context.Context, req stream.RolloutRequest, out stream.Emitter) error {
	n := req.Items[0].N
	var wg sync.WaitGroup
	next := make(chan int, r.concurrency)
	go func() {
		for i := 0; i < n; i++ {
			next <- i
		}
		close(next)
	}()
	for w := 0; w < r.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := out.Finish(ctx, stream.Finished{ItemID: "x", SampleIndex: i, Trajectory: r.payload}); err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// BenchmarkStream4k measures trajectories/s of 4,096-token trajectories (~115 KB of JSON each: token ids,
// loss mask, full-precision logprobs, segments) over one loopback WebSocket connection, through the spool:
// spooled (one bbolt commit per batch), read back, framed, sent, parsed for seq by the consumer, acked in
// batches of 64 (deleted from the spool), credited.
func BenchmarkStream4k(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			payload := fakerunner.Trajectory("bench", "x", 0, 4096, 4, "default")
			cfg := stream.DefaultConfig()
			cfg.SpoolDir = b.TempDir()
			cfg.Fsync = fsync
			cfg.SpoolMaxRecords = 4096
			srv, err := stream.New(cfg, &benchRunner{payload: payload, concurrency: 64})
			if err != nil {
				b.Fatal(err)
			}
			hs := newHTTPServer(srv)
			defer func() { hs.CloseClientConnections(); srv.Close(); hs.Close() }()
			dialer := websocket.Dialer{ReadBufferSize: 256 << 10, WriteBufferSize: 16 << 10}
			ws, _, err := dialer.Dial("ws"+hs.URL[len("http"):], nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			ws.SetReadLimit(64 << 20)
			ws.WriteJSON(map[string]any{"type": "hello", "protocol": 1, "consumer_id": "bench", "credits": 512})
			if _, _, err := ws.ReadMessage(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			ws.WriteJSON(map[string]any{"type": "submit", "request_id": "bench",
				"items": []map[string]any{{"id": "x", "n": b.N, "messages": []any{}}}})
			prefix := []byte(`{"type":"trajectory","seq":`)
			got := 0
			seqs := make([]uint64, 0, 64)
			flush := func() {
				if len(seqs) == 0 {
					return
				}
				ws.WriteJSON(map[string]any{"type": "ack", "seqs": seqs})
				ws.WriteJSON(map[string]any{"type": "credit", "credits": len(seqs)})
				seqs = seqs[:0]
			}
			var buf bytes.Buffer
			for got < b.N {
				_, r, err := ws.NextReader()
				if err != nil {
					b.Fatal(err)
				}
				buf.Reset()
				if _, err := buf.ReadFrom(r); err != nil {
					b.Fatal(err)
				}
				msg := buf.Bytes()
				if !bytes.HasPrefix(msg, prefix) {
					continue // accepted, request_done
				}
				rest := msg[len(prefix):]
				seq, err := strconv.ParseUint(string(rest[:bytes.IndexByte(rest, ',')]), 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				seqs = append(seqs, seq)
				got++
				if len(seqs) == 64 {
					flush()
				}
			}
			flush()
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "traj/s")
			// CPU time of server and consumer together (this one process), per trajectory: the capacity figure
			// that does not depend on how busy a shared machine is.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/traj")
			st := srv.Stats()
			b.ReportMetric(float64(st.Spooled)/float64(max(st.SpoolCommits, 1)), "traj/commit")
		})
	}
}
