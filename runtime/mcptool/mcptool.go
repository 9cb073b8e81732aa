// Package mcptool offers the tools of an MCP server (Model Context Protocol) to an agent: it connects as an MCP
// client with the official Go SDK, over stdio (a command it starts) or streamable HTTP (a URL), lists the server's
// tools with their JSON schemas, and calls them, mapping results (text, structured content, isError) to tool
// results. A server that dies is started (or reconnected) again on the next call; the call that saw it die gets an
// error result that says so. Every message from a server is capped while it is read (a stdio frame, an HTTP
// response body, an SSE event), and a stdio server runs in its own process group, which is killed (children and
// all) when its connection is dropped or the tool closes.
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	// MaxMessageBytes caps one message from the server while it is read: a stdio frame, an HTTP response body,
	// an SSE event (0: DefaultMaxMessageBytes). A larger answer fails the call with an error result and the
	// connection is started again at the next call. The runtime derives it from max_tool_result_bytes.
	MaxMessageBytes int `toml:"-"`
}

// DefaultMaxMessageBytes is the default cap of one message from a server (a result past the agent's
// max_tool_result_bytes is refused anyway; the cap leaves room for JSON escaping and tool listings).
const DefaultMaxMessageBytes = 4 << 20

// MessageCap is the message cap for tool results of at most maxResult bytes: room for the result JSON-escaped
// (up to 6 bytes per byte, "\u00XX") and its envelope, and at least DefaultMaxMessageBytes.
func MessageCap(maxResult int) int {
	return max(DefaultMaxMessageBytes, 6*maxResult+64<<10)
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

	// retiring are dropped connections being closed in the background; Close waits for them, so no server
	// process outlives the tool.
	retiring sync.WaitGroup
}

type episode struct {
	calls int
	conn  *conn // PerEpisode only
}

// conn is one session with one server process (or HTTP session).
type conn struct {
	session *mcp.ClientSession
	dead    chan struct{} // closed when the session ends (the process exited, the connection dropped)
	proc    *process      // the stdio server (nil over HTTP)
	tooBig  *atomic.Bool  // set when a message from the server passed MaxMessageBytes
}

// close ends the session and, for stdio, stops the server's process group.
func (c *conn) close() error {
	err := c.session.Close()
	if c.proc != nil {
		c.proc.stop()
	}
	return err
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
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
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
			c.close()
			if c.tooBig.Load() {
				return nil, fmt.Errorf("%s: listing tools: the server's answer is over %d bytes", cfg.Name(), cfg.MaxMessageBytes)
			}
			return nil, fmt.Errorf("%s: listing tools: %w", cfg.Name(), err)
		}
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil || tool.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		t.specs = append(t.specs, Spec{Name: tool.Name, Description: tool.Description, Parameters: schema})
	}
	if len(t.specs) == 0 {
		c.close()
		return nil, fmt.Errorf("%s: the server offers no tools", cfg.Name())
	}
	if cfg.PerEpisode {
		c.close()
	} else {
		t.shared = c
	}
	return t, nil
}

// connect starts the server (stdio) or opens a session (HTTP) and does the MCP handshake.
func (t *Tool) connect(ctx context.Context) (*conn, error) {
	c := &conn{dead: make(chan struct{}), tooBig: &atomic.Bool{}}
	limit := t.cfg.MaxMessageBytes
	var tr mcp.Transport
	if t.cfg.URL != "" {
		base := http.DefaultTransport.(*http.Transport).Clone()
		// The caps are ours (they know when they tripped); the SDK's own SSE event cap, above them, is a backstop.
		tr = &mcp.StreamableClientTransport{Endpoint: t.cfg.URL, DisableStandaloneSSE: true, MaxEventSize: 2 * limit,
			HTTPClient: &http.Client{Transport: cappedTransport{base, limit, c.tooBig}}}
	} else {
		p, err := startProcess(t.cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: starting: %w", t.cfg.Name(), err)
		}
		c.proc = p
		// The frame cap is ours (it knows when it tripped); the SDK's own, above it, is a backstop.
		tr = &mcp.IOTransport{Reader: &frameCap{r: p.stdout, limit: limit, tripped: c.tooBig}, Writer: p.stdin, MaxLineLength: 2 * limit}
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
	defer cancel()
	s, err := t.client.Connect(cctx, tr, nil)
	if err != nil {
		if c.proc != nil {
			c.proc.stdout.Close()
			c.proc.stdin.Close()
			c.proc.stop()
		}
		return nil, fmt.Errorf("%s: connecting: %w", t.cfg.Name(), err)
	}
	c.session = s
	go func() { s.Wait(); close(c.dead) }()
	return c, nil
}

// process is a stdio server: its own process group, so that stopping it stops what it started too.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser // ours: the server's stdin
	stdout io.ReadCloser  // ours: the server's stdout
	exited chan struct{}  // closed once the process has exited and been reaped
}

