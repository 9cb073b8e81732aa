package bus

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The modes of [bus] mode.
const (
	// ModeEmbedded runs JetStream inside the process: a file store under the spool dir, no network listener.
	ModeEmbedded = "embedded"
	// ModeCluster runs JetStream inside the process with routes to the other nodes' embedded servers.
	ModeCluster = "cluster"
	// ModeExternal connects to a NATS server or cluster that runs elsewhere (url).
	ModeExternal = "external"
)

// SyncAlways is the sync_interval value that fsyncs every write before it is acknowledged.
const SyncAlways = "always"

// Config is runtime.toml's [bus] table: where the store of accepted requests and finished trajectories lives,
// and how long a node may hold a sample.
type Config struct {
	// Mode is "embedded" (the default: one process, no listener), "cluster" (each node embeds a server with routes
	// to its peers) or "external" (url).
	Mode string `toml:"mode"`
	// Dir is the embedded server's store; "" is <server.spool_dir>/bus (set by the config loader).
	Dir string `toml:"dir"`
	// Name is this node's server name; required in cluster mode (unique within the cluster). In external mode it
	// is the name results carry as the node that ran them (default: host-pid); embedded mode names the server
	// itself.
	Name string `toml:"name"`
	// Cluster is the cluster's name (cluster mode); every node must give the same.
	Cluster string `toml:"cluster"`
	// Listen is where this node's server accepts routes from its peers, "host:port" (cluster mode). Port 0 is
	// a port the kernel chooses (Bus.ClusterAddr reports it): peers cannot list it in advance, so such a node
	// routes to nodes already running and NATS tells the others about it.
	Listen string `toml:"listen"`
	// Routes are the peers' route addresses, "nats-route://host:port" (cluster mode; listing this node too is fine).
	Routes []string `toml:"routes"`
	// URL is the NATS server to connect to, "nats://host:4222[,nats://...]" (external mode).
	URL string `toml:"url"`
	// Replicas is how many servers keep each stream: 1 in embedded mode; cluster and external default to 3 (at
	// most the number of servers).
	Replicas int `toml:"replicas"`
	// AckWait is how long a node holds a sample without saying it is still working on it; a running episode
	// renews its claim every ack_wait/4, so this is how long a dead node's samples wait before another node
	// takes them.
	AckWait time.Duration `toml:"ack_wait"`
	// MaxDeliver is how many times a sample may be claimed; the claim after the last becomes a failed
	// trajectory (reason node_lost) so that its group closes.
	MaxDeliver int `toml:"max_deliver"`
	// DuplicateWindow is how long JetStream remembers a work item's id, so a re-published fan-out stores nothing.
	DuplicateWindow time.Duration `toml:"duplicate_window"`
	// MaxAckPending bounds the samples claimed at once across all nodes.
	MaxAckPending int `toml:"max_ack_pending"`
	// SyncInterval is how often the embedded store fsyncs: a duration (default "2m", what a machine crash can
	// lose; a process crash loses nothing acknowledged) or "always" (every write, before it is acknowledged).
	SyncInterval string `toml:"sync_interval"`
	// MaxPayload bounds one message (a finished trajectory) in bytes; embedded and cluster modes set the
	// server's limit to it. JetStream allows at most 8 MiB.
	MaxPayload int `toml:"max_payload"`
}

// DefaultConfig returns the defaults the [bus] table is decoded over.
func DefaultConfig() Config {
	return Config{
		Mode:            ModeEmbedded,
		Cluster:         "agentrt",
		AckWait:         30 * time.Second,
		MaxDeliver:      3,
		DuplicateWindow: 10 * time.Minute,
		MaxAckPending:   20000,
		SyncInterval:    "2m",
		MaxPayload:      8 << 20,
	}
}

// maxPayloadLimit is the largest message JetStream accepts.
const maxPayloadLimit = 8 << 20

// replicas is the effective replica count.
func (c Config) replicas() int {
	switch {
	case c.Mode == ModeEmbedded:
		return 1
	case c.Replicas > 0:
		return c.Replicas
	default:
		return 3
	}
}

