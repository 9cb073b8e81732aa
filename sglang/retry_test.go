package sglang

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// These tests run in a synctest bubble: time is virtual, so backoff schedules and deadlines are checked
// exactly, with no real sleeping. The HTTP layer is a fake RoundTripper (real sockets are not durably
// blocking, so they cannot live in a bubble).

// rtFunc is an http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func respond(r *http.Request, status int, body string, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: -1, Request: r}
}

// attemptLog records when each /generate attempt reached the fake server.
type attemptLog struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
	hosts []string
}

func (l *attemptLog) add(r *http.Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Since(l.start))
	l.hosts = append(l.hosts, r.URL.Host)
	return len(l.at)
}

func newBubbleClient(t *testing.T, rt rtFunc, mut func(*Config), opts ...Option) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Workers = []string{"http://w1:30000"}
	cfg.Retry.Jitter = 0
	if mut != nil {
		mut(&cfg)
	}
	c, err := New(cfg, append([]Option{WithHTTPClient(&http.Client{Transport: rt})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := string(loadErrorFixture(t, "error_queue_full_503.json").Body)
		log := &attemptLog{start: time.Now()}
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			log.add(r)
			return respond(r, 503, q), nil
		}, func(c *Config) { c.UnhealthyAfter = 100 })
		_, err := c.Generate(t.Context(), "ep", testRequest())
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		// 100ms * 2^n, capped at 5s; 5 attempts
		want := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond}
		if !equalDurations(log.at, want) {
			t.Errorf("attempts at %v, want %v", log.at, want)
		}
		if got := time.Since(log.start); got != 1500*time.Millisecond {
			t.Errorf("returned after %v, want right after the last attempt", got)
		}
	})
}

func TestBackoffCapAndJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &attemptLog{start: time.Now()}
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			log.add(r)
			return respond(r, 500, "Internal Server Error"), nil
		}, func(c *Config) {
			c.UnhealthyAfter = 100
			c.Retry.MaxAttempts = 8
			c.Retry.InitialBackoff = time.Second
			c.Retry.MaxBackoff = 4 * time.Second
			c.Retry.Jitter = 0.25
		})
		_, _ = c.Generate(t.Context(), "ep", testRequest())
		if len(log.at) != 8 {
			t.Fatalf("%d attempts, want 8", len(log.at))
		}
		for i := 1; i < len(log.at); i++ {
			base := min(time.Second<<(i-1), 4*time.Second)
			gap := log.at[i] - log.at[i-1]
			if gap < base*3/4 || gap > base*5/4 {
				t.Errorf("gap %d = %v, want %v ± 25%%", i, gap, base)
			}
		}
	})
}

func TestRetryAfterHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &attemptLog{start: time.Now()}
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			if log.add(r) == 1 {
				return respond(r, 429, `{"error":{"message":"rate limited"}}`, "Retry-After", "3"), nil
			}
			return respond(r, 200, string(fixture(t, "generate_response.json", "response"))), nil
		}, nil)
		if _, err := c.Generate(t.Context(), "ep", testRequest()); err != nil {
			t.Fatal(err)
		}
		if want := []time.Duration{0, 3 * time.Second}; !equalDurations(log.at, want) {
			t.Errorf("attempts at %v, want %v", log.at, want)
		}
	})
}

// TestDeadlineStopsRetries: no retry starts whose backoff would outlive the deadline; the real failure is
// reported at once instead of a bare deadline error later.
func TestDeadlineStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		log := &attemptLog{start: start}
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			log.add(r)
			return respond(r, 503, `{"object":"error","message":"The request queue is full.","type":"503","param":null,"code":503}`), nil
		}, func(c *Config) { c.UnhealthyAfter = 100; c.Retry.MaxAttempts = 50 })
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := c.Generate(ctx, "ep", testRequest())
		// attempts at 0, 100, 300, 700 ms; the next backoff (800ms) would end past 1s
		if want := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond}; !equalDurations(log.at, want) {
			t.Errorf("attempts at %v, want %v", log.at, want)
		}
		if time.Since(start) != 700*time.Millisecond {
			t.Errorf("returned after %v, want 700ms", time.Since(start))
		}
		var e *Error
		if !errors.Is(err, ErrUnavailable) || !errors.As(err, &e) || e.Attempts != 4 || !strings.Contains(err.Error(), "queue is full") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestRequestTimeout: without a ctx deadline, Config.RequestTimeout bounds the call, retries included.
func TestRequestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done() // a stalled server
			return nil, r.Context().Err()
		}, func(c *Config) { c.RequestTimeout = 90 * time.Second })
		_, err := c.Generate(context.Background(), "ep", testRequest())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
		if errors.Is(err, ErrConnection) || errors.Is(err, ErrTimeout) {
			t.Errorf("err = %v: the request deadline is not a transient failure", err)
		}
		if got := time.Since(start); got != 90*time.Second {
			t.Errorf("returned after %v, want 90s", got)
		}
	})
}

