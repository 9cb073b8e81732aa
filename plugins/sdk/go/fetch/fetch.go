// Package fetch makes outbound HTTP requests from a Go plugin through agentrt_v1.http_request (plugins/ABI.md
// section 3.1). The runtime runs them only as far as the plugin's runtime.toml entry grants (hosts, methods,
// timeout, body caps, request counts) and adds the granted headers itself; the plugin never sees them. It is a
// package of its own so that plugins that do not reach out do not link encoding/json.
package fetch

import (
	"encoding/json"
	"fmt"
)

// Request is one HTTP request. Method defaults to GET.
type Request struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// Response is the server's answer (any status: a 404 is a Response, not an error).
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body"`
}

// Error is a request the runtime refused or could not complete. Code is "denied" (the grant does not allow
// it, or there is no grant), "failed" (network error, timeout, response over the cap) or "bad_request".
type Error struct {
	Code, Message string
}

func (e *Error) Error() string { return "fetch " + e.Code + ": " + e.Message }

// Do runs req through the runtime.
func Do(req Request) (Response, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	out, err := call(in)
	if err != nil {
		return Response{}, err
	}
	var env struct {
		OK    *Response `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out, &env); err != nil {
		return Response{}, fmt.Errorf("fetch: bad result envelope from the runtime: %w", err)
	}
	if env.Error != nil {
		return Response{}, &Error{env.Error.Code, env.Error.Message}
	}
	if env.OK == nil {
		return Response{}, fmt.Errorf("fetch: empty result envelope from the runtime")
	}
	return *env.OK, nil
}

// Get is Do for a GET of url.
func Get(url string) (Response, error) { return Do(Request{URL: url}) }