// syncInterval parses SyncInterval: always, or the interval.
func (c Config) syncInterval() (always bool, every time.Duration, err error) {
	if c.SyncInterval == SyncAlways {
		return true, 0, nil
	}
	d, err := time.ParseDuration(c.SyncInterval)
	if err != nil || d <= 0 {
		return false, 0, fmt.Errorf("want %q or a positive duration (\"2m\", \"1s\"), got %q", SyncAlways, c.SyncInterval)
	}
	return false, d, nil
}

// Validate checks the values; the error names the key (without the "bus." prefix).
func (c Config) Validate() (key string, err error) {
	switch c.Mode {
	case ModeEmbedded, ModeCluster, ModeExternal:
	default:
		return "mode", fmt.Errorf("%q is not a mode (use %q, %q or %q)", c.Mode, ModeEmbedded, ModeCluster, ModeExternal)
	}
	switch {
	case c.AckWait <= 0:
		return "ack_wait", fmt.Errorf("must be > 0, got %s", c.AckWait)
	case c.MaxDeliver < 1:
		return "max_deliver", fmt.Errorf("must be >= 1, got %d", c.MaxDeliver)
	case c.DuplicateWindow <= 0:
		return "duplicate_window", fmt.Errorf("must be > 0, got %s", c.DuplicateWindow)
	case c.MaxAckPending < 1:
		return "max_ack_pending", fmt.Errorf("must be >= 1, got %d", c.MaxAckPending)
	case c.Replicas < 0 || c.Replicas > 5:
		return "replicas", fmt.Errorf("must be 1 to 5 (JetStream's limit), got %d", c.Replicas)
	case c.MaxPayload < 1024 || c.MaxPayload > maxPayloadLimit:
		return "max_payload", fmt.Errorf("must be 1024 to %d bytes, got %d", maxPayloadLimit, c.MaxPayload)
	}
	if _, _, err := c.syncInterval(); err != nil {
		return "sync_interval", err
	}
	if c.Mode == ModeEmbedded && c.Replicas > 1 {
		return "replicas", fmt.Errorf("embedded mode keeps one copy; replicas = %d needs mode = %q or %q", c.Replicas, ModeCluster, ModeExternal)
	}
	if c.Mode != ModeExternal && c.URL != "" {
		return "url", fmt.Errorf("url is for mode = %q (mode is %q)", ModeExternal, c.Mode)
	}
	if c.Mode != ModeCluster && (c.Listen != "" || len(c.Routes) > 0) {
		return "routes", fmt.Errorf("listen and routes are for mode = %q (mode is %q)", ModeCluster, c.Mode)
	}
	if strings.ContainsAny(c.Name, " \t\r\n.*>") {
		return "name", fmt.Errorf("%q: a node name may not hold spaces, '.', '*' or '>'", c.Name)
	}
	switch c.Mode {
	case ModeCluster:
		if c.Name == "" {
			return "name", fmt.Errorf("cluster mode needs a server name, unique within the cluster")
		}
		if c.Cluster == "" {
			return "cluster", fmt.Errorf("cluster mode needs a cluster name")
		}
		_, port, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return "listen", fmt.Errorf("cluster mode needs the route listener as host:port: %v", err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return "listen", fmt.Errorf("%q: the port must be a number from 0 (kernel-chosen) to 65535", c.Listen)
		}
		if len(c.Routes) == 0 {
			return "routes", fmt.Errorf("cluster mode needs the peers' routes (nats-route://host:port)")
		}
		for _, r := range c.Routes {
			if u, err := url.Parse(r); err != nil || u.Scheme != "nats-route" || u.Host == "" {
				return "routes", fmt.Errorf("%q: want nats-route://host:port", r)
			}
		}
	case ModeExternal:
		if c.URL == "" {
			return "url", fmt.Errorf("external mode needs url (nats://host:4222)")
		}
		for _, s := range strings.Split(c.URL, ",") {
			if u, err := url.Parse(strings.TrimSpace(s)); err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls") {
				return "url", fmt.Errorf("%q: want nats://host:port (or tls://), comma-separated", s)
			}
		}
	}
	return "", nil
}