// stopGrace is how long a server gets to exit after its stdin closes, and again after SIGTERM, before SIGKILL.
const stopGrace = 2 * time.Second

func startProcess(cfg Config) (*process, error) {
	// Not CommandContext: the process lives as long as the connection, not the call that started it.
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Dir = cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Pipes of our own, not StdinPipe/StdoutPipe: Wait would close those under the reader when the process
	// exits, and the last frames could be lost.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		// The server is gone: so is whatever it started. Its children may hold its stdout open, and the
		// connection would never see the end of it. (Right after the reap: the group's id cannot have been
		// reused by then.)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.exited)
	}()
	return p, nil
}

// stop waits for the server to exit (its stdin is closed by now), then SIGTERMs and at last SIGKILLs its process
// group; once the server has exited, whatever it left in its group is killed too (startProcess). It returns when
// the server is gone.
func (p *process) stop() {
	pgid := p.cmd.Process.Pid
	wait := func() bool {
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
			return false
		}
	}
	if !wait() {
		syscall.Kill(-pgid, syscall.SIGTERM)
		if !wait() {
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
	}
}

// frameCap fails a stdio connection when one line (a JSON-RPC frame) passes limit bytes, before the SDK buffers
// it; tripped says why the connection failed.
type frameCap struct {
	r       io.ReadCloser
	limit   int
	n       int // bytes of the current line so far
	tripped *atomic.Bool
}

func (f *frameCap) Read(p []byte) (int, error) {
	if f.n > f.limit {
		f.tripped.Store(true)
		return 0, errTooBig
	}
	if room := f.limit + 1 - f.n; len(p) > room {
		p = p[:room]
	}
	n, err := f.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			f.n = 0
		} else {
			f.n++
		}
	}
	return n, err
}

func (f *frameCap) Close() error { return f.r.Close() }

var errTooBig = errors.New("mcptool: a message from the server is over the size cap")

// cappedTransport caps what the server answers while it is read: a JSON body (which the SDK reads whole) at
// limit bytes, an SSE stream at limit bytes per event (a stream of many small events is fine).
type cappedTransport struct {
	base    http.RoundTripper
	limit   int
	tripped *atomic.Bool
}

func (c cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, limit: c.limit, tripped: c.tripped,
		sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	return resp, nil
}

// cappedBody counts the bytes of the current message: the whole body, or (SSE) the current event, which ends at
// an empty line.
type cappedBody struct {
	io.ReadCloser
	limit   int
	tripped *atomic.Bool
	sse     bool
	n       int // bytes of the current message
	line    int // bytes of the current line (SSE), "\r" not counted
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.n > b.limit {
		b.tripped.Store(true)
		return 0, errTooBig
	}
	if room := b.limit + 1 - b.n; len(p) > room {
		p = p[:room]
	}
	n, err := b.ReadCloser.Read(p)
	if !b.sse {
		b.n += n
		return n, err
	}
	for _, c := range p[:n] {
		switch c {
		case '\n':
			if b.line == 0 { // an empty line ends the event
				b.n = 0
				continue
			}
			b.line = 0
		case '\r':
		default:
			b.line++
		}
		b.n++
	}
	return n, err
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
		if c.tooBig.Load() {
			return errorResult(fmt.Sprintf("Error: tool %s returned more than %d bytes, more than this agent takes (max_tool_result_bytes); the MCP server is restarted for the next call", name, t.cfg.MaxMessageBytes)), nil
		}
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
		t.retire(nc)
		return nil, false, fmt.Errorf("%s: episode %q ended while its server started", t.cfg.Name(), episodeID)
	}
	if ep.conn != nil { // a concurrent call of the same turn won the race
		t.retire(nc)
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
		t.retire(*slot)
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
	t.retire(c) // may wait for the process to exit; the call's answer need not
}

// retire closes a connection nobody uses any more in the background; Close waits for it. Caller holds t.mu.
func (t *Tool) retire(c *conn) {
	t.retiring.Add(1)
	go func() {
		defer t.retiring.Done()
		c.close()
	}()
}

// EndEpisode closes the episode's server (PerEpisode) and forgets its count.
func (t *Tool) EndEpisode(episodeID string) {
	t.mu.Lock()
	ep := t.episodes[episodeID]
	delete(t.episodes, episodeID)
	t.mu.Unlock()
	if ep != nil && ep.conn != nil {
		ep.conn.close()
	}
}

// Close closes every connection, stopping the server processes it started (each process group), and waits for
// the connections dropped earlier to be closed too.
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
			if err := c.close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
				errs = append(errs, err)
			}
		}
	}
	t.retiring.Wait()
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
