package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// conn is one consumer connection: the handler goroutine reads, one writer goroutine writes everything
// (gorilla/websocket allows one concurrent writer; WriteControl is the exception).
type conn struct {
	s        *Server
	ws       *websocket.Conn
	remote   string
	consumer string
	session  string // welcome.session_id
	release  func() // ends the connection's store-wide claim of its consumer (ConsumerClaimer), or nil

	ctrl      chan []byte // answers, errors and events, in order; bounded (Config.SendQueue)
	credits   atomic.Int64
	creditSig chan struct{}
	pumpSig   chan struct{} // credits came (for the pump of a Store's outbox)

	kickOnce      sync.Once
	supersedeOnce sync.Once
	kicked        chan struct{}
	kickCode      int
	kickText      string
	dead          chan struct{} // closed when the writer has exited
	controlWG     sync.WaitGroup

	// On a Store: the consumer's outbox and what this connection sent from it and has not seen acked.
	outbox Outbox
	sentOB delivered
	// subMu guards subs: the requests whose submit this connection is answering (closed once answered).
	subMu sync.Mutex
	subs  map[string]chan struct{}
}

type frameKind int

const (
	frameText frameKind = iota
	frameBinary
	frameTooLarge
)

func newConn(s *Server, ws *websocket.Conn, remote string) *conn {
	return &conn{
		s:         s,
		ws:        ws,
		remote:    remote,
		ctrl:      make(chan []byte, s.cfg.SendQueue),
		creditSig: make(chan struct{}, 1),
		pumpSig:   make(chan struct{}, 1),
		kicked:    make(chan struct{}),
		dead:      make(chan struct{}),
	}
}

// kick asks the writer to send a close frame with code and text and stop.
func (c *conn) kick(code int, text string) {
	c.kickOnce.Do(func() {
		c.kickCode, c.kickText = code, text
		close(c.kicked)
	})
}

// readFrame reads one message, keeping at most MaxMessageBytes of it in memory.
func (c *conn) readFrame() ([]byte, frameKind, error) {
	mt, r, err := c.ws.NextReader()
	if err != nil {
		return nil, 0, err
	}
	max := c.s.cfg.MaxMessageBytes
	buf, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, 0, err
	}
	if int64(len(buf)) > max {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, 0, err
		}
		return buf[:min(len(buf), 512)], frameTooLarge, nil
	}
	if mt == websocket.BinaryMessage {
		return buf, frameBinary, nil
	}
	return buf, frameText, nil
}

// fatal answers the hello phase with an error frame and a close frame; no writer runs yet.
func (c *conn) fatal(code, msg string, closeCode int) {
	c.s.errorFrames.Add(1)
	b, _ := json.Marshal(ErrorFrame{Type: TypeError, Code: code, Message: msg, Ref: &ErrorRef{Type: TypeHello}})
	deadline := time.Now().Add(c.s.cfg.WriteTimeout)
	c.ws.SetWriteDeadline(deadline)
	if c.ws.WriteMessage(websocket.TextMessage, b) == nil {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(closeCode, code), deadline)
	}
}

