// Package mcptool offers the tools of an MCP server (Model Context Protocol) to an agent: it connects as an MCP
// client with the official Go SDK, over stdio (a command it starts) or streamable HTTP (a URL), lists the server's
// tools with their JSON schemas, and calls them, mapping results (text, structured content, isError) to tool
// results. A server that dies is started (or reconnected) again on the next call; the call that saw it die gets an
// error result that says so.
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// Config is an `mcp = { ... }` entry of runtime.toml's [[agent.tools]]: exactly one of Command and URL.
type Config struct {
	// Command starts a stdio server: argv, e.g. ["uvx", "mcp-server-time"].
	Command []string `toml:"command"`
	// URL is a streamable HTTP server's endpoint, e.g. "http://127.0.0.1:8000/mcp".
	URL string `toml:"url"`
	// PerEpisode gives every episode its own server process (or HTTP session): tools with state. Default: one
	// per agent, shared by its episodes.
	PerEpisode bool `toml:"per_episode"`
	// MaxCalls caps the calls to this server's tools in one episode (0: no cap); calls past it get an error
	// result without reaching the server.
	MaxCalls int `toml:"max_calls"`
	// ConnectTimeout bounds starting the server and the MCP handshake (default 30 s).
	ConnectTimeout time.Duration `toml:"-"`
	// CallTimeout bounds each tool call once the server is up (0: only the caller's context); a (re)start of the
	// server is bounded by ConnectTimeout instead, so a restart does not eat the call's time.
	CallTimeout time.Duration `toml:"-"`
	// Dir is the stdio server's working directory (runtime/config sets the config file's folder; empty: ours).
	Dir string `toml:"-"`
}

// Validate checks the entry; the error names the offending key (relative to the mcp table).
func (c *Config) Validate() (key string, err error) {
	switch {
	case len(c.Command) == 0 && c.URL == "":
		return "command", errors.New("set command (a stdio server) or url (a streamable HTTP server)")
	case len(c.Command) > 0 && c.URL != "":
		return "url", errors.New("set command or url, not both")
	case len(c.Command) > 0 && c.Command[0] == "":
		return "command", errors.New("the command's program is empty")
	case c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
		return "url", fmt.Errorf("%q is not an http:// or https:// URL", c.URL)
	case c.MaxCalls < 0:
		return "max_calls", errors.New("must be >= 0")
	}
	return "", nil
}

// Name is how the server is named in errors and provenance: "mcp:" and its command or URL.
func (c *Config) Name() string {
	if c.URL != "" {
		return "mcp:" + c.URL
	}
	return "mcp:" + strings.Join(c.Command, " ")
}

// Spec is one of the server's tools as offered to the model.
type Spec struct {
	Name, Description string
	// Parameters is the tool's input JSON schema.
	Parameters json.RawMessage
}

// Tool is a connected MCP server. It is safe for concurrent use.
type Tool struct {
	cfg    Config
	client *mcp.Client
	specs  []Spec
	server string // the server's own name and version, from the handshake

	mu       sync.Mutex
	shared   *conn
	episodes map[string]*episode
	closed   bool
	restarts int
}

type episode struct {
	calls int
	conn  *conn // PerEpisode only
}

// conn is one session with one server process (or HTTP session).
type conn struct {
	session *mcp.ClientSession
	dead    chan struct{} // closed when the session ends (the process exited, the connection dropped)
}

// Open connects to the server and lists its tools. With PerEpisode the listing connection is closed again:
// episodes start their own.
func Open(ctx context.Context, cfg Config) (*Tool, error) {
	if _, err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name(), err)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	t := &Tool{cfg: cfg, client: mcp.NewClient(&mcp.Implementation{Name: "agentrt", Version: "1"}, nil), episodes: map[string]*episode{}}
	c, err := t.connect(ctx)
	if err != nil {
		return nil, err
	}
	if ir := c.session.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		t.server = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	lctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	for tool, err := range c.session.Tools(lctx, nil) {
		if err != nil {
			c.session.Close()
			return nil, fmt.Errorf("%s: listing tools: %w", cfg.Name(), err)
		}
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil || tool.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		t.specs = append(t.specs, Spec{Name: tool.Name, Description: tool.Description, Parameters: schema})
	}
	if len(t.specs) == 0 {
		c.session.Close()
		return nil, fmt.Errorf("%s: the server offers no tools", cfg.Name())
	}
	if cfg.PerEpisode {
		c.session.Close()
	} else {
		t.shared = c
	}
	return t, nil
}

// connect starts the server (stdio) or opens a session (HTTP) and does the MCP handshake.
func (t *Tool) connect(ctx context.Context) (*conn, error) {
	var tr mcp.Transport
	if t.cfg.URL != "" {
		tr = &mcp.StreamableClientTransport{Endpoint: t.cfg.URL, DisableStandaloneSSE: true}
	} else {
		// Not CommandContext: the process lives as long as the connection, not the call that started it.
		cmd := exec.Command(t.cfg.Command[0], t.cfg.Command[1:]...)
		cmd.Dir = t.cfg.Dir
		tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
	defer cancel()
	s, err := t.client.Connect(cctx, tr, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: connecting: %w", t.cfg.Name(), err)
	}
	c := &conn{session: s, dead: make(chan struct{})}
	go func() { s.Wait(); close(c.dead) }()
	return c, nil
}

// Server is the name and version the server gave in the MCP handshake (for provenance).
func (t *Tool) Server() string { return t.server }

// Specs are the server's tools, in the server's order.
func (t *Tool) Specs() []Spec { return t.specs }

// Restarts counts the times a dead server was started (or reconnected) again.
func (t *Tool) Restarts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.restarts
}

