package emulator

import (
	"context"
	"encoding/json"
	"net/http"
)

// LogRecord is one line of the request log (WithLog): a request and its response.
type LogRecord struct {
	// Seq numbers the lines from 1 in the order responses completed.
	Seq uint64 `json:"seq"`
	// Method and Path of the HTTP request.
	Method string `json:"method"`
	Path   string `json:"path"`
	// RID is the request id of a /generate request (the first item's, for a batch).
	RID string `json:"rid,omitempty"`
	// RecvNS is when the request arrived and SentNS when its response was complete, both in nanoseconds of a
	// monotonic clock started with the Server: a client's overhead between turns is the next turn's RecvNS minus
	// this turn's SentNS.
	RecvNS int64 `json:"recv_ns"`
	SentNS int64 `json:"sent_ns"`
	// RecvTime is the wall-clock arrival time (RFC 3339, UTC).
	RecvTime string `json:"recv_time"`
	// Status is the HTTP status sent (200 for a stream, whatever its events say).
	Status int `json:"status"`
	// Fault names an injected fault ("503", "500", "reset", "stall", "truncate", "context").
	Fault string `json:"fault,omitempty"`
	// Request is the request body (JSON when it was JSON, else a JSON string; the log writes JSON compacted).
	Request json.RawMessage `json:"request,omitempty"`
	// RequestBytes is the request body's size as it arrived, in bytes (what the client sent over the wire).
	RequestBytes int `json:"request_bytes,omitempty"`
	// Response is the response body; for a stream, the last event of each item (a JSON array for a batch).
	Response json.RawMessage `json:"response,omitempty"`
}

type logRecord = LogRecord

type logKey struct{}

func recordOf(ctx context.Context) *logRecord {
	r, _ := ctx.Value(logKey{}).(*logRecord)
	return r
}

// logWriter captures the status and (unless a handler already set the response) the body.
type logWriter struct {
	http.ResponseWriter
	status  int
	body    []byte
	noBody  bool
	written bool
}

func (w *logWriter) WriteHeader(code int) {
	if !w.written {
		w.status = code
		w.written = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.written = true
	if !w.noBody && len(w.body) < 8<<20 {
		w.body = append(w.body, p...)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes through (SSE).
func (w *logWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) writeLog(rec *logRecord) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.seq++
	rec.Seq = s.seq
	b, err := marshal(rec)
	if err != nil {
		s.log.Error("emulator: cannot encode log record", "err", err)
		return
	}
	b = append(b, '\n')
	if _, err := s.opts.log.Write(b); err != nil {
		s.log.Error("emulator: cannot write log record", "err", err)
	}
}
