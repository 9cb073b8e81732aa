package emulator

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// kvPool models SGLang's KV-cache token pool (max_total_num_tokens) when Config.KVTokens is set, with the
// scheduler's admission and retraction rules (sglang/srt/managers/schedule_policy.py, scheduler.py):
//
//   - a request is admitted when its prompt fits next to a reservation for the output still to come of every
//     running request and its own: used + prompt + new_token_ratio × Σ remaining <= capacity, where remaining is
//     max_new_tokens (clipped at 4096) minus what was generated;
//   - new_token_ratio starts at 0.7 and decays towards 0.1 while decoding goes well, so a busy worker admits
//     more and more optimistically; while decoding, each output token takes one token of the pool;
//   - when the pool runs out, the request that needs the token is retracted (retract_decode): its tokens are
//     freed, it waits in line again, and on re-admission it pays the prefill of everything it had (prompt and
//     output so far); new_token_ratio jumps back to 1. The oldest running request is never retracted (SGLang
//     retracts the least advanced first), so the pool always makes progress;
//   - prefill is compute the running requests share: each prefill (a new prompt's uncached tokens, or a retracted
//     request's whole sequence) holds up every decode in progress by its duration, as SGLang's prefill batches do.
//
// Overfilling a worker therefore costs the whole worker throughput, which is what an adaptive client limit
// (sglang.Config.Adaptive) avoids.
type kvPool struct {
	mu          sync.Mutex
	capacity    int
	used        int
	running     int
	reserved    int                 // Σ remaining output of the running requests
	ratio       float64             // new_token_ratio
	seq         uint64              // admissions so far: a running request's ticket
	admitted    map[uint64]struct{} // tickets of the running requests
	waiting     []*kvWaiter         // FIFO
	retracted   int                 // waiting requests that were retracted (SGLang's queues.retracted)
	retractions uint64              // retractions so far
	prefilled   time.Duration       // prefill time so far: decodes in progress are held up by what is added
}

// prefill adds d of prefill compute, which delays every decode in progress.
func (p *kvPool) prefill(d time.Duration) {
	p.mu.Lock()
	p.prefilled += d
	p.mu.Unlock()
}

// stalled is the prefill time so far; a decode's delay is its growth since the decode started.
func (p *kvPool) stalled() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prefilled
}

type kvWaiter struct {
	need      int
	remaining int
	seq       uint64
	retracted bool
	ready     chan struct{}
	granted   bool
}

// SGLang's new_token_ratio bounds (SGLANG_INIT_NEW_TOKEN_RATIO 0.7, a minimum of 0.14 of it) and the decay per
// decoded token of a request, spread over the requests running (its default decay takes 600 decode steps).
const (
	kvInitRatio   = 0.7
	kvMinRatio    = 0.1
	kvRatioDecay  = (kvInitRatio - kvMinRatio) / 600
	kvClipNewToks = 4096 // CLIP_MAX_NEW_TOKENS: the most output one request reserves
)

func newKVPool(capacity int) *kvPool {
	return &kvPool{capacity: capacity, ratio: kvInitRatio, admitted: map[uint64]struct{}{}}
}

// kvTicket is a running request's hold on the pool.
type kvTicket struct {
	seq       uint64
	held      int
	remaining int // output still to come, as reserved
}

// fitsLocked is the admission rule: the prompt next to the reservation of every running request's remaining
// output and its own. An empty pool takes anything.
func (p *kvPool) fitsLocked(need, remaining int) bool {
	return p.running == 0 || float64(p.used+need)+p.ratio*float64(p.reserved+remaining) <= float64(p.capacity)
}