// Call calls a tool outside any episode (no per-episode limit; the shared server, or a one-off one).
func (t *Tool) Call(ctx context.Context, name string, args json.RawMessage) (abi.ToolResult, error) {
	return t.CallEpisode(ctx, "", name, args)
}

// CallEpisode calls a tool for an episode. An error result (not an error) reports a tool's own failure, the
// per-episode limit, bad arguments and a server that died during the call; an error is returned when ctx ends
// (the caller reports the timeout) or the server cannot be started.
func (t *Tool) CallEpisode(ctx context.Context, episodeID, name string, args json.RawMessage) (abi.ToolResult, error) {
	var params map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &params); err != nil {
			return errorResult(fmt.Sprintf("Error: the arguments of %s are not a JSON object: %v", name, err)), nil
		}
	}
	c, limited, err := t.conn(ctx, episodeID)
	if limited {
		return errorResult(fmt.Sprintf("Error: tool %s: this episode has used its %d calls to %s", name, t.cfg.MaxCalls, t.cfg.Name())), nil
	}
	if err != nil {
		return abi.ToolResult{}, err
	}
	cctx := ctx
	if t.cfg.CallTimeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, t.cfg.CallTimeout)
		defer cancel()
	}
	res, err := c.session.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: params})
	if err != nil {
		if ctx.Err() != nil {
			return abi.ToolResult{}, ctx.Err()
		}
		if cctx.Err() != nil {
			return errorResult(fmt.Sprintf("Error: tool %s timed out after %s", name, t.cfg.CallTimeout)), nil
		}
		// The session is unusable whatever broke it: drop it, so the next call starts the server again.
		t.drop(episodeID, c)
		return errorResult(fmt.Sprintf("Error: tool %s: the MCP server failed during the call (it is restarted for the next call): %v", name, err)), nil
	}
	return result(res), nil
}

// conn returns the episode's connection (connecting if there is none or the last one died) and counts the call
// against the episode's limit.
func (t *Tool) conn(ctx context.Context, episodeID string) (c *conn, limited bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false, fmt.Errorf("%s: closed", t.cfg.Name())
	}
	ep := t.episodes[episodeID]
	if ep == nil {
		ep = &episode{}
		t.episodes[episodeID] = ep
	}
	if t.cfg.MaxCalls > 0 && ep.calls >= t.cfg.MaxCalls {
		return nil, true, nil
	}
	ep.calls++
	if !t.cfg.PerEpisode {
		// Connecting under the lock serializes starts: a crashed shared server is started once, not once per
		// caller.
		if t.shared != nil && !t.live(&t.shared) {
			t.restarts++
		}
		if t.shared == nil {
			if t.shared, err = t.connect(ctx); err != nil {
				return nil, false, err
			}
		}
		return t.shared, false, nil
	}
	if ep.conn != nil && !t.live(&ep.conn) {
		t.restarts++
	}
	if ep.conn != nil {
		return ep.conn, false, nil
	}
	// An episode's own server starts outside the lock: other episodes' calls need not wait for it.
	t.mu.Unlock()
	nc, err := t.connect(ctx)
	t.mu.Lock()
	if err != nil {
		return nil, false, err
	}
	if t.closed || t.episodes[episodeID] != ep {
		// The tool closed or the episode ended meanwhile: nobody would close this one.
		go nc.session.Close()
		return nil, false, fmt.Errorf("%s: episode %q ended while its server started", t.cfg.Name(), episodeID)
	}
	if ep.conn != nil { // a concurrent call of the same turn won the race
		go nc.session.Close()
		return ep.conn, false, nil
	}
	ep.conn = nc
	return nc, false, nil
}

// live reports whether the connection in *slot is alive; a dead one is closed and the slot emptied. Caller holds
// t.mu.
func (t *Tool) live(slot **conn) bool {
	select {
	case <-(*slot).dead:
		go (*slot).session.Close()
		*slot = nil
		return false
	default:
		return true
	}
}

// drop forgets a connection after a failed call (if it is still the current one) and closes it.
func (t *Tool) drop(episodeID string, c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shared == c {
		t.shared = nil
		t.restarts++
	}
	if ep := t.episodes[episodeID]; ep != nil && ep.conn == c {
		ep.conn = nil
		t.restarts++
	}
	go c.session.Close() // may wait for the process to exit; the call's answer need not
}

// EndEpisode closes the episode's server (PerEpisode) and forgets its count.
func (t *Tool) EndEpisode(episodeID string) {
	t.mu.Lock()
	ep := t.episodes[episodeID]
	delete(t.episodes, episodeID)
	t.mu.Unlock()
	if ep != nil && ep.conn != nil {
		ep.conn.session.Close()
	}
}

// Close closes every connection (stopping the server processes it started).
func (t *Tool) Close(context.Context) error {
	t.mu.Lock()
	t.closed = true
	conns := []*conn{t.shared}
	for _, ep := range t.episodes {
		conns = append(conns, ep.conn)
	}
	t.shared, t.episodes = nil, map[string]*episode{}
	t.mu.Unlock()
	var errs []error
	for _, c := range conns {
		if c != nil {
			if err := c.session.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// result maps an MCP result to a tool result: the text contents (what the server wrote for the model), else the
// structured content as JSON; other content kinds are named, not dropped silently.
func result(r *mcp.CallToolResult) abi.ToolResult {
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		}
	}
	out := abi.ToolResult{IsError: r.IsError}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			out.JSON = abi.RawJSON(b)
			return out
		}
	}
	text := strings.Join(parts, "\n")
	out.Text = &text
	return out
}

func errorResult(msg string) abi.ToolResult { return abi.ToolResult{Text: &msg, IsError: true} }
