package sglang

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures a Client. Decode runtime.toml over DefaultConfig(), then call Validate (New does too).
type Config struct {
	// Workers are the base URLs of SGLang workers ("http://host:30000"). /generate is spread over them with
	// episode affinity; admin calls (abort, pause, weights) go to them. May be combined with Gateway.
	Workers []string `toml:"workers"`
	// Gateway is the base URL of an SGLang Model Gateway. When set, /generate goes through it with the
	// episode id in the X-SMG-Routing-Key header, and Workers (if any) serve only admin calls.
	Gateway string `toml:"gateway"`
	// MaxInFlightPerWorker bounds the concurrent /generate requests per worker (or to the gateway); more
	// wait in a queue that Stats reports. Default 1024.
	MaxInFlightPerWorker int `toml:"max_in_flight_per_worker"`
	// RequestTimeout bounds one Generate call, retries included, when the caller's ctx has no deadline.
	// Default 30m; 0 means no bound.
	RequestTimeout time.Duration `toml:"request_timeout"`
	// AdminTimeout bounds the other calls (health, info, abort, pause, ...) when ctx has no deadline.
	// Default 60s.
	AdminTimeout time.Duration `toml:"admin_timeout"`
	// Retry is the retry policy for transient failures.
	Retry RetryConfig `toml:"retry"`
	// UnhealthyAfter is how many consecutive transiently failed attempts mark a worker unhealthy; affinity
	// then spills to the next-ranked worker. A connection that cannot be opened marks it at once. Default 3.
	UnhealthyAfter int `toml:"unhealthy_after"`
	// UnhealthyFor is how long a worker stays marked unhealthy before it is tried again. Default 5s.
	UnhealthyFor time.Duration `toml:"unhealthy_for"`
	// APIKey, if set, is sent as "Authorization: Bearer <key>" (SGLang's --api-key / --admin-api-key).
	APIKey string `toml:"api_key"`
	// Adaptive replaces each worker's fixed bound with one driven by the worker's /v1/loads (AdaptiveConfig).
	Adaptive AdaptiveConfig `toml:"adaptive"`
	// Affinity is what shares a worker: AffinityGroup ("group", the default: a group's samples, given with
	// WithGroup) or AffinityEpisode ("episode"). An episode's turns always stay together.
	Affinity string `toml:"affinity"`
	// Placement is how a new group or episode finds its worker: PlacementLeastLoaded ("least_loaded", the
	// default: the fewest tokens in flight) or PlacementRendezvous ("rendezvous").
	Placement string `toml:"placement"`
	// PlacementTTL is how long least_loaded placement remembers a group's or episode's worker after its last
	// request. Default 10m.
	PlacementTTL time.Duration `toml:"placement_ttl"`
}

// RetryConfig is the retry policy. The delay before attempt n+1 is
// min(MaxBackoff, InitialBackoff*Multiplier^(n-1)), scaled by a random factor in [1-Jitter, 1+Jitter],
// and raised to the server's Retry-After if that is longer. No retry starts that could not finish
// its backoff before the request deadline.
type RetryConfig struct {
	// MaxAttempts is the total number of attempts, first included; 1 disables retries. Default 5.
	MaxAttempts int `toml:"max_attempts"`
	// InitialBackoff is the first delay. Default 100ms.
	InitialBackoff time.Duration `toml:"initial_backoff"`
	// MaxBackoff caps each delay. Default 5s.
	MaxBackoff time.Duration `toml:"max_backoff"`
	// Multiplier grows the delay per attempt. Default 2.
	Multiplier float64 `toml:"multiplier"`
	// Jitter is the relative random spread of each delay, in [0, 1]. Default 0.2.
	Jitter float64 `toml:"jitter"`
	// AttemptTimeout bounds a single attempt (0: only the request deadline applies), so a stalled server
	// is retried instead of waited on. Generations can be long: set it well above the slowest one.
	AttemptTimeout time.Duration `toml:"attempt_timeout"`
}

// DefaultConfig returns a fresh Config with every default filled in and no endpoints.
func DefaultConfig() Config {
	return Config{
		MaxInFlightPerWorker: 1024,
		RequestTimeout:       30 * time.Minute,
		AdminTimeout:         60 * time.Second,
		Retry: RetryConfig{
			MaxAttempts:    5,
			InitialBackoff: 100 * time.Millisecond,
			MaxBackoff:     5 * time.Second,
			Multiplier:     2,
			Jitter:         0.2,
		},
		UnhealthyAfter: 3,
		UnhealthyFor:   5 * time.Second,
		Affinity:       AffinityGroup,
		Placement:      PlacementLeastLoaded,
		PlacementTTL:   10 * time.Minute,
	}
}

