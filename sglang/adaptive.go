package sglang

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/internal/slots"
)

// AdaptiveConfig turns a worker's fixed in-flight bound into an AIMD one driven by the worker's own load signal
// (SGLang's GET /v1/loads: KV token usage, waiting and retracted requests), as prime-rl does on vLLM: the limit
// grows additively while the worker has KV room and agentrt has requests waiting for it, and shrinks
// multiplicatively when the worker retracts (preempts) requests, so each worker stays busy without preemption
// storms. max_in_flight_per_worker stays the ceiling.
type AdaptiveConfig struct {
	// Enabled turns it on (workers only: a gateway hides the workers' loads).
	Enabled bool `toml:"enabled"`
	// Initial is each worker's limit at start. Default 16.
	Initial int `toml:"initial"`
	// Min is the floor of the limit. Default 2.
	Min int `toml:"min"`
	// Interval is how often each worker's /v1/loads is read. Default 1s.
	Interval time.Duration `toml:"interval"`
	// TargetUsage is the KV token usage (0..1) below which the limit may grow. Default 0.9.
	TargetUsage float64 `toml:"target_usage"`
	// Increase is the additive step per interval. Default 4.
	Increase int `toml:"increase"`
	// Decrease is the factor applied when the worker retracts requests. Default 0.5.
	Decrease float64 `toml:"decrease"`
}

func (a *AdaptiveConfig) fill() {
	if a.Initial == 0 {
		a.Initial = 16
	}
	if a.Min == 0 {
		a.Min = 2
	}
	if a.Interval == 0 {
		a.Interval = time.Second
	}
	if a.TargetUsage == 0 {
		a.TargetUsage = 0.9
	}
	if a.Increase == 0 {
		a.Increase = 4
	}
	if a.Decrease == 0 {
		a.Decrease = 0.5
	}
}

func (a *AdaptiveConfig) validate(c *Config) error {
	if !a.Enabled {
		return nil
	}
	switch {
	case c.Gateway != "":
		return fmt.Errorf("sglang: config: adaptive.enabled needs workers, not a gateway: a gateway does not serve its workers' /v1/loads")
	case a.Initial < 0 || a.Min < 0 || a.Increase < 0 || a.Interval < 0:
		return fmt.Errorf("sglang: config: adaptive.initial, adaptive.min, adaptive.increase and adaptive.interval must be >= 0")
	case a.TargetUsage < 0 || a.TargetUsage > 1:
		return fmt.Errorf("sglang: config: adaptive.target_usage must be in [0, 1], got %v", a.TargetUsage)
	case a.Decrease < 0 || a.Decrease >= 1:
		return fmt.Errorf("sglang: config: adaptive.decrease must be in (0, 1), got %v", a.Decrease)
	}
	return nil
}

// Load is one reading of a worker's /v1/loads, summed over its DP ranks.
type Load struct {
	// TokenUsage is the KV pool's used fraction (the highest over DP ranks).
	TokenUsage float64
	// Running, Waiting and Retracted count the worker's running, waiting and retracted (preempted, waiting to
	// run again) requests.
	Running, Waiting, Retracted int
	// UsedTokens is the KV tokens the running requests hold; WaitingTokens the uncached prompt tokens of the
	// waiting ones (num_used_tokens, num_waiting_uncached_tokens).
	UsedTokens, WaitingTokens int
}

// Loads reads a worker's GET /v1/loads (SGLang 0.5.x; sglang/srt/entrypoints/v1_loads.py).
func (c *Client) Loads(ctx context.Context, server string) (Load, error) {
	var r struct {
		Loads []struct {
			TokenUsage     float64 `json:"token_usage"`
			NumRunningReqs int     `json:"num_running_reqs"`
			NumWaitingReqs int     `json:"num_waiting_reqs"`
			UsedTokens     int     `json:"num_used_tokens"`
			WaitingTokens  int     `json:"num_waiting_uncached_tokens"`
			Queues         *struct {
				Retracted int `json:"retracted"`
			} `json:"queues"`
		} `json:"loads"`
	}
	if err := c.query(ctx, "loads", server, "/v1/loads?include=core,queues", &r); err != nil {
		return Load{}, err
	}
	var l Load
	for _, x := range r.Loads {
		l.TokenUsage = max(l.TokenUsage, x.TokenUsage)
		l.Running += x.NumRunningReqs
		l.Waiting += x.NumWaitingReqs
		l.UsedTokens += x.UsedTokens
		l.WaitingTokens += x.WaitingTokens
		if x.Queues != nil {
			l.Retracted += x.Queues.Retracted
		}
	}
	return l, nil
}