func (c *conn) serve(headerAuth bool) {
	defer c.ws.Close()
	s := c.s
	c.ws.SetReadDeadline(time.Now().Add(s.cfg.HelloTimeout))
	data, kind, err := c.readFrame()
	if err != nil {
		s.log.Debug("stream: no hello", "remote", c.remote, "err", err)
		return
	}
	if kind != frameText {
		c.fatal(CodeHelloRequired, "the first frame must be a hello text frame", websocket.CloseProtocolError)
		return
	}
	var h Hello
	if err := json.Unmarshal(data, &h); err != nil || h.Type != TypeHello {
		c.fatal(CodeHelloRequired, `the first frame must be {"type":"hello",...}`, websocket.CloseProtocolError)
		return
	}
	if s.cfg.Token != "" && !headerAuth && !tokenEqual(h.Token, s.cfg.Token) {
		s.log.Warn("stream: refused connection: bad token", "remote", c.remote, "consumer", h.Consumer)
		c.fatal(CodeUnauthorized, "missing or wrong token (send Authorization: Bearer <token> or hello.token)", websocket.ClosePolicyViolation)
		return
	}
	if h.Protocol != ProtocolVersion {
		c.fatal(CodeVersion, fmt.Sprintf("protocol %d is not supported; this server speaks %d", h.Protocol, ProtocolVersion), websocket.CloseProtocolError)
		return
	}
	if h.Consumer == "" || len(h.Consumer) > 256 {
		c.fatal(CodeInvalid, "consumer_id is required (1 to 256 bytes)", websocket.CloseProtocolError)
		return
	}
	c.consumer = h.Consumer
	credits := int64(h.Credits)
	if credits <= 0 {
		credits = int64(s.cfg.DefaultCredits)
	}
	c.credits.Store(min(credits, int64(s.cfg.MaxCredits)))
	resume := h.Resume == nil || *h.Resume
	var notify <-chan struct{}
	if s.spool != nil {
		// Watch before attaching, so nothing spooled between now and the first read is missed.
		var unwatch func()
		notify, unwatch = s.spool.watch(c.consumer)
		defer unwatch()
	}
	c.session = newSessionID()
	active, dropped, err := s.attach(c, resume)
	if errors.Is(err, ErrClosed) {
		c.fatal(CodeShuttingDown, err.Error(), websocket.CloseGoingAway)
		return
	}
	defer s.detach(c)
	if err != nil {
		c.fatal(CodeSpool, err.Error(), websocket.CloseInternalServerErr)
		return
	}
	log := s.log.With("consumer", c.consumer, "remote", c.remote)
	var w Welcome
	if s.store != nil {
		if w, err = c.openStore(); err != nil {
			c.fatal(CodeSpool, err.Error(), websocket.CloseInternalServerErr)
			return
		}
		// What this connection sent and did not see acked is offered again at once (to the next connection).
		defer func() {
			for _, m := range c.sentOB.all() {
				c.outbox.Release(m)
			}
			c.outbox.Close()
		}()
		stop, err := s.store.Events(c.consumer, c.forwardEvent)
		if err != nil {
			c.fatal(CodeSpool, err.Error(), websocket.CloseInternalServerErr)
			return
		}
		defer stop()
		w.ActiveRequests = active
	} else {
		// Read after the active list: a request that ends in between is in one list or the other.
		done, err := s.spool.doneRequests(c.consumer)
		if err != nil {
			c.fatal(CodeShuttingDown, err.Error(), websocket.CloseInternalServerErr)
			return
		}
		w = Welcome{Unacked: s.spool.unacked(c.consumer), ActiveRequests: active, DoneRequests: done, SpoolID: s.spool.id}
	}
	w.Type, w.Protocol, w.Consumer, w.Session = TypeWelcome, ProtocolVersion, c.consumer, c.session
	w.Dropped, w.MaxMessageBytes = dropped, s.cfg.MaxMessageBytes
	b, _ := json.Marshal(w)
	c.ws.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		return
	}
	log.Info("stream: consumer connected", "unacked", w.Unacked, "active_requests", len(active))

	go c.writeLoop(notify)
	// The writer sends the pings; a write in progress (up to WriteTimeout) delays the next one.
	readTimeout := 2*s.cfg.PingInterval + s.cfg.WriteTimeout
	c.ws.SetPongHandler(func(string) error {
		c.ws.SetReadDeadline(time.Now().Add(readTimeout))
		return nil
	})
	for {
		c.ws.SetReadDeadline(time.Now().Add(readTimeout))
		data, kind, err := c.readFrame()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				log.Info("stream: consumer connection lost", "err", err)
			}
			break
		}
		switch kind {
		case frameBinary:
			c.sendError(CodeBinary, "binary frames are not part of protocol 1; send JSON text frames", nil)
		case frameTooLarge:
			c.sendError(CodeTooLarge, fmt.Sprintf("frame larger than max_message_bytes (%d)", s.cfg.MaxMessageBytes), sniffRef(data))
		default:
			c.handle(data)
		}
	}
	c.kick(websocket.CloseNormalClosure, "")
	<-c.dead
	c.controlWG.Wait()
	log.Info("stream: consumer disconnected")
}

// sniffRef finds the type and id of a frame that could not be parsed whole (too large).
func sniffRef(prefix []byte) *ErrorRef {
	ref := &ErrorRef{}
	for _, k := range []struct {
		key string
		dst *string
	}{{`"type":"`, &ref.Type}, {`"request_id":"`, &ref.ID}, {`"id":"`, &ref.ID}} {
		if *k.dst != "" {
			continue
		}
		if i := bytes.Index(prefix, []byte(k.key)); i >= 0 {
			rest := prefix[i+len(k.key):]
			if j := bytes.IndexByte(rest, '"'); j >= 0 && j <= 256 {
				*k.dst = string(rest[:j])
			}
		}
	}
	if ref.Type == "" && ref.ID == "" {
		return nil
	}
	return ref
}

// queue hands a frame to the writer, waiting while the queue is full; it drops the frame once the writer is gone.
func (c *conn) queue(b []byte) {
	select {
	case c.ctrl <- b:
	case <-c.dead:
	}
}

// tryQueue hands a frame to the writer if there is room.
func (c *conn) tryQueue(b []byte) bool {
	select {
	case <-c.dead:
		return false
	default:
	}
	select {
	case c.ctrl <- b:
		return true
	default:
		return false
	}
}

func (c *conn) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.log.Error("stream: encode frame", "err", err)
		return
	}
	c.queue(b)
}

