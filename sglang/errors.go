package sglang

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error classes. Match them with errors.Is on any error the Client returns.
var (
	// ErrContextLength: the prompt (or prompt plus max_new_tokens) does not fit the model's context
	// length. An HTTP 400 from SGLang; never retried. Also matches ErrBadRequest.
	ErrContextLength = errors.New("sglang: request exceeds the model's context length")
	// ErrBadRequest: HTTP 400 (invalid parameters, context length, ...); never retried.
	ErrBadRequest = errors.New("sglang: bad request")
	// ErrUnauthorized: HTTP 401 or 403 (a missing or wrong API key); never retried.
	ErrUnauthorized = errors.New("sglang: unauthorized")
	// ErrNotFound: HTTP 404 (for example an endpoint the Model Gateway does not serve); never retried.
	ErrNotFound = errors.New("sglang: not found")
	// ErrUnavailable: HTTP 408, 429 or 5xx (queue full, timeouts, overload, internal errors); retried.
	ErrUnavailable = errors.New("sglang: server unavailable")
	// ErrConnection: the request could not be sent or the response could not be read (refused, reset,
	// truncated body); retried, and the worker is marked unhealthy for a while.
	ErrConnection = errors.New("sglang: connection failed")
	// ErrTimeout: one attempt ran past Retry.AttemptTimeout; retried while the request deadline allows.
	ErrTimeout = errors.New("sglang: attempt timed out")
	// ErrBadResponse: the response body is not the JSON SGLang sends (undecodable, truncated, or missing a
	// required field, which the message names). Undecodable bodies are retried; missing fields are not.
	ErrBadResponse = errors.New("sglang: bad response")
	// ErrAborted: the server finished the request with finish_reason "abort" (HTTP 200), for example after
	// /abort_request or /pause_generation. Never retried; the error is an *AbortError carrying the partial
	// response.
	ErrAborted = errors.New("sglang: request aborted")
	// ErrNotSupported: the operation needs worker URLs but only a Model Gateway is configured (the gateway
	// does not serve /abort_request, /pause_generation, /continue_generation or /update_weights_*).
	ErrNotSupported = errors.New("sglang: not served by the Model Gateway; list the workers in Config.Workers")
	// ErrUnknownServer: a server URL passed to a Client method is not one of the configured ones.
	ErrUnknownServer = errors.New("sglang: unknown server")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("sglang: client closed")
)

// Error is what every Client call returns on failure: which operation, server and request id failed,
// after how many attempts, and why (Err: an *HTTPError, *AbortError, a context error, or an error that
// matches one of the classes above).
type Error struct {
	// Op is the operation ("generate", "health", "abort_request", ...).
	Op string
	// Server is the base URL of the last worker (or gateway) tried; "" if none was reached.
	Server string
	// RID is the request id sent with /generate (the last attempt's).
	RID string
	// Attempts is the number of HTTP attempts made.
	Attempts int
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sglang: ")
	b.WriteString(e.Op)
	if e.Server != "" {
		b.WriteString(" on ")
		b.WriteString(e.Server)
	}
	if e.RID != "" {
		b.WriteString(" (rid ")
		b.WriteString(e.RID)
		b.WriteString(")")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "sglang: "))
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// HTTPError is a non-2xx HTTP response. Its Is method matches the status classes: ErrBadRequest (400),
// ErrContextLength (400 whose message is one of SGLang's context-length messages), ErrUnauthorized (401,
// 403), ErrNotFound (404), ErrUnavailable (408, 429, 5xx).
type HTTPError struct {
	// Server is the base URL that answered.
	Server string
	// RID is the request id, for /generate.
	RID string
	// StatusCode is the HTTP status.
	StatusCode int
	// Body is the response body (at most 64 KiB of it).
	Body string
	// Message is the error message extracted from SGLang's JSON error shapes, or the body.
	Message string
	// RetryAfter is the Retry-After header in seconds, if the server sent one (0 otherwise).
	RetryAfter int
}

