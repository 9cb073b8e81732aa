package bus

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The streams, bucket and consumer the bus keeps (docs/scale-out.md).
const (
	// WorkStream holds one work item per sample until a node finishes it (work-queue retention).
	WorkStream = "AGENTRT_WORK"
	// ResultStream holds finished trajectories and each request's done marker, one message per subject.
	ResultStream = "AGENTRT_RESULTS"
	// CountStream holds one counter per request: how many results were stored (or found stored).
	CountStream = "AGENTRT_COUNTS"
	// RequestBucket is the key-value bucket of accepted requests.
	RequestBucket = "agentrt_requests"
	// workConsumer is the durable pull consumer every node claims samples from.
	workConsumer = "nodes"

	workPrefix   = "agentrt.work."
	resultPrefix = "agentrt.result."
	countPrefix  = "agentrt.count."
)

// Errors.
var (
	// ErrClosed is returned once the bus is closed.
	ErrClosed = errors.New("bus: closed")
)

// Bus is one node's connection to the store: in embedded and cluster modes it also owns the server it embeds.
// It is safe for concurrent use.
type Bus struct {
	cfg    Config
	log    *slog.Logger
	srv    *server.Server // nil in external mode
	ownSrv bool           // Close shuts srv down
	lock   *os.File       // the embedded store's lock (lockStore), released by Close
	nc     *nats.Conn
	js     jetstream.JetStream

	work     jetstream.Consumer
	results  jetstream.Stream
	requests jetstream.KeyValue
	control  jetstream.KeyValue // the cluster's control state (control.go)
	nodes    jetstream.KeyValue // the live nodes' presence (control.go)
	conns    jetstream.KeyValue // each consumer's newest trainer connection (supersede.go)

	connClaims connClaims // this node's trainer connections' claims (supersede.go)

	mu           sync.Mutex
	disconnected time.Time // zero while connected
	closed       bool

	statesMu sync.Mutex
	states   map[string]recordState // request key -> its record's last revision decoded here (requestCancelled)

	runMu   sync.Mutex
	running map[string]map[*context.CancelCauseFunc]struct{} // request key -> the runs of its samples here
	watchOn sync.Once
}

// Open starts the embedded server (embedded and cluster modes) and connects to it, or connects to cfg.URL,
// then makes sure the streams, the bucket and the work consumer exist. cfg must be valid (Config.Validate) and,
// unless external, have Dir set. It waits for the cluster to elect its leaders up to ctx's end.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Bus, error) {
	if key, err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bus: config: %s: %w", key, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var srv *server.Server
	var lock *os.File
	if cfg.Mode != ModeExternal {
		if cfg.Dir == "" {
			return nil, errors.New("bus: no store dir (bus.dir, or server.spool_dir)")
		}
		var err error
		if lock, err = lockStore(cfg.Dir); err != nil {
			return nil, err
		}
		if srv, err = startServer(cfg, log); err != nil {
			lock.Close()
			return nil, err
		}
	}
	b, err := attach(ctx, cfg, log, srv, true)
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	b.lock = lock
	return b, nil
}

// attach connects to srv in-process (nil: to cfg.URL) and sets the store up; own says whether Close shuts srv
// down.
func attach(ctx context.Context, cfg Config, log *slog.Logger, srv *server.Server, own bool) (*Bus, error) {
	b := &Bus{cfg: cfg, log: log, srv: srv, ownSrv: own, states: map[string]recordState{}}
	opts := []nats.Option{
		nats.Name("agentrt"),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { b.setDisconnected(true) }),
		nats.ReconnectHandler(func(*nats.Conn) { b.setDisconnected(false) }),
	}
	var err error
	if srv == nil {
		b.nc, err = nats.Connect(cfg.URL, opts...)
	} else {
		b.nc, err = nats.Connect("", append(opts, nats.InProcessServer(srv))...)
	}
	if err != nil {
		b.shutdownServer()
		return nil, fmt.Errorf("bus: connect: %w", err)
	}
	if b.js, err = jetstream.New(b.nc); err != nil {
		b.Close()
		return nil, fmt.Errorf("bus: %w", err)
	}
	if err := b.setup(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// startServer starts the embedded server and waits until it takes connections. A listener it cannot open
// (a route port in use) is an error at once, naming the address.
func startServer(cfg Config, log *slog.Logger) (*server.Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("bus: no store dir (bus.dir, or server.spool_dir)")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("bus: store dir: %w", err)
	}
	always, every, _ := cfg.syncInterval()
	opts := &server.Options{
		ServerName:         cfg.Name,
		DontListen:         true, // clients connect in-process
		JetStream:          true,
		StoreDir:           filepath.Clean(cfg.Dir),
		SyncAlways:         always,
		SyncInterval:       every,
		MaxPayload:         int32(cfg.MaxPayload),
		NoSigs:             true,
		JetStreamMaxMemory: 64 << 20,
	}
	if cfg.Mode == ModeCluster {
		host, port, _ := net.SplitHostPort(cfg.Listen)
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("bus: listen %q: %w", cfg.Listen, err)
		}
		if p == 0 {
			p = server.RANDOM_PORT // port 0 means no route listener to nats-server; ours means a kernel-chosen one
		}
		// NATS starts routing only after its client listener: in cluster mode it listens on a random loopback
		// port (this node connects in-process; the port is not advertised to clients).
		opts.DontListen = false
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
		opts.Cluster = server.ClusterOpts{Name: cfg.Cluster, Host: host, Port: p, NoAdvertise: true}
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("bus: route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: start server: %w", err)
	}
	sl := &serverLog{log: log, fatal: make(chan string, 1)}
	s.SetLoggerV2(sl, false, false, false)
	go s.Start()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if s.ReadyForConnections(100 * time.Millisecond) {
			return s, nil
		}
		select {
		case msg := <-sl.fatal:
			s.Shutdown()
			return nil, fmt.Errorf("bus: the embedded server did not start: %s", msg)
		default:
		}
		if time.Now().After(deadline) {
			s.Shutdown()
			return nil, errors.New("bus: the embedded server did not start within 30s")
		}
	}
}