// Validate reports the first invalid setting, naming it.
func (c *Config) Validate() error {
	if len(c.Workers) == 0 && c.Gateway == "" {
		return errors.New("sglang: config: set workers (SGLang server URLs) or gateway (a Model Gateway URL)")
	}
	seen := make(map[string]bool)
	for i, w := range c.Workers {
		if err := checkURL(w); err != nil {
			return fmt.Errorf("sglang: config: workers[%d]: %w", i, err)
		}
		n := normalizeURL(w)
		if seen[n] {
			return fmt.Errorf("sglang: config: workers[%d]: %q is listed twice", i, w)
		}
		seen[n] = true
	}
	if c.Gateway != "" {
		if err := checkURL(c.Gateway); err != nil {
			return fmt.Errorf("sglang: config: gateway: %w", err)
		}
	}
	switch {
	case c.MaxInFlightPerWorker < 1:
		return fmt.Errorf("sglang: config: max_in_flight_per_worker must be >= 1, got %d", c.MaxInFlightPerWorker)
	case c.RequestTimeout < 0:
		return fmt.Errorf("sglang: config: request_timeout must be >= 0, got %v", c.RequestTimeout)
	case c.AdminTimeout < 0:
		return fmt.Errorf("sglang: config: admin_timeout must be >= 0, got %v", c.AdminTimeout)
	case c.Retry.MaxAttempts < 1:
		return fmt.Errorf("sglang: config: retry.max_attempts must be >= 1 (1 = no retries), got %d", c.Retry.MaxAttempts)
	case c.Retry.InitialBackoff < 0 || c.Retry.MaxBackoff < 0:
		return fmt.Errorf("sglang: config: retry.initial_backoff and retry.max_backoff must be >= 0")
	case c.Retry.MaxBackoff < c.Retry.InitialBackoff:
		return fmt.Errorf("sglang: config: retry.max_backoff (%v) is below retry.initial_backoff (%v)", c.Retry.MaxBackoff, c.Retry.InitialBackoff)
	case c.Retry.Multiplier < 1:
		return fmt.Errorf("sglang: config: retry.multiplier must be >= 1, got %v", c.Retry.Multiplier)
	case c.Retry.Jitter < 0 || c.Retry.Jitter > 1:
		return fmt.Errorf("sglang: config: retry.jitter must be in [0, 1], got %v", c.Retry.Jitter)
	case c.Retry.AttemptTimeout < 0:
		return fmt.Errorf("sglang: config: retry.attempt_timeout must be >= 0, got %v", c.Retry.AttemptTimeout)
	case c.UnhealthyAfter < 1:
		return fmt.Errorf("sglang: config: unhealthy_after must be >= 1, got %d", c.UnhealthyAfter)
	case c.UnhealthyFor < 0:
		return fmt.Errorf("sglang: config: unhealthy_for must be >= 0, got %v", c.UnhealthyFor)
	case c.Affinity != AffinityGroup && c.Affinity != AffinityEpisode:
		return fmt.Errorf("sglang: config: affinity must be %q or %q, got %q", AffinityGroup, AffinityEpisode, c.Affinity)
	case c.Placement != PlacementLeastLoaded && c.Placement != PlacementRendezvous:
		return fmt.Errorf("sglang: config: placement must be %q or %q, got %q", PlacementLeastLoaded, PlacementRendezvous, c.Placement)
	case c.PlacementTTL <= 0:
		return fmt.Errorf("sglang: config: placement_ttl must be > 0, got %v", c.PlacementTTL)
	}
	return c.Adaptive.validate(c)
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q must start with http:// or https://", s)
	}
	if u.Host == "" {
		return fmt.Errorf("URL %q has no host", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("URL %q must be a base URL without query or fragment", s)
	}
	return nil
}

func normalizeURL(s string) string { return strings.TrimRight(s, "/") }

// Option configures what a Config cannot carry.
type Option func(*options)

type options struct {
	httpClient *http.Client
	logger     *slog.Logger
	backoff    func(attempt int) time.Duration
	now        func() time.Time
}

// WithHTTPClient makes the Client use hc instead of building its own tuned one. Give its Transport a
// MaxIdleConnsPerHost of at least MaxInFlightPerWorker, and no Timeout (deadlines come from ctx).
func WithHTTPClient(hc *http.Client) Option { return func(o *options) { o.httpClient = hc } }

// WithLogger sets the logger (default: discard). The Client logs retries and health changes at Debug
// and Warn; it never logs an error it returns.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithBackoff replaces the computed retry delay: f(n) is the delay after the n-th failed attempt (n >= 1).
// Retry-After from the server still raises it.
func WithBackoff(f func(attempt int) time.Duration) Option { return func(o *options) { o.backoff = f } }