func (c *conn) sendError(code, msg string, ref *ErrorRef) {
	c.s.errorFrames.Add(1)
	c.send(ErrorFrame{Type: TypeError, Code: code, Message: msg, Ref: ref})
}

// handle dispatches one text frame; every problem is answered with an error frame naming the message.
func (c *conn) handle(data []byte) {
	var env struct {
		Type      *string         `json:"type"`
		ID        json.RawMessage `json:"id"`
		RequestID json.RawMessage `json:"request_id"`
	}
	if err := json.Unmarshal(data, &env); err != nil || env.Type == nil {
		msg := `a frame must be a JSON object with a string "type"`
		if err != nil {
			msg += ": " + err.Error()
		}
		c.sendError(CodeMalformed, msg, sniffRef(data[:min(len(data), 512)]))
		return
	}
	typ := *env.Type
	ref := &ErrorRef{Type: typ}
	var id string
	if json.Unmarshal(env.RequestID, &id) == nil && id != "" {
		ref.ID = id
	} else if json.Unmarshal(env.ID, &id) == nil {
		ref.ID = id
	}
	// No frame may take the server down: a panic while handling one (a bug here or in the runner's Validate)
	// is logged with its stack and answered with an error frame naming the message.
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("stream: panic while handling a frame", "consumer", c.consumer, "type", typ, "id", ref.ID,
				"panic", p, "stack", string(debug.Stack()))
			c.sendError(CodeInternal, fmt.Sprintf("internal error while handling %s %q: %v", typ, ref.ID, p), ref)
		}
	}()
	decode := func(v any) bool {
		if err := json.Unmarshal(data, v); err != nil {
			c.sendError(CodeInvalid, fmt.Sprintf("%s: %v", typ, err), ref)
			return false
		}
		return true
	}
	s := c.s
	switch typ {
	case TypeHello:
		c.sendError(CodeInvalid, "hello was already received on this connection", ref)
	case TypeSubmit:
		var m Submit
		if !decode(&m) {
			return
		}
		if s.store != nil {
			// The store's nodes may finish samples before the answer is queued: the pump holds them until then.
			defer c.submitting(m.RequestID)()
		}
		answer, start := s.submit(c.consumer, &m)
		c.send(answer)
		if start != nil {
			start()
		}
	case TypeAck:
		var m Ack
		if !decode(&m) {
			return
		}
		if len(m.Seqs) == 0 && len(m.TrajectoryIDs) == 0 {
			c.sendError(CodeInvalid, "ack names no seqs and no trajectory_ids", ref)
			return
		}
		var n int
		var err error
		if s.store != nil {
			n, err = c.ackStored(m.Seqs, m.TrajectoryIDs)
		} else {
			n, err = s.spool.ack(c.consumer, m.Seqs, m.TrajectoryIDs)
		}
		if err != nil {
			c.sendError(CodeShuttingDown, err.Error(), ref)
			return
		}
		s.acked.Add(uint64(n))
	case TypeCredit:
		var m Credit
		if !decode(&m) {
			return
		}
		if m.Credits <= 0 {
			c.sendError(CodeInvalid, fmt.Sprintf("credits must be >= 1, got %d", m.Credits), ref)
			return
		}
		for {
			cur := c.credits.Load()
			if c.credits.CompareAndSwap(cur, min(cur+int64(m.Credits), int64(s.cfg.MaxCredits))) {
				break
			}
		}
		for _, sig := range []chan struct{}{c.creditSig, c.pumpSig} {
			select {
			case sig <- struct{}{}:
			default:
			}
		}
	case TypeCancel:
		var m Cancel
		if !decode(&m) {
			return
		}
		if !s.cancelRequest(c.consumer, m.RequestID) {
			c.sendError(CodeUnknownReq, fmt.Sprintf("no running request %q for this consumer", m.RequestID), ref)
		}
	case TypePause, TypeResume, TypeUpdateWeights:
		var m Control
		if !decode(&m) {
			return
		}
		switch {
		case typ == TypePause && m.Mode != PauseAbort && m.Mode != PauseRetract && m.Mode != PauseInPlace:
			c.sendError(CodeInvalid, fmt.Sprintf("pause mode must be %q, %q or %q, got %q", PauseAbort, PauseRetract, PauseInPlace, m.Mode), ref)
			return
		case typ == TypeUpdateWeights && m.ModelPath == "":
			c.sendError(CodeInvalid, "update_weights needs model_path", ref)
			return
		}
		c.controlWG.Add(1)
		go func() {
			defer c.controlWG.Done()
			// Off the frame's goroutine, so handle's recovery does not cover it: a panicking runner must not
			// take the server down either.
			defer func() {
				if p := recover(); p != nil {
					s.log.Error("stream: panic in a control operation", "consumer", c.consumer, "type", typ, "id", ref.ID,
						"panic", p, "stack", string(debug.Stack()))
					c.sendError(CodeInternal, fmt.Sprintf("internal error in %s %q: %v", typ, ref.ID, p), ref)
				}
			}()
			if err := s.control(&m); err != nil {
				c.sendError(CodeRunner, fmt.Sprintf("%s: %v", typ, err), ref)
				return
			}
			c.send(ControlOK{Type: TypeControlOK, ID: m.ID, Op: typ})
		}()
	case TypePing:
		var m struct {
			ID string `json:"id"`
		}
		if !decode(&m) {
			return
		}
		c.send(struct {
			Type string `json:"type"`
			ID   string `json:"id,omitempty"`
		}{TypePong, m.ID})
	default:
		c.sendError(CodeUnknownType, fmt.Sprintf("unknown message type %q", typ), ref)
	}
}