// adapt moves a worker's limit after one load reading: multiplicative decrease when the worker retracted
// requests, additive increase while it has KV room, nothing waits on its side, and agentrt uses the whole limit
// (requests wait for a slot, or every slot is taken). It returns the new limit.
func (c *Client) adapt(w *worker, l Load) int {
	a := c.cfg.Adaptive
	cur := w.lim.Limit()
	next := cur
	switch {
	case l.Retracted > 0:
		next = int(float64(cur) * a.Decrease)
	case l.TokenUsage < a.TargetUsage && l.Waiting == 0 && (w.queued.Load() > 0 || int(w.inFlight.Load()) >= cur):
		next = cur + a.Increase
	}
	c.shareMu.Lock()
	defer c.shareMu.Unlock()
	next = min(max(next, a.Min), c.ceiling())
	if next != cur {
		w.lim.SetLimit(next)
	}
	return next
}

// adaptLoop reads w's load every interval until the client closes. A worker without /v1/loads (404: SGLang
// before 0.5) gets the fixed bound, max_in_flight_per_worker, and is no longer read; one that cannot answer now
// keeps its limit until it can (each is logged once).
func (c *Client) adaptLoop(w *worker) {
	t := time.NewTicker(c.cfg.Adaptive.Interval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		l, err := c.Loads(context.Background(), w.url)
		var he *HTTPError
		if errors.As(err, &he) && he.StatusCode == http.StatusNotFound {
			c.shareMu.Lock()
			w.fixed = true
			w.lim.SetLimit(c.ceiling())
			c.shareMu.Unlock()
			c.log.Warn("sglang: adaptive concurrency: the worker serves no /v1/loads (SGLang < 0.5?); it gets the fixed bound",
				"server", w.url, "max_in_flight_per_worker", c.cfg.MaxInFlightPerWorker)
			return
		}
		if err != nil {
			if !warned {
				c.log.Warn("sglang: adaptive concurrency: cannot read the worker's load; its limit stays", "server", w.url, "limit", w.lim.Limit(), "err", err)
				warned = true
			}
			continue
		}
		warned = false
		w.serverLoad.Store(int64(l.UsedTokens + l.WaitingTokens))
		w.loadAt.Store(time.Now().UnixNano())
		before := w.lim.Limit()
		if after := c.adapt(w, l); after != before {
			c.log.Debug("sglang: adaptive concurrency", "server", w.url, "limit", after, "was", before, "token_usage", l.TokenUsage, "waiting", l.Waiting, "retracted", l.Retracted)
		}
	}
}

// SetShare makes the client's in-flight bounds this node's share of max_in_flight_per_worker, for a cluster whose
// nodes send to the same workers (docs/scale-out.md, "Limits across nodes"): each worker's bound (and the
// gateway's), or with [sglang.adaptive] the ceiling of each worker's controller (its limit comes down at once if
// above). Requests in flight above a lowered bound finish; Within says when none are left.
func (c *Client) SetShare(s slots.Share) {
	c.shareMu.Lock()
	defer c.shareMu.Unlock()
	c.share = s
	ceil := c.ceiling()
	for _, w := range c.workers {
		if c.cfg.Adaptive.Enabled && !w.fixed {
			w.lim.SetLimit(min(w.lim.Limit(), ceil))
		} else {
			w.lim.SetLimit(ceil)
		}
	}
	if c.gateway != nil {
		c.gateway.lim.SetLimit(ceil)
	}
}

// Within says whether no worker (nor the gateway) has more requests in flight than its bound.
func (c *Client) Within() bool {
	for _, w := range c.generators {
		if !w.lim.Within() {
			return false
		}
	}
	return true
}

// ceiling is the bound of each worker: this node's share of max_in_flight_per_worker. Callers hold shareMu.
func (c *Client) ceiling() int { return c.share.Of(c.cfg.MaxInFlightPerWorker) }
