package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// outcome is the result of one generation item.
type outcome struct {
	it        *genItem
	ids       []int32 // the whole planned output (stop token included when it stopped)
	fr        finishReason
	n         int // tokens produced (len(ids) unless aborted)
	cached    int
	stopText  string // text for a stop-string finish (cut at the string, or kept with no_stop_trim)
	recv      time.Time
	sentFirst bool
	sentN     int    // incremental streaming: ids already sent
	sentText  string // incremental streaming: text already sent

	waitingAbort bool   // aborted in the waiting queue
	schedAbort   string // scheduler-side 400 abort (logprob_start_len)
	httpErr      int    // 503 queue full / injected 500
	httpMsg      string

	decodeT0 time.Time // when decoding began (for weight_versions across a mid-request update)

	outLP lpList // logprobs of ids, computed once
	inLP  *lpList
}

const fault503Msg = "The request queue is full."
const fault500Msg = "Internal server error: out of memory even after retracting requests."

func (s *Server) drawFault() string {
	f := s.cfg.Faults
	if f.total() == 0 {
		return ""
	}
	s.faultMu.Lock()
	x := s.faultRng.Float64()
	s.faultMu.Unlock()
	for _, k := range []struct {
		name string
		rate float64
	}{{"503", f.HTTP503}, {"500", f.HTTP500}, {"reset", f.Reset}, {"stall", f.Stall}, {"truncate", f.Truncate}, {"context", f.ContextLength}} {
		if x < k.rate {
			return k.name
		}
		x -= k.rate
	}
	return ""
}

func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rec := recordOf(ctx)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if rec != nil {
		rec.RequestBytes = len(body)
		if json.Valid(body) {
			rec.Request = json.RawMessage(body)
		} else {
			rec.Request, _ = json.Marshal(string(body))
		}
	}
	req, perr := parseGenerate(body, s.tok, s.cfg.ContextLength)
	if perr != nil {
		stream := false
		if perr.kind == errValue {
			var top struct {
				Stream bool `json:"stream"`
			}
			_ = json.Unmarshal(body, &top)
			stream = top.Stream
		}
		switch {
		case perr.kind == errValidation:
			writeValidationError(w, perr.msg)
		case perr.kind == errContract:
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": perr.msg})
		case perr.kind == errInternal:
			s.log.Error("emulator: /generate: uncaught error (SGLang answers 500)", "err", perr.msg)
			writeInternalError(w)
		case stream:
			s.streamErrorOnly(w, streamErrorEvent(perr.msg))
		default:
			writeValueError(w, perr.msg)
		}
		return
	}
	if rec != nil {
		rec.RID = req.firstRID
	}
	fault := s.drawFault()
	if rec != nil {
		rec.Fault = fault
	}
	switch fault {
	case "reset":
		resetConn(w)
		return
	case "stall":
		t := time.NewTimer(s.cfg.Faults.StallFor)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.closeCh:
			t.Stop()
			writeHTTPException(w, http.StatusServiceUnavailable, "The server is shutting down.")
			return
		case <-t.C:
		}
	case "context":
		in := len(req.items[0].inputIDs)
		msg := fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", in, min(in, s.cfg.ContextLength))
		if req.stream {
			s.streamErrorOnly(w, streamErrorEvent(msg))
		} else {
			writeValueError(w, msg)
		}
		return
	case "503", "500":
		code, msg := http.StatusServiceUnavailable, fault503Msg
		if fault == "500" {
			code, msg = http.StatusInternalServerError, fault500Msg
		}
		if !req.stream {
			writeHTTPException(w, code, msg)
			return
		}
		for _, it := range req.items {
			it.abortMsg = ""
		}
		req.items = req.items[:1]
		o := &outcome{it: req.items[0], recv: time.Now(), httpErr: code, httpMsg: msg}
		o.fr = finishReason{kind: "abort", message: msg, statusCode: code}
		s.streamStart(w)
		s.writeEvent(w, req, o, 0, true)
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		return
	}
	if req.stream {
		s.serveStream(ctx, w, req, fault == "truncate")
		return
	}
	s.serveOnce(ctx, w, req, fault == "truncate")
}