// admit waits until need prompt tokens fit next to the reservation for remaining output tokens (after everyone
// in line before it), then takes them. A need above the pool's capacity is capped at it. It returns false if the
// request was aborted or its client went away first.
func (p *kvPool) admit(ctx context.Context, abort <-chan struct{}, need, remaining int, retracted bool) (kvTicket, bool) {
	need = min(need, p.capacity)
	remaining = min(max(remaining, 0), kvClipNewToks)
	p.mu.Lock()
	if len(p.waiting) == 0 && p.fitsLocked(need, remaining) {
		t := p.startLocked(need, remaining)
		p.mu.Unlock()
		return t, true
	}
	w := &kvWaiter{need: need, remaining: remaining, retracted: retracted, ready: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	if retracted {
		p.retracted++
	}
	p.mu.Unlock()
	select {
	case <-w.ready:
		return kvTicket{w.seq, need, remaining}, true
	case <-abort:
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.granted { // granted while we gave up: hand the tokens back
		p.releaseLocked(kvTicket{w.seq, need, remaining})
		return kvTicket{}, false
	}
	for i, x := range p.waiting {
		if x == w {
			p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
			break
		}
	}
	if retracted {
		p.retracted--
	}
	return kvTicket{}, false
}

func (p *kvPool) startLocked(need, remaining int) kvTicket {
	p.seq++
	p.used += need
	p.reserved += remaining
	p.running++
	p.admitted[p.seq] = struct{}{}
	return kvTicket{p.seq, need, remaining}
}

// grow takes n more tokens for a running request; false (nothing taken) if they do not fit and the request is
// not the oldest one running.
func (p *kvPool) grow(t *kvTicket, n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used+n > p.capacity {
		for seq := range p.admitted {
			if seq < t.seq {
				return false
			}
		}
	}
	p.used += n
	t.held += n
	r := min(n, t.remaining)
	t.remaining -= r
	p.reserved -= r
	p.ratio = max(kvMinRatio, p.ratio-kvRatioDecay*float64(n)/float64(max(p.running, 1)))
	return true
}

// retract frees a running request's tokens and counts the retraction.
func (p *kvPool) retract(t kvTicket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retractions++
	p.ratio = 1
	p.releaseLocked(t)
}

// release frees a finished request's tokens.
func (p *kvPool) release(t kvTicket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(t)
}

func (p *kvPool) releaseLocked(t kvTicket) {
	p.used -= t.held
	p.reserved -= t.remaining
	p.running--
	delete(p.admitted, t.seq)
	for len(p.waiting) > 0 && p.fitsLocked(p.waiting[0].need, p.waiting[0].remaining) {
		w := p.waiting[0]
		p.waiting = p.waiting[1:]
		w.seq = p.startLocked(w.need, w.remaining).seq
		if w.retracted {
			p.retracted--
		}
		w.granted = true
		close(w.ready)
	}
}

type kvStats struct {
	capacity, used, running, waiting, retracted int
	waitingTokens                               int // the waiting requests' prompt tokens
	retractions                                 uint64
}

func (p *kvPool) stats() kvStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	need := 0
	for _, w := range p.waiting {
		need += w.need
	}
	return kvStats{p.capacity, p.used, p.running, len(p.waiting), p.retracted, need, p.retractions}
}

// Retractions returns how many times a running request was retracted because the KV pool (Config.KVTokens) was
// full; 0 without the KV model.
func (s *Server) Retractions() uint64 {
	if s.kv == nil {
		return 0
	}
	return s.kv.stats().retractions
}

// loadSections are /v1/loads' include values (sglang/srt/managers/load_snapshot.py, VALID_SECTIONS).
var loadSections = map[string]bool{"core": true, "memory": true, "spec": true, "lora": true, "disagg": true, "queues": true, "all": true}

// handleLoads serves SGLang's /v1/loads (sglang/srt/entrypoints/v1_loads.py): one load per DP rank (the
// emulator has one) with the core scalars and, unless include leaves it out, the queues section.
func (s *Server) handleLoads(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	include := map[string]bool{}
	if v := q.Get("include"); v != "" {
		var bad []string
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			include[part] = true
			if !loadSections[part] {
				bad = append(bad, "'"+part+"'")
			}
		}
		if len(bad) > 0 {
			valid := make([]string, 0, len(loadSections))
			for k := range loadSections {
				valid = append(valid, "'"+k+"'")
			}
			sort.Strings(valid)
			writeJSON(w, http.StatusBadRequest, map[string]string{"detail": fmt.Sprintf("Invalid include sections: {%s}. Valid options: [%s]",
				strings.Join(bad, ", "), strings.Join(valid, ", "))})
			return
		}
	}
	if v := q.Get("dp_rank"); v != "" && v != "0" {
		writeJSON(w, http.StatusOK, map[string]any{"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000000+00:00"),
			"version": emulatedVersion, "accelerator": nil, "num_accelerators": 1, "loads": []any{}})
		return
	}
	load := s.load()
	if len(include) > 0 && !include["all"] && !include["queues"] {
		delete(load, "queues")
	}
	if q.Get("format") == "prometheus" {
		var b strings.Builder
		keys := make([]string, 0, len(load))
		for k := range load {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := load[k].(type) {
			case int, int64, uint64, float64:
				fmt.Fprintf(&b, "# TYPE sglang_%s gauge\nsglang_%s{dp_rank=\"0\"} %v\n", k, k, v)
			case map[string]any:
				sub := make([]string, 0, len(v))
				for sk := range v {
					sub = append(sub, sk)
				}
				sort.Strings(sub)
				for _, sk := range sub {
					fmt.Fprintf(&b, "# TYPE sglang_%s_%s gauge\nsglang_%s_%s{dp_rank=\"0\"} %v\n", k, sk, k, sk, v[sk])
				}
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, b.String())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"timestamp":        time.Now().UTC().Format("2006-01-02T15:04:05.000000+00:00"),
		"version":          emulatedVersion,
		"accelerator":      nil,
		"num_accelerators": 1,
		"loads":            []any{load},
	})
}

// emulatedVersion is the SGLang release whose wire format the emulator follows for version-bearing replies.
const emulatedVersion = "0.5.23"

// load is one DP rank's LoadSnapshot.to_dict(): the core keys in SGLang's order, and the queues section.
func (s *Server) load() map[string]any {
	running := s.busy()
	waiting := int(s.queued.Load())
	capacity, used, retracted, waitingTokens := s.cfg.CacheTokens, 0, 0, 0
	if s.kv != nil {
		st := s.kv.stats()
		capacity, used, retracted, waitingTokens = st.capacity, st.used, st.retracted, st.waitingTokens
		running = st.running
		waiting += st.waiting
	}
	usage := 0.0
	if capacity > 0 {
		usage = float64(used) / float64(capacity)
	}
	return map[string]any{
		"timestamp":                     float64(time.Now().UnixNano()) / 1e9,
		"dp_rank":                       0,
		"num_running_reqs":              running,
		"num_waiting_reqs":              waiting,
		"num_waiting_uncached_tokens":   waitingTokens, // the whole prompts: the emulator matches the cache on admission
		"num_used_tokens":               used,
		"num_total_tokens":              used,
		"num_active_tokens":             used,
		"num_prealloc_ready_tokens":     0,
		"max_total_num_tokens":          capacity,
		"max_running_requests":          s.cfg.MaxRunningRequests,
		"token_usage":                   usage,
		"gen_throughput":                0.0,
		"cache_hit_rate":                0.0,
		"utilization":                   usage,
		"total_prefill_uncached_tokens": 0,
		"total_prefill_busy_us":         0,
		"decode_moments":                nil,
		"queues":                        map[string]any{"waiting": waiting, "grammar": 0, "paused": 0, "retracted": retracted, "prealloc_ready": 0},
	}
}