// serverLog passes the embedded server's log to the bus's at debug level (a cluster's start-up is noisy, and
// a dead peer's route is retried, and logged as an error, every second). A fatal message (a listener it cannot
// open) is logged as an error and goes to fatal, for startServer; the server keeps running until it is shut
// down.
type serverLog struct {
	log   *slog.Logger
	fatal chan string
}

func (l *serverLog) Noticef(format string, v ...any) {
	l.log.Debug("nats-server: " + fmt.Sprintf(format, v...))
}
func (l *serverLog) Warnf(format string, v ...any) {
	l.log.Debug("nats-server: " + fmt.Sprintf(format, v...))
}
func (l *serverLog) Errorf(format string, v ...any) {
	l.log.Debug("nats-server: " + fmt.Sprintf(format, v...))
}
func (l *serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error("nats-server: " + msg)
	select {
	case l.fatal <- msg:
	default:
	}
}
func (l *serverLog) Debugf(string, ...any) {}
func (l *serverLog) Tracef(string, ...any) {}

// setup creates (or updates) the streams, the bucket and the work consumer, retrying while the cluster has
// no leader yet.
func (b *Bus) setup(ctx context.Context) error {
	r := b.cfg.replicas()
	work := jetstream.StreamConfig{
		Name:       WorkStream,
		Subjects:   []string{workPrefix + ">"},
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   r,
		Duplicates: b.cfg.DuplicateWindow,
	}
	results := jetstream.StreamConfig{
		Name:     ResultStream,
		Subjects: []string{resultPrefix + ">"},
		Storage:  jetstream.FileStorage,
		Replicas: r,
		// A result's subject names its trajectory: a second result for one is refused (publishResult).
		MaxMsgsPerSubject:    1,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		Duplicates:           b.cfg.DuplicateWindow,
	}
	counts := jetstream.StreamConfig{
		Name:            CountStream,
		Subjects:        []string{countPrefix + ">"},
		Storage:         jetstream.FileStorage,
		Replicas:        r,
		AllowMsgCounter: true,
	}
	consumer := jetstream.ConsumerConfig{
		Durable:       workConsumer,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       b.cfg.AckWait,
		MaxDeliver:    -1, // the bus counts deliveries itself, so the claim after the last one can fail the sample
		MaxAckPending: b.cfg.MaxAckPending,
		FilterSubject: workPrefix + ">",
	}
	// One retry per step, so that each starts again with a short attempt.
	steps := []func(ctx context.Context) error{
		func(ctx context.Context) error { return b.stream(ctx, work, nil) },
		func(ctx context.Context) error { return b.stream(ctx, results, &b.results) },
		func(ctx context.Context) error { return b.stream(ctx, counts, nil) },
		func(ctx context.Context) (err error) {
			b.requests, err = b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: RequestBucket, Storage: jetstream.FileStorage, Replicas: r})
			if err != nil {
				return fmt.Errorf("bucket %s: %w", RequestBucket, err)
			}
			return nil
		},
		b.setupControl,
		b.setupConnections,
		func(ctx context.Context) (err error) {
			if b.cfg.Mode == ModeEmbedded && b.ownSrv {
				// One process is the only node: claims a previous process held (it was killed) are released now
				// rather than after ack_wait. The work items stay (work-queue retention keeps what is not acked).
				if err := b.js.DeleteConsumer(ctx, WorkStream, workConsumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
					return fmt.Errorf("consumer %s: %w", workConsumer, err)
				}
				if err := b.releaseOutboxes(ctx); err != nil {
					return err
				}
			}
			if b.work, err = b.js.CreateOrUpdateConsumer(ctx, WorkStream, consumer); err != nil {
				return fmt.Errorf("consumer %s: %w", workConsumer, err)
			}
			return nil
		},
	}
	for _, step := range steps {
		if err := retry(ctx, b.log, step); err != nil {
			return err
		}
	}
	return nil
}

// stream creates or updates a stream, keeping its handle in h if h is not nil.
func (b *Bus) stream(ctx context.Context, cfg jetstream.StreamConfig, h *jetstream.Stream) error {
	s, err := b.js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	if h != nil {
		*h = s
	}
	return nil
}

