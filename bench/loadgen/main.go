package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	url := fs.String("url", "", "emulator base URL (required)")
	reqs := fs.String("requests", "", "emulator request log (JSON lines) whose /generate bodies are replayed (required)")
	conc := fs.Int("concurrency", 64, "requests in flight")
	repeat := fs.Int("repeat", 1, "replay the requests this many times")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || *reqs == "" || *conc < 1 || *repeat < 1 {
		fmt.Fprintln(os.Stderr, "loadgen: --url and --requests are required; --concurrency and --repeat must be >= 1")
		return 2
	}
	bodies, err := load(*reqs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	if len(bodies) == 0 {
		fmt.Fprintf(os.Stderr, "loadgen: %s has no successful /generate requests\n", *reqs)
		return 1
	}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: *conc, MaxIdleConnsPerHost: *conc, IdleConnTimeout: time.Minute,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	total := len(bodies) * *repeat
	var next, errs atomic.Int64
	var firstErr atomic.Value
	cpu0 := cpuSeconds()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				if err := post(context.Background(), client, *url+"/generate", bodies[i%int64(len(bodies))]); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start).Seconds()
	out := map[string]any{
		"requests": total, "distinct_requests": len(bodies), "concurrency": *conc, "wall_s": wall,
		"requests_per_s": float64(total) / wall, "cpu_s": cpuSeconds() - cpu0, "errors": errs.Load(),
	}
	if e := firstErr.Load(); e != nil {
		out["first_error"] = e
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if errs.Load() > 0 {
		return 1
	}
	return 0
}

// load returns the request bodies of the log's successful /generate records, in log order.
func load(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	defer f.Close()
	var bodies [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	line := 0
	for sc.Scan() {
		line++
		var r struct {
			Path    string          `json:"path"`
			Status  int             `json:"status"`
			Fault   string          `json:"fault"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("loadgen: %s:%d: %w", path, line, err)
		}
		if r.Path == "/generate" && r.Status == 200 && r.Fault == "" && len(r.Request) > 0 {
			bodies = append(bodies, bytes.Clone(r.Request))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("loadgen: %s:%d: %w", path, line+1, err)
	}
	return bodies, nil
}

func post(ctx context.Context, c *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("loadgen: reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("loadgen: status %d", resp.StatusCode)
	}
	return nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