// Error implements error.
func (e *HTTPError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Body
	}
	if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return fmt.Sprintf("sglang: HTTP %d: %s", e.StatusCode, msg)
}

// Is matches the status classes listed on HTTPError.
func (e *HTTPError) Is(target error) bool {
	switch target {
	case ErrBadRequest:
		return e.StatusCode == 400
	case ErrContextLength:
		return e.StatusCode == 400 && isContextLengthMessage(e.Message)
	case ErrUnauthorized:
		return e.StatusCode == 401 || e.StatusCode == 403
	case ErrNotFound:
		return e.StatusCode == 404
	case ErrUnavailable:
		return retryableStatus(e.StatusCode)
	}
	return false
}

// retryableStatus reports the statuses SGLang (and its gateway) treat as transient.
func retryableStatus(code int) bool {
	return code == 408 || code == 429 || code >= 500
}

// contextLengthMessages are the fragments of SGLang's context-length ValueErrors
// (TokenizerManager._validate_one_request, validate_total_tokens, and the scheduler's abort).
var contextLengthMessages = []string{
	"is longer than the model's context length",
	"exceeds the model's maximum context length",
	"exceeds the maximum allowed length",
}

func isContextLengthMessage(msg string) bool {
	for _, m := range contextLengthMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// errorMessage extracts the message from SGLang's error bodies: {"error":{"message":m}}, {"error":m},
// {"object":"error","message":m,...}; otherwise the trimmed body.
func errorMessage(body []byte) string {
	var w struct {
		Error   json.RawMessage `json:"error"`
		Message *string         `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &w) == nil {
		if len(w.Error) > 0 {
			var inner struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(w.Error, &inner) == nil && inner.Message != "" {
				return inner.Message
			}
			var s string
			if json.Unmarshal(w.Error, &s) == nil {
				return s
			}
		}
		if w.Message != nil {
			return *w.Message
		}
		if len(w.Detail) > 0 {
			var s string
			if json.Unmarshal(w.Detail, &s) == nil {
				return s
			}
			return string(w.Detail)
		}
	}
	return strings.TrimSpace(string(body))
}

func parseRetryAfter(v string) int {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// AbortError reports a /generate request that SGLang finished with finish_reason "abort" (HTTP 200).
// It matches ErrAborted.
type AbortError struct {
	// Message is finish_reason.message ("Aborted", "Abort in waiting queue", or a server error).
	Message string
	// StatusCode is finish_reason.status_code (0 if null).
	StatusCode int
	// ErrType is finish_reason.err_type ("" if null).
	ErrType string
	// Response is the partial response (output so far, meta_info).
	Response *GenerateResponse
}

// Error implements error.
func (e *AbortError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("sglang: request aborted by the server (status %d): %s", e.StatusCode, e.Message)
	}
	return "sglang: request aborted by the server: " + e.Message
}

// Is matches ErrAborted.
func (e *AbortError) Is(target error) bool { return target == ErrAborted }

// responseError is an unusable response body; retry says whether it is worth another attempt.
type responseError struct {
	msg   string
	retry bool
	err   error
}

func (e *responseError) Error() string {
	if e.err != nil {
		return "sglang: bad response: " + e.msg + ": " + e.err.Error()
	}
	return "sglang: bad response: " + e.msg
}

func (e *responseError) Is(target error) bool { return target == ErrBadResponse }
func (e *responseError) Unwrap() error        { return e.err }

// connError wraps a transport failure (or a per-attempt timeout) so it matches ErrConnection or ErrTimeout.
type connError struct {
	err     error
	timeout bool
	dial    bool // the connection could not be opened (refused, unreachable): the server is down
}

func (e *connError) Error() string {
	if e.timeout {
		return "sglang: attempt timed out: " + e.err.Error()
	}
	return "sglang: connection failed: " + e.err.Error()
}

func (e *connError) Is(target error) bool {
	if e.timeout {
		return target == ErrTimeout
	}
	return target == ErrConnection
}

func (e *connError) Unwrap() error { return e.err }
