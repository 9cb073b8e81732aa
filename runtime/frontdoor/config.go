package frontdoor

import (
	"fmt"
	"time"
)

// Drift policies: what a session does when a call's messages do not extend its history.
const (
	// DriftFork keeps the trajectory so far as one branch and starts another that shares its common token prefix.
	DriftFork = "fork"
	// DriftRealign continues the one trajectory from the common token prefix with the re-rendered conversation;
	// the replaced tokens leave the trajectory and the cut is recorded.
	DriftRealign = "realign"
	// DriftReject answers the call with a 400 and leaves the session as it was.
	DriftReject = "reject"
)

// Session id policies: who names a session.
const (
	// SessionIDsCaller lets a caller name its sessions (any string, e.g. an episode id); the server also mints.
	SessionIDsCaller = "caller"
	// SessionIDsMinted accepts only the ids the server minted (POST /v1/sessions): unguessable, so a session can
	// be called and ended only by whoever was handed its id.
	SessionIDsMinted = "minted"
)

// Config is runtime.toml's [frontdoor] table: the OpenAI/Anthropic-compatible endpoints of `agentrt serve`.
type Config struct {
	// Enabled mounts the endpoints on server.addr.
	Enabled bool `toml:"enabled"`
	// Agent names the [[agent]] whose model, chat template, parser, sampling defaults and limits serve the calls;
	// callers address it by this name in "model". It must have no tools: the callers bring their own.
	Agent string `toml:"agent"`
	// Consumer is the trainer (its hello consumer_id) whose stream receives the sessions' trajectories.
	Consumer string `toml:"consumer"`
	// Drift is the drift policy: fork, realign or reject.
	Drift string `toml:"drift"`
	// SessionIDs is who names sessions: "caller" (any id a caller sends) or "minted" (only ids from
	// POST /v1/sessions).
	SessionIDs string `toml:"session_ids"`
	// IdleTimeout ends a session (and emits its trajectories) when no call came for this long.
	IdleTimeout time.Duration `toml:"idle_timeout"`
	// MaxSessions bounds the open sessions; a call that would open one more gets a 429.
	MaxSessions int `toml:"max_sessions"`
	// MaxRequestBytes bounds one request body; a larger one gets a 413.
	MaxRequestBytes int `toml:"max_request_bytes"`
	// MaxNewTokens caps the max_tokens a call may ask for; 0 means the agent's sampling.max_new_tokens, which is
	// also the default when a call asks for none.
	MaxNewTokens int `toml:"max_new_tokens"`
	// Token, if set, is the API key every call must present; agentrt serve sets it to server.token.
	Token string `toml:"-"`
}

// DefaultConfig returns the defaults the [frontdoor] table is decoded over.
func DefaultConfig() Config {
	return Config{Drift: DriftFork, SessionIDs: SessionIDsCaller, Consumer: "frontdoor", IdleTimeout: 10 * time.Minute,
		MaxSessions: 10000, MaxRequestBytes: 16 << 20}
}

// Validate checks the values; the error names the key (without the "frontdoor." prefix).
func (c Config) Validate() (key string, err error) {
	switch {
	case c.Drift != DriftFork && c.Drift != DriftRealign && c.Drift != DriftReject:
		return "drift", fmt.Errorf("%q: want fork, realign or reject", c.Drift)
	case c.SessionIDs != SessionIDsCaller && c.SessionIDs != SessionIDsMinted:
		return "session_ids", fmt.Errorf("%q: want caller or minted", c.SessionIDs)
	case c.IdleTimeout <= 0:
		return "idle_timeout", fmt.Errorf("must be > 0")
	case c.MaxSessions <= 0:
		return "max_sessions", fmt.Errorf("must be > 0")
	case c.MaxRequestBytes <= 0:
		return "max_request_bytes", fmt.Errorf("must be > 0")
	case c.MaxNewTokens < 0:
		return "max_new_tokens", fmt.Errorf("must be >= 0")
	case c.Enabled && c.Consumer == "":
		return "consumer", fmt.Errorf("is required: the trainer that receives the sessions' trajectories")
	}
	return "", nil
}