// TestAttemptTimeoutRetried: a stalled attempt is cut at Retry.AttemptTimeout and retried.
func TestAttemptTimeoutRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &attemptLog{start: time.Now()}
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			if log.add(r) == 1 {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return respond(r, 200, string(fixture(t, "generate_response.json", "response"))), nil
		}, func(c *Config) { c.Retry.AttemptTimeout = 20 * time.Second; c.UnhealthyAfter = 100 })
		resp, err := c.Generate(t.Context(), "ep", testRequest())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Attempts != 2 {
			t.Errorf("attempts = %d", resp.Attempts)
		}
		if want := []time.Duration{0, 20*time.Second + 100*time.Millisecond}; !equalDurations(log.at, want) {
			t.Errorf("attempts at %v, want %v", log.at, want)
		}
	})
}

// TestUnhealthyRecovers: under rendezvous placement a worker marked unhealthy gets its episodes back after
// UnhealthyFor (under least_loaded an episode stays where it went: TestStickyEpisodeStaysAfterRecovery).
func TestUnhealthyRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		down := true
		ok := string(fixture(t, "generate_response.json", "response"))
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			d := down
			mu.Unlock()
			if d && r.URL.Host == "w1:30000" {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
			}
			return respond(r, 200, ok), nil
		}, func(c *Config) {
			c.Workers = []string{"http://w1:30000", "http://w2:30000"}
			c.UnhealthyFor = 10 * time.Second
			c.Placement = PlacementRendezvous
		})
		ep := ""
		for i := 0; ep == ""; i++ {
			if e := "ep-" + string(rune('a'+i)); c.Rank(e)[0] == "http://w1:30000" {
				ep = e
			}
		}
		resp, err := c.Generate(t.Context(), ep, testRequest())
		if err != nil || resp.Server != "http://w2:30000" {
			t.Fatalf("while w1 is down: %v, %+v", err, resp)
		}
		mu.Lock()
		down = false
		mu.Unlock()
		time.Sleep(5 * time.Second)
		req := testRequest()
		req.RID = "turn-2"
		if resp, _ = c.Generate(t.Context(), ep, req); resp.Server != "http://w2:30000" {
			t.Errorf("5s later (still marked): served by %s", resp.Server)
		}
		time.Sleep(5 * time.Second)
		req.RID = "turn-3"
		if resp, _ = c.Generate(t.Context(), ep, req); resp.Server != "http://w1:30000" {
			t.Errorf("10s later (recovered): served by %s, want the home worker", resp.Server)
		}
	})
}

// TestAbortBetweenRetries: AbortRequest during a backoff stops the retries, and the abort carries the rid
// of the attempt in flight.
func TestAbortBetweenRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var aborted []string
		generates := 0
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Path == "/abort_request" {
				aborted = append(aborted, string(body))
				return respond(r, 200, ""), nil
			}
			generates++
			return respond(r, 503, `{"object":"error","message":"The request queue is full.","type":"503","param":null,"code":503}`), nil
		}, func(c *Config) { c.UnhealthyAfter = 100 })
		done := make(chan error)
		go func() {
			_, err := c.Generate(t.Context(), "ep", testRequest())
			done <- err
		}()
		time.Sleep(150 * time.Millisecond) // attempt 2 at 100ms failed; in backoff until 300ms
		synctest.Wait()
		if err := c.AbortRequest(t.Context(), "rollout-42-turn-0"); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if !errors.Is(err, ErrAborted) {
			t.Errorf("err = %v, want ErrAborted", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if generates != 2 {
			t.Errorf("%d generate attempts, want 2 (none after the abort)", generates)
		}
		if len(aborted) != 1 || !strings.Contains(aborted[0], `"rid":"rollout-42-turn-0-retry2"`) {
			t.Errorf("abort bodies %q, want the current attempt's rid", aborted)
		}
	})
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTransientFailureKeepsAffinity: one reset or 503 is retried on the same worker (its radix cache holds
// the episode); only UnhealthyAfter failures in a row move the episode.
func TestTransientFailureKeepsAffinity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := string(fixture(t, "generate_response.json", "response"))
		log := &attemptLog{start: time.Now()}
		var failures int
		var mu sync.Mutex
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			log.add(r)
			mu.Lock()
			defer mu.Unlock()
			if failures > 0 {
				failures--
				if failures%2 == 0 {
					return nil, errors.New("read: connection reset by peer")
				}
				return respond(r, 503, `{"object":"error","message":"The request queue is full.","type":"503","param":null,"code":503}`), nil
			}
			return respond(r, 200, ok), nil
		}, func(c *Config) { c.Workers = []string{"http://w1:30000", "http://w2:30000"} })
		ep := "episode-x"
		home := c.Rank(ep)[0]
		mu.Lock()
		failures = 2 // below UnhealthyAfter (3)
		mu.Unlock()
		resp, err := c.Generate(t.Context(), ep, testRequest())
		if err != nil || resp.Server != home || resp.Attempts != 3 {
			t.Fatalf("resp %+v err %v: want served by the home worker %s on attempt 3", resp, err, home)
		}
		mu.Lock()
		failures = 3 // reaches UnhealthyAfter: the 4th attempt spills
		mu.Unlock()
		req := testRequest()
		req.RID = "turn-2"
		resp, err = c.Generate(t.Context(), ep, req)
		if err != nil || resp.Server == home || resp.Attempts != 4 {
			t.Fatalf("resp %+v err %v: want a spill to the other worker on attempt 4", resp, err)
		}
		if !strings.Contains(strings.Join(log.hosts, " "), strings.TrimPrefix(home, "http://")) {
			t.Errorf("hosts %v", log.hosts)
		}
	})
}
