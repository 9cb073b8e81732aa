package viewer

import "fmt"

// Config is runtime.toml's [viewer] table: the viewer that `agentrt serve` mounts at /view/.
type Config struct {
	// Enabled mounts the page and its API on server.addr.
	Enabled bool `toml:"enabled"`
	// Recent is how many of the latest finished trajectories the page can show (kept in memory).
	Recent int `toml:"recent"`
	// RecentMB bounds the memory those trajectories take (estimated from their tokens and JSON fields); the
	// oldest leave first.
	RecentMB int `toml:"recent_mb"`
	// Token, if set, is the bearer token a request must present; agentrt serve sets it to server.token.
	Token string `toml:"-"`
}

// DefaultConfig returns the defaults the [viewer] table is decoded over.
func DefaultConfig() Config { return Config{Enabled: true, Recent: 500, RecentMB: 256} }

// Validate checks the values; the error names the key (without the "viewer." prefix).
func (c Config) Validate() (key string, err error) {
	switch {
	case c.Recent < 1:
		return "recent", fmt.Errorf("must be >= 1, got %d", c.Recent)
	case c.RecentMB < 1:
		return "recent_mb", fmt.Errorf("must be >= 1, got %d", c.RecentMB)
	}
	return "", nil
}