// retry calls f until it succeeds or ctx ends (a cluster answers "no leader" for a while after it starts or
// loses its leader). The error names what failed last. Attempts are short at first: when several nodes create the
// same stream at once, none of the requests may get an answer (seen with nats-server v2.15.2), and the next attempt
// finds the stream made; longer ones later, for a loaded box.
func retry(ctx context.Context, log *slog.Logger, f func(ctx context.Context) error) error {
	err := attempts(ctx, time.Second, 8*time.Second, 200*time.Millisecond, f, func(err error, wait time.Duration, _ int) bool {
		log.Info("bus: not ready yet, trying again", "err", err, "attempt_timeout", wait)
		return true
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("bus: %w (gave up: %v)", err, context.Cause(ctx))
	}
	return err
}

// retryTransient calls f until it succeeds, fails for good (an error transient does not accept), or ctx ends. Each
// attempt has its own deadline, growing from 2s, so that a request lost with a dead stream leader is sent again
// once the cluster has elected another (seconds) instead of waiting for the caller's whole deadline; a slow but
// healthy store gets longer attempts. f must be idempotent.
func retryTransient(ctx context.Context, log *slog.Logger, what string, f func(ctx context.Context) error) error {
	return attempts(ctx, 2*time.Second, 16*time.Second, 100*time.Millisecond, f, func(err error, wait time.Duration, attempt int) bool {
		if !transient(err) {
			return false
		}
		log.Warn("bus: the store did not answer, trying again", "op", what, "attempt", attempt, "attempt_timeout", wait, "err", err)
		return true
	})
}

// attempts calls f, each call under its own deadline (first, doubling up to most), pausing between calls, until
// f succeeds, ctx ends, or again (told f's error, the attempt's deadline and number) says to stop. It returns f's
// last error.
func attempts(ctx context.Context, first, most, pause time.Duration, f func(ctx context.Context) error, again func(err error, wait time.Duration, attempt int) bool) error {
	for wait, attempt := first, 1; ; wait, attempt = min(2*wait, most), attempt+1 {
		actx, cancel := context.WithTimeout(ctx, wait)
		err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !again(err, wait, attempt) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// transient says whether err is the store not answering for now (no leader, a timeout, a reconnecting
// connection) rather than an answer.
func transient(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		(errors.As(err, &api) && api.Code == 503)
}

func (b *Bus) setDisconnected(d bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !d {
		b.disconnected = time.Time{}
	} else if b.disconnected.IsZero() {
		b.disconnected = time.Now()
	}
}

// disconnectedFor is how long the connection has been down (0 while connected).
func (b *Bus) disconnectedFor() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.disconnected.IsZero() {
		if b.nc.IsClosed() {
			return time.Duration(1<<63 - 1)
		}
		return 0
	}
	return time.Since(b.disconnected)
}

// ServerName is the embedded server's name ("" in external mode).
func (b *Bus) ServerName() string {
	if b.srv == nil {
		return ""
	}
	return b.srv.Name()
}

// NodeName is the name this node's results carry: the embedded server's name, or in external mode bus.name or
// else host-pid (unique among the processes on one NATS cluster, and says where to look).
func (b *Bus) NodeName() string {
	if b.srv != nil {
		return b.srv.Name()
	}
	if b.cfg.Name != "" {
		return b.cfg.Name
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "agentrt"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// ClusterAddr is the embedded server's route listener ("" unless cluster mode), for peers' routes.
func (b *Bus) ClusterAddr() string {
	if b.srv == nil || b.cfg.Mode != ModeCluster {
		return ""
	}
	if a := b.srv.ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Close closes the connection and shuts the embedded server down. Samples this node holds are redelivered to
// other nodes once their claim ends (ack_wait).
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.connClaims.mu.Lock()
	if b.connClaims.stop != nil {
		b.connClaims.stop()
	}
	b.connClaims.mu.Unlock()
	if b.nc != nil {
		b.nc.Close()
	}
	b.shutdownServer()
	if b.lock != nil {
		b.lock.Close() // after the server is down: the store is free for the next process
	}
	return nil
}

func (b *Bus) shutdownServer() {
	if b.srv != nil && b.ownSrv {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
}

// token makes an id (any string) one subject token: base64url without padding (no '.', '*', '>' or spaces).
func token(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func workSubject(consumer string) string { return workPrefix + token(consumer) }

func requestSubjects(consumer, request string) string {
	return resultPrefix + token(consumer) + "." + token(request)
}

func resultSubject(consumer, request, trajectory string) string {
	return requestSubjects(consumer, request) + ".t." + token(trajectory)
}

func countSubject(consumer, request string) string {
	return countPrefix + token(consumer) + "." + token(request)
}

func doneSubject(consumer, request string) string {
	return requestSubjects(consumer, request) + ".done"
}

// untoken reverses token.
func untoken(t string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	return string(b), err
}

func requestKey(consumer, request string) string { return token(consumer) + "." + token(request) }