// resetConn closes the connection with a TCP RST.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (s *Server) runAll(ctx context.Context, req *genRequest, emit func(o *outcome, n int, final bool)) []*outcome {
	outs := make([]*outcome, len(req.items))
	if len(req.items) == 1 {
		outs[0] = s.runItem(ctx, req.items[0], emit)
		return outs
	}
	// prefill in item order, so that item i+1 sees item i's prompt in the prefix cache (as a batch does)
	prev := (chan struct{})(nil)
	for _, it := range req.items {
		it.after = prev
		it.admitted = make(chan struct{})
		prev = it.admitted
	}
	var wg sync.WaitGroup
	for i, it := range req.items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = s.runItem(ctx, it, emit)
		}()
	}
	wg.Wait()
	return outs
}

func (s *Server) serveOnce(ctx context.Context, w http.ResponseWriter, req *genRequest, truncate bool) {
	outs := s.runAll(ctx, req, nil)
	if ctx.Err() != nil {
		return // the client went away; SGLang aborts the request
	}
	for _, o := range outs {
		switch {
		case o == nil:
			return
		case o.schedAbort != "":
			writeValueError(w, o.schedAbort)
			return
		case o.httpErr != 0:
			writeHTTPException(w, o.httpErr, o.httpMsg)
			return
		}
	}
	var b []byte
	if req.batch {
		b = append(b, '[')
		for i, o := range outs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendResponse(b, s.response(req, o, o.n, true))
		}
		b = append(b, ']')
	} else {
		b = appendResponse(make([]byte, 0, 1024), s.response(req, outs[0], outs[0].n, true))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if truncate {
		_, _ = w.Write(b[:len(b)/2])
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	_, _ = w.Write(b)
}

func (s *Server) streamStart(w http.ResponseWriter) {
	if lw, ok := w.(*logWriter); ok {
		lw.noBody = true
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush() // headers go out now, as with SGLang's StreamingResponse
}

func (s *Server) streamErrorOnly(w http.ResponseWriter, ev []byte) {
	s.streamStart(w)
	_, _ = w.Write([]byte("data: "))
	_, _ = w.Write(ev)
	_, _ = w.Write([]byte("\n\ndata: [DONE]\n\n"))
}

func (s *Server) writeEvent(w http.ResponseWriter, req *genRequest, o *outcome, n int, final bool) []byte {
	resp := s.response(req, o, n, final)
	if req.batch {
		idx := o.it.index
		resp.Index = &idx
	}
	if s.cfg.IncrementalStreaming {
		toDelta(resp, o, n)
	}
	buf := append(make([]byte, 0, 1024), "data: "...)
	buf = appendResponse(buf, resp)
	b := buf[len("data: "):]
	buf = append(buf, "\n\n"...)
	_, _ = w.Write(buf)
	_ = http.NewResponseController(w).Flush()
	return b
}

func (s *Server) serveStream(parent context.Context, w http.ResponseWriter, req *genRequest, truncate bool) {
	s.streamStart(w)
	ctx, cut := context.WithCancel(parent)
	defer cut()
	var mu sync.Mutex
	events := 0
	last := make([]json.RawMessage, len(req.items))
	emit := func(o *outcome, n int, final bool) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		last[o.it.index] = s.writeEvent(w, req, o, n, final)
		events++
		if truncate && events == 1 {
			cut() // the injected fault: the stream stops after its first event
		}
	}
	outs := s.runAll(ctx, req, emit)
	if truncate {
		panic(http.ErrAbortHandler)
	}
	if ctx.Err() != nil {
		return
	}
	for _, o := range outs {
		if o == nil {
			return
		}
		if o.schedAbort != "" || o.httpErr != 0 || o.waitingAbort {
			emit(o, o.n, true)
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if rec := recordOf(ctx); rec != nil {
		if req.batch {
			rec.Response, _ = json.Marshal(last)
		} else {
			rec.Response = last[0]
		}
	}
}

// runItem generates one item: pause, queue, prefill and decode with the latency model, abort at any point.
// It returns nil when the client went away. emit (streaming only) gets progress; the final emit for a normal or
// running-abort finish happens here, the others in serveStream.
func (s *Server) runItem(ctx context.Context, it *genItem, emit func(o *outcome, n int, final bool)) *outcome {
	o := &outcome{it: it, recv: time.Now()}
	j := s.register(it.rid)
	defer s.unregister(j)
	admitted := sync.OnceFunc(func() {
		if it.admitted != nil {
			close(it.admitted)
		}
	})
	defer admitted()
	waitingAbort := func() *outcome {
		o.waitingAbort = true
		o.fr = finishReason{kind: "abort", message: "Abort in waiting queue", waiting: true}
		return o
	}
	if !s.waitUnpaused(ctx, j) {
		if ctx.Err() != nil {
			return nil
		}
		return waitingAbort()
	}
	if it.after != nil {
		// a batch prefills in item order; wait here, before taking a running slot
		select {
		case <-it.after:
			if j.aborted() { // both were ready and select chose at random: an abort while queued stays a waiting abort
				return waitingAbort()
			}
		case <-j.abortCh:
			return waitingAbort()
		case <-ctx.Done():
			return nil
		}
	}
	if s.sem != nil {
		if q := s.cfg.MaxQueuedRequests; q > 0 && len(s.sem) == cap(s.sem) && s.queued.Load() >= int64(q) {
			o.httpErr, o.httpMsg = http.StatusServiceUnavailable, fault503Msg
			o.fr = finishReason{kind: "abort", message: fault503Msg, statusCode: http.StatusServiceUnavailable}
			return o
		}
		s.queued.Add(1)
		select {
		case s.sem <- struct{}{}:
			s.queued.Add(-1)
			if j.aborted() { // as above: the slot came free in the same instant as the abort
				<-s.sem
				return waitingAbort()
			}
		case <-j.abortCh:
			s.queued.Add(-1)
			return waitingAbort()
		case <-ctx.Done():
			s.queued.Add(-1)
			return nil
		}
		defer func() { <-s.sem }()
	}
	j.running.Store(true)
	if it.abortMsg != "" {
		o.schedAbort = it.abortMsg
		o.ids = []int32{0}
		o.n = 1
		o.fr = finishReason{kind: "abort", message: it.abortMsg, statusCode: http.StatusBadRequest, errType: "BadRequestError"}
		return o
	}
	// KV model: the prompt's tokens are taken before prefill; kvt is this request's hold on the pool
	var kvt kvTicket
	holding := false
	if s.kv != nil {
		t, ok := s.kv.admit(ctx, j.abortCh, len(it.inputIDs), reserveNewTokens(it), false)
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return waitingAbort()
		}
		kvt, holding = t, true
		defer func() {
			if holding {
				s.kv.release(kvt)
			}
		}()
	}
	ns := it.extraKey
	o.cached = min(s.cache.match(ns, it.inputIDs), maxPrefixLen(it))
	s.plan(o)
	aborted := func() *outcome {
		o.fr = finishReason{kind: "abort", message: "Aborted"}
		o.ids = o.ids[:o.n]
		s.cacheFinished(o)
		if emit != nil {
			emit(o, o.n, true)
		}
		return o
	}
	lat := s.cfg.Latency
	// prefill
	if s.kv != nil {
		s.kv.prefill(lat.PerPromptToken * time.Duration(len(it.inputIDs)-o.cached))
	}
	if d := lat.Fixed + lat.PerPromptToken*time.Duration(len(it.inputIDs)-o.cached); d > 0 {
		switch s.sleep(ctx, j, d) {
		case sleepGone:
			return nil
		case sleepAborted:
			return aborted()
		}
	}
	// after prefill the prompt's KV is in the cache (SGLang's cache_unfinished_req)
	s.cache.insert(ns, it.inputIDs)
	admitted()
	total := len(o.ids)
	step := max(it.params.streamInterval, 1)
	if lat.PerOutputToken > 0 {
		step = max(step, int((5*time.Millisecond+lat.PerOutputToken-1)/lat.PerOutputToken))
	} else if emit != nil {
		step = max(step, (total+7)/8)
	} else {
		step = total
	}
	t0 := time.Now()
	var stall0 time.Duration // KV model: prefill time that stalled this request's decode starts counting here
	if s.kv != nil {
		stall0 = s.kv.stalled()
	}
	o.decodeT0 = t0
	if emit == nil && lat.PerOutputToken > 0 && total > 0 && s.kv == nil {
		// not streaming: one timer for the whole decode (10,000 concurrent requests must not mean a million
		// wakeups a second); an abort keeps the ids "generated" so far
		if !s.waitUnpaused(ctx, j) {
			if ctx.Err() != nil {
				return nil
			}
			return aborted()
		}
		switch s.sleep(ctx, j, lat.PerOutputToken*time.Duration(total)) {
		case sleepGone:
			return nil
		case sleepAborted:
			o.n = min(total, int(time.Since(t0)/lat.PerOutputToken))
			return aborted()
		}
		o.n = total
		if !s.waitUnpaused(ctx, j) { // paused meanwhile: hold the result until /continue_generation
			if ctx.Err() != nil {
				return nil
			}
			return aborted()
		}
	}
	for o.n < total {
		if !s.waitUnpaused(ctx, j) {
			if ctx.Err() != nil {
				return nil
			}
			return aborted()
		}
		next := min(total, o.n+step)
		if s.kv != nil && !s.kv.grow(&kvt, next-o.n) {
			// out of KV room: retracted, as SGLang's retract_decode; back in line, then prefill prompt and output
			// so far again and decode on (the decode clock restarts after the recompute)
			s.kv.retract(kvt)
			holding = false
			t, ok := s.kv.admit(ctx, j.abortCh, len(it.inputIDs)+o.n, reserveNewTokens(it)-o.n, true)
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return aborted()
			}
			kvt, holding = t, true
			s.kv.prefill(lat.PerPromptToken * time.Duration(len(it.inputIDs)+o.n))
			if d := lat.Fixed + lat.PerPromptToken*time.Duration(len(it.inputIDs)+o.n); d > 0 {
				switch s.sleep(ctx, j, d) {
				case sleepGone:
					return nil
				case sleepAborted:
					return aborted()
				}
			}
			t0 = time.Now().Add(-lat.PerOutputToken * time.Duration(o.n))
			stall0 = s.kv.stalled()
			continue
		}
		if lat.PerOutputToken > 0 {
			due := t0.Add(lat.PerOutputToken * time.Duration(next))
			if s.kv != nil {
				due = due.Add(s.kv.stalled() - stall0) // prefills since the decode started held it up
			}
			if d := time.Until(due); d > 0 {
				switch s.sleep(ctx, j, d) {
				case sleepGone:
					return nil
				case sleepAborted:
					return aborted()
				}
			}
		} else {
			select {
			case <-j.abortCh:
				return aborted()
			default:
			}
		}
		o.n = next
		if emit != nil && o.n < total {
			emit(o, o.n, false)
		}
	}
	s.cacheFinished(o)
	if emit != nil {
		emit(o, o.n, true)
	}
	return o
}

// reserveNewTokens is the output a request reserves at admission: max_new_tokens (SGLang clips it at 4096; a
// null max_new_tokens reserves the clip).
func reserveNewTokens(it *genItem) int {
	if it.params.maxNewTokens < 0 {
		return kvClipNewToks
	}
	return it.params.maxNewTokens
}

// cacheFinished inserts prompt + output into the prefix cache; the last output token never went through the
// model, so its KV does not exist.
func (s *Server) cacheFinished(o *outcome) {
	seq := make([]int32, 0, len(o.it.inputIDs)+o.n)
	seq = append(seq, o.it.inputIDs...)
	if o.n > 0 {
		seq = append(seq, o.ids[:o.n-1]...)
	}
	s.cache.insert(o.it.extraKey, seq)
}

const (
	sleepDone = iota
	sleepAborted
	sleepGone
)

func (s *Server) sleep(ctx context.Context, j *job, d time.Duration) int {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return sleepDone
	case <-j.abortCh:
		return sleepAborted
	case <-ctx.Done():
		return sleepGone
	}
}

