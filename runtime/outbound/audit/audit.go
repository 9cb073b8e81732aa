// Package audit holds the audit line of one outbound HTTP request. It is its own package, standard library only,
// so that the episode loop can record a granted plugin's requests in a trajectory's provenance without reaching
// the HTTP client that makes them (runtime/outbound: net/http, a rate limiter).
package audit

// Record is one request's audit line: for metrics and the trajectory's tool provenance.
type Record struct {
	Host      string  `json:"host"`
	Method    string  `json:"method"`
	Status    int     `json:"status,omitempty"`
	SentBytes int     `json:"sent_bytes"`
	RecvBytes int     `json:"recv_bytes"`
	Ms        float64 `json:"ms"`
	Denied    string  `json:"denied,omitempty"`
	Error     string  `json:"error,omitempty"`
}
