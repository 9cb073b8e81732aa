package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// lockedBuffer is a bytes.Buffer that the command writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestEmulateCommand starts `agentrt emulate` on a free port, generates, and shuts it down via the context (as
// SIGINT would).
func TestEmulateCommand(t *testing.T) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		t.Skip("$AGENTRT_QWEN3_MODEL is not set: run make setup and source ~/.cache/agentrt/env.sh")
	}
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"emulate", "--model", dir, "--addr", "127.0.0.1:0", "--seed", "3", "--latency", "0,0,0", "--log", logPath}, stdio{strings.NewReader(""), &out, &errb})
	}()
	var url string
	testutil.Until(t, "emulate to print its address", func() bool {
		select {
		case c := <-code:
			t.Fatalf("emulate exited early with %d: %s", c, errb.String())
		default:
		}
		if s := strings.TrimSpace(out.String()); strings.HasPrefix(s, "http://") {
			url = s
		}
		return url != ""
	})
	resp, err := http.Post(url+"/generate", "application/json", strings.NewReader(`{"text": "Hello", "sampling_params": {"max_new_tokens": 4}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var g struct {
		OutputIDs []int32 `json:"output_ids"`
		MetaInfo  struct {
			FinishReason map[string]any `json:"finish_reason"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(body, &g); err != nil || resp.StatusCode != http.StatusOK || len(g.OutputIDs) != 4 || g.MetaInfo.FinishReason["type"] != "length" {
		t.Fatalf("generate: %d %s (%v)", resp.StatusCode, body, err)
	}
	cancel()
	if c, _ := testutil.Recv(t, "emulate to exit after the cancel", code); c != exitOK {
		t.Fatalf("exit %d after shutdown: %s", c, errb.String())
	}
	data, err := os.ReadFile(logPath)
	if err != nil || !strings.Contains(string(data), `"path":"/generate"`) {
		t.Errorf("request log: %v %q", err, data)
	}
}

func TestEmulateCommandErrors(t *testing.T) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"no model", []string{}, exitUsage, "--model is required"},
		{"bad flag", []string{"--model", "x", "--warp"}, exitUsage, "warp"},
		{"bad latency", []string{"--model", "x", "--latency", "soon"}, exitUsage, "--latency"},
		{"bad fault rate", []string{"--model", "x", "--fault-rate", "boom=1"}, exitUsage, "--fault-rate"},
		{"missing model folder", []string{"--model", filepath.Join(t.TempDir(), "none")}, exitStartup, "none"},
	}
	if dir != "" {
		tests = append(tests,
			struct {
				name string
				args []string
				want int
				msg  string
			}{"bad policy", []string{"--model", dir, "--policy", "oracle"}, exitUsage, "policy"},
			struct {
				name string
				args []string
				want int
				msg  string
			}{"missing script", []string{"--model", dir, "--policy", "scripted", "--script", filepath.Join(t.TempDir(), "none.jsonl")}, exitStartup, "--script"},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			c := run(context.Background(), append([]string{"emulate"}, tt.args...), stdio{strings.NewReader(""), &out, &errb})
			if c != tt.want || !strings.Contains(errb.String(), tt.msg) {
				t.Errorf("exit %d (want %d), stderr %q (want it to mention %q)", c, tt.want, errb.String(), tt.msg)
			}
		})
	}
}

// TestEmulateHelpListsFormats: --help names every tool-call format the emulator accepts.
func TestEmulateHelpListsFormats(t *testing.T) {
	var out, errb bytes.Buffer
	if c := run(context.Background(), []string{"emulate", "--help"}, stdio{strings.NewReader(""), &out, &errb}); c != exitOK {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	_, usage, _ := strings.Cut(errb.String(), "-format string")
	usage, _, _ = strings.Cut(usage, "\n  -")
	for _, f := range emulator.ToolFormats {
		if !strings.Contains(usage, " "+f+",") && !strings.Contains(usage, " "+f+" ") {
			t.Errorf("--format's help does not name %q: %s", f, usage)
		}
	}
}