// requestRand is the per-request randomness, standing in for the sampler (doc.go, Determinism). Greedy
// decoding depends on the prompt alone; a sampling_seed replaces the randomness of the sample; otherwise the
// client's rid (unless Config.IgnoreRID) and the sample index tell the samples of one prompt apart, and a request
// re-sent with the same rid gets the same reply.
func (s *Server) requestRand(it *genItem) *rand.Rand {
	h := uint64(fnvOffset64)
	for _, id := range it.inputIDs {
		v := uint32(id)
		h ^= uint64(v)
		h *= fnvPrime64
	}
	p := it.params
	switch {
	case p.greedy:
		// the argmax: every sample of a prompt is the same
	case p.hasSeed:
		h = mixIn(h^0x5eed, uint64(p.samplingSeed))
	default:
		if it.clientRID != "" && !s.cfg.IgnoreRID {
			h = mixIn(h^0x1d, hashString(it.clientRID))
		}
		h ^= uint64(it.sample) * 0x9e3779b97f4a7c15
	}
	return rand.New(rand.NewPCG(s.cfg.Seed, h))
}

// mixIn folds v into the hash h (splitmix64's finaliser over their sum), so that nearby values spread apart.
func mixIn(h, v uint64) uint64 {
	z := h + v*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// plan decides the reply and how it finishes: policy text, real tokenizer ids (maybe a non-canonical split),
// the stop token, then the request's stop rules and length limit.
func (s *Server) plan(o *outcome) {
	it := o.it
	rng := s.requestRand(it)
	conv := parseConversation(s.tc.decodePrompt(it.inputIDs), s.tc.tools)
	var text string
	if s.cfg.Policy == PolicyScripted {
		text = s.opts.script.reply(conv)
	} else {
		text = s.agentic(conv, rng)
	}
	ids := slices.Clone(s.tc.encode(text))
	if s.cfg.NonCanonicalRate > 0 && rng.Float64() < s.cfg.NonCanonicalRate {
		ids = s.nonCanonical(ids, rng)
	}
	stop := s.cfg.StopIDs[0]
	p := it.params
	effMax := 1 << 30
	if p.maxNewTokens >= 0 {
		effMax = p.maxNewTokens
	}
	effMax = min(effMax, s.cfg.ContextLength-len(it.inputIDs)-1)
	if p.ignoreEOS {
		// no token-based stop: keep "sampling" (repeat the reply) up to the limit
		body := ids
		if len(body) == 0 {
			body = []int32{stop}
		}
		out := make([]int32, 0, min(effMax, 4096))
		for len(out) < min(effMax, 1<<16) {
			out = append(out, body[len(out)%len(body)])
		}
		o.ids = out
		o.fr = finishReason{kind: "length", length: effMax}
		if len(o.ids) < effMax {
			o.fr.length = len(o.ids)
		}
		return
	}
	ids = append(ids, stop)
	o.fr = finishReason{kind: "stop", matchedID: stop}
	// request stop_token_ids on top of the model's EOS ids
	for i, id := range ids[:len(ids)-1] {
		if slices.Contains(p.stopTokenIDs, id) || slices.Contains(s.cfg.StopIDs, id) {
			ids = ids[:i+1]
			o.fr = finishReason{kind: "stop", matchedID: id}
			break
		}
	}
	// stop strings: output ends at the first token whose decoded prefix contains one
	if len(p.stop) > 0 {
		for i := 1; i <= len(ids); i++ {
			t := s.tok.Decode(ids[:i], p.skipSpecialTokens)
			hit, at := "", -1
			for _, st := range p.stop {
				if st == "" {
					continue
				}
				if k := strings.Index(t, st); k >= 0 && (at < 0 || k < at) {
					hit, at = st, k
				}
			}
			if at >= 0 {
				ids = ids[:i]
				o.fr = finishReason{kind: "stop", matchedStr: hit, matchedIsS: true}
				if p.noStopTrim {
					o.stopText = t[:at+len(hit)]
				} else {
					o.stopText = t[:at]
				}
				break
			}
		}
	}
	// the length check runs before the EOS check
	if len(ids) >= effMax {
		ids = ids[:effMax]
		o.fr = finishReason{kind: "length", length: effMax}
	}
	o.ids = ids // o.n counts produced tokens: runItem counts up to len(o.ids)
}

// nonCanonical splits one plain-text token into the ids of two pieces of its text: the decoded text is
// unchanged, but encoding it again gives the canonical ids.
func (s *Server) nonCanonical(ids []int32, rng *rand.Rand) []int32 {
	if len(ids) == 0 {
		return ids
	}
	want := s.tok.Decode(ids, false)
	start := rng.IntN(len(ids))
	for k := 0; k < min(len(ids), 64); k++ {
		p := (start + k) % len(ids)
		t := s.tok.Decode(ids[p:p+1], false)
		if len(t) < 2 || !plainASCII(t) || s.tok.Decode(ids[p:p+1], true) == "" {
			continue
		}
		cut := 1 + rng.IntN(len(t)-1)
		a := s.tok.Encode(t[:cut], false)
		b := s.tok.Encode(t[cut:], false)
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		out := make([]int32, 0, len(ids)+len(a)+len(b))
		out = append(out, ids[:p]...)
		out = append(out, a...)
		out = append(out, b...)
		out = append(out, ids[p+1:]...)
		if s.tok.Decode(out, false) == want && !slices.Equal(s.tok.Encode(want, false), out) {
			return out
		}
	}
	return ids
}

func plainASCII(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < 0x20 || t[i] > 0x7e {
			return false
		}
	}
	return true
}