// writeLoop is the connection's only writer: control frames first, then spooled messages while credits last.
func (c *conn) writeLoop(notify <-chan struct{}) {
	defer close(c.dead)
	s := c.s
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	write := func(b []byte) bool {
		c.ws.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
			s.log.Debug("stream: write failed", "consumer", c.consumer, "err", err)
			c.ws.NetConn().Close() // unblock the reader
			return false
		}
		return true
	}
	// writeParts writes one message from two slices without joining them.
	writeParts := func(head, tail []byte) bool {
		c.ws.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		w, err := c.ws.NextWriter(websocket.TextMessage)
		if err == nil {
			if _, err = w.Write(head); err == nil {
				if _, err = w.Write(tail); err == nil {
					err = w.Close()
				}
			}
		}
		if err != nil {
			s.log.Debug("stream: write failed", "consumer", c.consumer, "err", err)
			c.ws.NetConn().Close()
			return false
		}
		return true
	}
	var cursor uint64
	var stored <-chan StoredMessage
	if c.outbox != nil {
		stored = c.pump()
	}
	// sendSpooled sends the next spooled messages within the credits; it reports whether it sent any.
	sendSpooled := func() (sent, ok bool) {
		if c.outbox != nil {
			return false, true // the pump hands them over
		}
		credits := c.credits.Load()
		if credits <= 0 {
			return false, true
		}
		recs, err := s.spool.next(c.consumer, cursor, int(min(credits, 64)), 8<<20)
		if err != nil {
			s.log.Error("stream: spool read failed", "consumer", c.consumer, "err", err)
			c.kick(websocket.CloseInternalServerErr, "spool read failed")
			return false, true
		}
		for _, r := range recs {
			if !writeParts(r.head, r.tail) {
				return false, false
			}
			cursor = r.seq
			c.credits.Add(-1)
			s.sent.Add(1)
		}
		return len(recs) > 0, true
	}
	closeWrite := func() {
		// Flush what is queued (and, when the server shuts down, what is spooled within the credits), then
		// say goodbye.
		if c.kickCode == websocket.CloseGoingAway {
			for {
				sent, ok := sendSpooled()
				if !ok {
					return
				}
				if !sent {
					break
				}
			}
		}
		for {
			select {
			case b := <-c.ctrl:
				if !write(b) {
					return
				}
				continue
			default:
			}
			break
		}
		deadline := time.Now().Add(s.cfg.WriteTimeout)
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.kickCode, c.kickText), deadline)
		// The reader is waiting for the peer's close frame; do not let it wait long.
		c.ws.SetReadDeadline(time.Now().Add(min(s.cfg.WriteTimeout, 5*time.Second)))
	}
	more := true
	for {
		select {
		case b := <-c.ctrl:
			if !write(b) {
				return
			}
			continue
		case <-c.kicked:
			closeWrite()
			return
		default:
		}
		if more {
			sent, ok := sendSpooled()
			if !ok {
				return
			}
			if sent {
				continue
			}
			if c.credits.Load() > 0 {
				more = false // nothing left after the cursor; wait for a notification
			}
		}
		select {
		case b := <-c.ctrl:
			if !write(b) {
				return
			}
		case <-c.kicked:
			closeWrite()
			return
		case <-notify:
			more = true
		case m := <-stored:
			// Answers queued before the message go first (accepted precedes its request's trajectories).
		drain:
			for {
				select {
				case b := <-c.ctrl:
					if !write(b) {
						return
					}
				default:
					break drain
				}
			}
			b, err := m.frame()
			if err != nil {
				s.log.Error("stream: stored message", "consumer", c.consumer, "err", err)
				c.outbox.Release(m)
				continue
			}
			c.sentOB.add(m)
			if !write(b) {
				return
			}
			s.sent.Add(1)
		case <-c.creditSig:
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.cfg.WriteTimeout)); err != nil {
				c.ws.NetConn().Close()
				return
			}
		}
	}
}