// maxPrefixLen is how much of the prompt SGLang lets the radix match reuse (Req._compute_max_prefix_len in
// python/sglang/srt/managers/schedule_batch.py): all but the last token, and with logprobs asked from
// logprob_start_len >= 0, no further than that position, since the positions it scores must be prefilled.
// With logprob_start_len -1 the scheduler scores no prompt token and the match is not cut.
func maxPrefixLen(it *genItem) int {
	n := len(it.inputIDs) - 1
	if it.returnLogprob && it.logprobStartLen >= 0 {
		n = min(n, it.logprobStartLen)
	}
	return max(n, 0)
}

// response builds the JSON object for an outcome with n tokens produced; final adds finish_reason and
// e2e_latency.
func (s *Server) response(req *genRequest, o *outcome, n int, final bool) *genResponse {
	it := o.it
	if o.waitingAbort {
		now := time.Now()
		return &genResponse{Text: "", OutputIDs: []int32{}, MetaInfo: &waitingAbortMeta{
			ID: it.rid, FinishReason: &o.fr, WeightVersion: s.WeightVersion(),
			E2ELatency: now.Sub(o.recv).Seconds(), CompletionTokens: 0, ResponseSentToClientTS: unixSeconds(now),
		}}
	}
	ids := o.ids[:n]
	promptTokens := len(it.inputIDs)
	cached := o.cached
	if o.schedAbort != "" || o.httpErr != 0 {
		promptTokens = 1 // set_finish_with_abort replaces the prompt by [0]
		cached = 0
	}
	m := &metaInfo{
		ID:               it.rid,
		PromptTokens:     promptTokens,
		WeightVersion:    s.WeightVersion(),
		CompletionTokens: n,
		CachedTokens:     cached,
	}
	if cached > 0 {
		m.CachedTokensDetails = &cacheDetails{Device: cached}
	}
	if final {
		m.FinishReason = &o.fr
		m.WeightVersions = s.outputSpans(o.decodeT0, s.cfg.Latency.PerOutputToken, n)
		e := time.Since(o.recv).Seconds()
		m.E2ELatency = &e
	}
	if !o.sentFirst {
		o.sentFirst = true
		ts := unixSeconds(time.Now())
		m.ResponseSentToClientTS = &ts
	}
	if it.returnLogprob && o.schedAbort == "" && o.httpErr == 0 {
		s.addLogprobs(req, o, m, n)
	}
	r := &genResponse{Text: s.text(o, n, final), OutputIDs: nonNil(ids), MetaInfo: m}
	if req.returnPromptTokenIDs {
		r.PromptTokenIDs = it.inputIDs
	}
	return r
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// text decodes the produced ids: the stop token trimmed from a finished stop (unless no_stop_trim), partial
// UTF-8 held back while streaming.
func (s *Server) text(o *outcome, n int, final bool) string {
	p := o.it.params
	if final && o.fr.kind == "stop" && o.fr.matchedIsS {
		return o.stopText
	}
	ids := o.ids[:n]
	if final && o.fr.kind == "stop" && !p.noStopTrim && n > 0 {
		ids = ids[:n-1]
	}
	t := s.tc.decode(ids, p.skipSpecialTokens)
	if !final {
		t = strings.TrimRight(t, "\uFFFD")
	}
	return t
}

func (s *Server) entry(req *genRequest, lp float64, null bool, id int32) lpEntry {
	e := lpEntry{lp: lp, null: null, id: id}
	if req.returnTextInLogprobs {
		t := s.tok.Decode([]int32{id}, false)
		e.text = &t
	}
	return e
}

// addLogprobs fills the logprob fields: output entries from Logprob over prompt+output, input entries from
// logprob_start_len with the first null, top-k alternatives from hashed ids.
func (s *Server) addLogprobs(req *genRequest, o *outcome, m *metaInfo, n int) {
	it := o.it
	in := it.inputIDs
	if o.outLP == nil {
		o.outLP = make(lpList, len(o.ids))
		for i, id := range o.ids {
			o.outLP[i] = s.entry(req, logprobAt(in, o.ids, len(in)+i), false, id)
		}
		var il lpList = lpList{}
		if k := it.logprobStartLen; k >= 0 {
			il = make(lpList, 0, len(in)-k)
			for p := k; p < len(in); p++ {
				il = append(il, s.entry(req, logprobAt(in, nil, p), p == k, in[p]))
			}
		}
		o.inLP = &il
	}
	out := o.outLP[:n]
	m.InputTokenLogprobs = o.inLP
	m.OutputTokenLogprobs = &out
	m.OutputTokenLogprobsLen = &n
	if k := it.topLogprobsNum; k > 0 {
		m.InputTopLogprobs, m.OutputTopLogprobs = positionLists(in, o.ids, it.logprobStartLen, n, func(p int) lpList {
			return s.topK(req, in, o.ids, p, k)
		})
	}
	if ids := it.tokenIDsLogprob; ids != nil {
		m.InputTokenIDsLogprobs, m.OutputTokenIDsLogprobs = positionLists(in, o.ids, it.logprobStartLen, n, func(p int) lpList {
			return s.idsLogprobs(req, in, o.ids, p, ids)
		})
	}
}

// positionLists lists at(p) for the prompt positions from start (the first one null, as SGLang's; none when start is
// -1) and for the first n output positions (p counts in prompt ++ output).
func positionLists(in, out []int32, start, n int, at func(p int) lpList) (input, output *topLists) {
	il := topLists{}
	if start >= 0 && start < len(in) {
		il = append(il, nil)
		for p := start + 1; p < len(in); p++ {
			il = append(il, at(p))
		}
	}
	ol := make(topLists, n)
	for i := range ol {
		ol[i] = at(len(in) + i)
	}
	return &il, &ol
}

// topK lists k candidates at position p (of a ++ b), best first: the actual token and k-1 hashed alternatives,
// each scored with Logprob.
func (s *Server) topK(req *genRequest, a, b []int32, p, k int) lpList {
	w, nw := window(a, b, p)
	prefix := w[:nw]
	actual := at(a, b, p)
	cands := []int32{actual}
	h := uint64(actual)*fnvPrime64 + uint64(p)
	for len(cands) < k {
		h = h*6364136223846793005 + 1442695040888963407
		id := int32((h >> 33) % uint64(s.cfg.VocabSize))
		if !slices.Contains(cands, id) {
			cands = append(cands, id)
		}
	}
	l := make(lpList, len(cands))
	for i, id := range cands {
		l[i] = s.entry(req, Logprob(prefix, id), false, id)
	}
	slices.SortStableFunc(l, func(x, y lpEntry) int {
		switch {
		case x.lp > y.lp:
			return -1
		case x.lp < y.lp:
			return 1
		}
		return 0
	})
	return l
}

// idsLogprobs scores the ids at position p (of a ++ b), in their order (token_ids_logprob).
func (s *Server) idsLogprobs(req *genRequest, a, b []int32, p int, ids []int32) lpList {
	w, nw := window(a, b, p)
	l := make(lpList, len(ids))
	for i, id := range ids {
		l[i] = s.entry(req, Logprob(w[:nw], id), false, id)
	}
	return l
}

// window returns the LogprobWindow ids before position p of a ++ b (fewer at the start): what Logprob scores with.
func window(a, b []int32, p int) (w [LogprobWindow]int32, n int) {
	for q := max(0, p-LogprobWindow); q < p; q++ {
		w[n] = at(a, b, q)
		n++
	}
	return w, n
}

// toDelta turns a cumulative chunk into an incremental one (--incremental-streaming-output): text, output_ids
// and the output logprob lists hold what is new since the last chunk; output_token_logprobs_length,
// completion_tokens and the input lists stay cumulative.
func toDelta(r *genResponse, o *outcome, n int) {
	m, ok := r.MetaInfo.(*metaInfo)
	if !ok {
		return
	}
	from := min(o.sentN, n)
	r.OutputIDs = r.OutputIDs[from:]
	text := r.Text
	if strings.HasPrefix(text, o.sentText) {
		r.Text = text[len(o.sentText):]
	} else {
		r.Text = text[min(len(o.sentText), len(text)):]
	}
	if m.OutputTokenLogprobs != nil {
		d := (*m.OutputTokenLogprobs)[from:]
		m.OutputTokenLogprobs = &d
	}
	for _, p := range []**topLists{&m.OutputTopLogprobs, &m.OutputTokenIDsLogprobs} {
		if *p != nil {
			d := (**p)[from:]
			*p = &d
		}
	}
	o.sentN, o.sentText = n, text
}
