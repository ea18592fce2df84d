package sidecar

import (
	"context"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/sidecar/access"
	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/sidecar/idemkeys"
	"github.com/hlaunch/hlaunch/internal/sidecar/metrics"
	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/sidecar/peerstore"
	"github.com/hlaunch/hlaunch/internal/sidecar/warmpool"
	"github.com/hlaunch/hlaunch/internal/version"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxBody      = 1 << 20 // 1 MiB: a spec is a few hundred bytes; anything near this is a mistake
	DefaultPollInterval = 150 * time.Millisecond
	DefaultSlowPoll     = 2 * time.Second
	DefaultEventRing    = 4096
	DefaultGCInterval   = 30 * time.Second
	// DefaultHeaderTimeout bounds the time to read a request's line and headers: a client sends them at
	// once, so only a slow-loris holds a connection this long.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds the time to read a request's body (a spec of a few hundred bytes).
	DefaultBodyTimeout = 30 * time.Second
	// DefaultIdleTimeout is how long a kept-alive connection may wait for its next request.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultStreamQueue is how many events one /v1/events stream may have waiting to be written; a stream
	// whose reader falls further behind is ended with a lost event.
	DefaultStreamQueue = 1024
	// DefaultStreamWriteTimeout is how long writing one event to a /v1/events stream may take; a reader that
	// stops reading is cut off after it.
	DefaultStreamWriteTimeout = 30 * time.Second
)

// maxHeaderBytes bounds a request's line and headers (a client's are a few hundred bytes): net/http's
// default, 1 MiB, would let every connection hold a megabyte while its headers are read.
const maxHeaderBytes = 16 << 10

// Config is what a Server needs; zero fields take the defaults given.
type Config struct {
	// Socket is the Unix socket path to create. Ignored when the process was socket-activated (LISTEN_FDS).
	Socket string
	// SocketGroup, when set (a group name or numeric gid), makes the socket 0660 owned by that group and lets
	// its members use the API; empty means 0600 and owner/root only.
	SocketGroup string
	// Launcher carries out every operation. Required.
	Launcher *launcher.Launcher
	// MaxBody limits request bodies; zero means DefaultMaxBody. Larger bodies get 413 too_large.
	MaxBody int64
	// PollInterval is the shortest time between two lists of the records (and the polling period when
	// WatchDir cannot be watched); zero means DefaultPollInterval.
	PollInterval time.Duration
	// SlowPoll is the longest time between two lists when WatchDir is watched; zero means DefaultSlowPoll.
	SlowPoll time.Duration
	// WatchDir is a directory whose changes (inotify) wake the watcher: the launcher's worker records. Empty
	// with a Launcher means Launcher.WorkersDir(); empty otherwise means polling every PollInterval.
	WatchDir string
	// EventRing is how many past events are kept for ?since= replay; zero means DefaultEventRing.
	EventRing int
	// Logger receives the sidecar's structured log (start, stop, spawns, refusals, exits, re-adoptions,
	// collections; see docs/sidecar.md). Nil means NewLogger(Log).
	Logger *slog.Logger
	// Log is where the default Logger writes; nil means os.Stderr.
	Log io.Writer
	// NoActivation ignores LISTEN_FDS even when set (tests, or a sidecar started under another activator).
	NoActivation bool
	// Placement is the placement spawns default to (the launcher's Config.Defaults): health reports
	// "degraded" while it cannot be made (PlacementProblem), checked at start-up and on each health request
	// until it can. Nil means no check.
	Placement *worker.Spec
	// Warm is how many warm slots (launcher.Warm) to keep ready for spawns of the default placement: each is
	// a worker's shim already started and, for a systemd scope, already in its scope, so a spawn that fits
	// one skips both. Zero means none. An unused slot costs one idle shim (ADR 0007).
	Warm int
	// Retention is what the sidecar collects by, on its own, every GCInterval (off the spawn path): ended
	// workers' records and logs, empty cgroups, the ledger's bound. nil means launcher.DefaultRetention.
	Retention *launcher.Retention
	// GCInterval is the time between two collections; zero means DefaultGCInterval.
	GCInterval time.Duration
	// MaxConns bounds the connections served at once, from every peer together (503 busy past it); zero
	// means DefaultMaxConns. It is lowered, with a log line, when RLIMIT_NOFILE cannot hold it (peerlimit.Budget).
	// Its last MaxConnsPerUID (at most half of it) are kept for root and the sidecar's own uid: the other
	// uids together are answered 503 busy past the rest.
	MaxConns int
	// MaxConnsPerUID bounds the connections one peer uid holds at once (429 too_many past it); zero means
	// DefaultMaxConnsPerUID. Root's and the owner's count like anyone's.
	MaxConnsPerUID int
	// MaxStreams and MaxStreamsPerUID bound the GET /v1/events streams open at once, in all and per uid;
	// zero means DefaultMaxStreams and DefaultMaxStreamsPerUID. A reserve of MaxStreams is kept for root
	// and the sidecar's uid as one of MaxConns is.
	MaxStreams, MaxStreamsPerUID int
	// MaxWorkers and MaxWorkersPerUID bound the workers running at once from this sidecar's spawns, in all
	// (503 busy past it) and per peer uid (429 too_many); zero means DefaultMaxWorkers and
	// DefaultMaxWorkersPerUID. A spawn holds its slot from its request until the watcher sees the worker
	// end; running workers the sidecar adopted count against the total, and against the share of the peer
	// that spawned them when PeersDir remembers it. A reserve is kept for root and the sidecar's uid as
	// one of MaxConns is.
	MaxWorkers, MaxWorkersPerUID int
	// HeaderTimeout, BodyTimeout and IdleTimeout bound the reading of a request's headers, of its body, and
	// a kept-alive connection's wait for its next request; zero means their defaults.
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// StreamQueue is how many events an event stream may have waiting; zero means DefaultStreamQueue.
	StreamQueue int
	// StreamWriteTimeout bounds the writing of one event to a stream; zero means DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// AllowSeccompOff serves spawns whose spec turns the sandbox's system-call filter off ("seccomp":
	// "off"). Zero value: they are refused (400 invalid), because the sidecar's clients pass it work for
	// hostile code and the filter is the sandbox's defence in depth; the receipt says which a worker got.
	AllowSeccompOff bool
	// IdempotencyDir is the directory that keeps the Idempotency-Key of spawns (idemkeys.MaxKeys keys for
	// idemkeys.MaxAge), so that a repeat is answered the first receipt across a restart of the sidecar. Empty with
	// a Launcher means "sidecar-keys" in its state directory; empty otherwise means no idempotent spawns.
	IdempotencyDir string
	// PeersDir is the directory that keeps the peer uid of each worker the sidecar spawned while it may
	// run, so that a restarted sidecar counts an adopted worker against its peer's --max-workers-per-uid
	// (peerstore). Empty with a Launcher means "sidecar-peers" in its state directory; empty otherwise
	// means adopted workers count against no peer's share.
	PeersDir string
}

// backend is what the server needs from a launcher. *launcher.Launcher is the production implementation;
// the unit tests provide a second one so routing, decoding and auth run without a kernel.
type backend interface {
	StartWith(ctx context.Context, spec worker.Spec, stdio worker.Stdio) (*worker.Receipt, error)
	StartWithID(ctx context.Context, spec worker.Spec, stdio worker.Stdio, id string) (*worker.Receipt, error)
	List(ctx context.Context) ([]worker.Record, error)
	ListPage(ctx context.Context, after string, limit int) ([]worker.Record, error)
	IDs(ctx context.Context) ([]string, error)
	Get(ctx context.Context, ref string) (worker.Record, error)
	Signal(ctx context.Context, ref string, sig syscall.Signal, all bool) error
	Stop(ctx context.Context, ref string, grace time.Duration) (worker.Record, error)
	Wait(ctx context.Context, ref string) (worker.Record, error)
	// MarkedCgroup names the cgroup hlaunch made that contains a v2 cgroup path, or "" (peer checks).
	MarkedCgroup(path string) (string, error)
}

// Server is the sidecar: one per socket. Create it with New, run it with Serve.
type Server struct {
	cfg    Config
	b      backend
	auth   access.Policy
	selfNS string // this process's pid namespace (/proc/self/ns/pid): peers in another are sandboxed
	events *events.Broker
	// conns counts the connections per peer uid (peerlimit.Listener), streams the open /v1/events streams.
	conns, streams *peerlimit.Limiter
	// workers counts the running workers per spawning peer uid; slots holds each running worker's slot by
	// id (guarded by mu), given back when the watcher sees it end or its record go.
	workers *peerlimit.Limiter
	slots   map[string]func()
	pool    *warmpool.Pool   // nil without Config.Warm
	idem    *idemkeys.Store  // nil without Config.IdempotencyDir
	peers   *peerstore.Store // nil without Config.PeersDir
	obs     *metrics.Observer
	now     func() time.Time
	start   time.Time
	// refusals bounds how many refused connections are reported (refusalBudget).
	refusals refusalBudget

	mu       sync.Mutex
	view     map[string]viewEntry // worker id -> what was last reported
	pending  map[string]time.Time // exited workers whose status has not landed yet -> first seen
	unknown  map[string]uint64    // records not in the view, held back -> nextTicket when first seen
	final    map[string]struct{}  // reported in a state no later poll can change (see isFinal): not re-read
	inflight map[uint64]struct{}  // tickets of spawns that have not answered
	scopes   map[string]string    // cgroup -> id of the running scoped workers the sidecar knows (peer checks)
	// nextTicket numbers spawns; gen counts the workers spawns put in the view (see poll).
	nextTicket, gen uint64
	alive           func(worker.Receipt) bool // whether a worker's shim still runs (launcher.ShimAlive)
	lastPoll        time.Time
	// polled is closed after each poll of the watcher (and replaced): what a /wait wakes on.
	polled       chan struct{}
	pollErr      error
	spawnErr     string // the last host-level spawn failure (see noteSpawn); "" when spawns work
	placementBad bool   // spawnErr comes from checkPlacement, which clears it once the placement works
	// idleTicks counts the watcher's ticks that listed nothing (the directory watched, nothing changed
	// since the last list): what shows that the watcher ran and chose not to list.
	idleTicks uint64

	// ready is closed once the listener is up and the start-up reconciliation is done.
	ready    chan struct{}
	addrMu   sync.Mutex
	addr     string
	shutdown chan struct{}
}

// New checks cfg and returns a Server; it does not touch the socket or the worker records yet (it opens
// Config.IdempotencyDir).
func New(cfg Config) (*Server, error) {
	if cfg.Launcher == nil {
		return nil, fmt.Errorf("%w: no launcher", ErrConfig)
	}
	if cfg.WatchDir == "" {
		cfg.WatchDir = cfg.Launcher.WorkersDir()
	}
	if cfg.IdempotencyDir == "" {
		cfg.IdempotencyDir = filepath.Join(cfg.Launcher.StateDir(), "sidecar-keys")
	}
	if cfg.PeersDir == "" {
		cfg.PeersDir = filepath.Join(cfg.Launcher.StateDir(), "sidecar-peers")
	}
	return newServer(cfg, cfg.Launcher)
}

func newServer(cfg Config, b backend) (*Server, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.SlowPoll <= 0 {
		cfg.SlowPoll = DefaultSlowPoll
	}
	if cfg.GCInterval <= 0 {
		cfg.GCInterval = DefaultGCInterval
	}
	if cfg.Retention == nil {
		r := launcher.DefaultRetention()
		cfg.Retention = &r
	}
	if cfg.EventRing <= 0 {
		cfg.EventRing = DefaultEventRing
	}
	setDefault(&cfg.MaxConns, DefaultMaxConns)
	setDefault(&cfg.MaxConnsPerUID, DefaultMaxConnsPerUID)
	setDefault(&cfg.MaxStreams, DefaultMaxStreams)
	setDefault(&cfg.MaxStreamsPerUID, DefaultMaxStreamsPerUID)
	setDefault(&cfg.MaxWorkers, DefaultMaxWorkers)
	setDefault(&cfg.MaxWorkersPerUID, DefaultMaxWorkersPerUID)
	setDefault(&cfg.StreamQueue, DefaultStreamQueue)
	setDefault(&cfg.HeaderTimeout, DefaultHeaderTimeout)
	setDefault(&cfg.BodyTimeout, DefaultBodyTimeout)
	setDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDefault(&cfg.StreamWriteTimeout, DefaultStreamWriteTimeout)
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	gid, err := lookupGroup(cfg.SocketGroup)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		b:        b,
		auth:     access.Policy{OwnerUID: uint32(os.Geteuid()), Group: gid},
		now:      time.Now,
		start:    time.Now(),
		view:     map[string]viewEntry{},
		pending:  map[string]time.Time{},
		unknown:  map[string]uint64{},
		final:    map[string]struct{}{},
		inflight: map[uint64]struct{}{},
		scopes:   map[string]string{},
		slots:    map[string]func(){},
		alive:    launcher.ShimAlive,
		polled:   make(chan struct{}),
		ready:    make(chan struct{}),
		shutdown: make(chan struct{}),
	}
	if cfg.IdempotencyDir != "" {
		if s.idem, err = idemkeys.Open(cfg.IdempotencyDir, func() time.Time { return s.now() }); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if cfg.PeersDir != "" {
		if s.peers, err = peerstore.Open(cfg.PeersDir); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if s.selfNS, err = os.Readlink("/proc/self/ns/pid"); err != nil {
		return nil, fmt.Errorf("%w: own pid namespace: %w", ErrConfig, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = NewLogger(cfg.Log)
	}
	s.obs = metrics.New(logger, Code, s.counts, s.warmReady)
	if rr, ok := b.(interface{ RecordReads() uint64 }); ok {
		s.obs.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "hlaunch_sidecar_record_reads_total",
			Help: "Worker record files read from the state directory (what lookups, lists and the watcher cost it).",
		}, func() float64 { return float64(rr.RecordReads()) }))
	}
	// The gateway runs as root or as the sidecar's own uid: a reserve of each total is kept for them.
	gateway := []uint32{0}
	if s.auth.OwnerUID != 0 {
		gateway = append(gateway, s.auth.OwnerUID)
	}
	s.streams = peerlimit.New("event streams", cfg.MaxStreams, cfg.MaxStreamsPerUID, gateway...)
	s.conns = peerlimit.New("connections", cfg.MaxConns, cfg.MaxConnsPerUID, gateway...)
	s.workers = peerlimit.New("running workers", cfg.MaxWorkers, cfg.MaxWorkersPerUID, gateway...)
	s.obs.Limits(s.conns, s.streams, s.workers)
	s.events = events.NewBroker(cfg.EventRing, s.now)
	s.events.Observe = s.obs.Event
	if w, ok := b.(warmpool.Warmer); ok && cfg.Warm > 0 {
		s.pool = warmpool.New(w, cfg.Warm, s.logf)
	}
	return s, nil
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// lookupGroup resolves a group name or numeric gid; "" means no group (-1).
func lookupGroup(g string) (int64, error) {
	if g == "" {
		return -1, nil
	}
	if strings.Trim(g, "0123456789") == "" {
		n, err := worker.ParseID(g) // the one parser of ids that reach a system call (fchown)
		if err != nil {
			return -1, fmt.Errorf("%w: --socket-group %q: %w", ErrConfig, g, err)
		}
		return int64(n), nil
	}
	gr, err := user.LookupGroup(g)
	if err != nil {
		return -1, fmt.Errorf("%w: socket group %q: %w", ErrConfig, g, err)
	}
	n, err := strconv.ParseUint(gr.Gid, 10, 32)
	if err != nil {
		return -1, fmt.Errorf("%w: socket group %q has gid %q", ErrConfig, g, gr.Gid)
	}
	return int64(n), nil
}

func (s *Server) logf(format string, args ...any) { s.obs.Warnf(format, args...) }

// placementNote is checkPlacement's finding, "" when the configured placement can be made.
func (s *Server) placementNote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.placementBad {
		return ""
	}
	return s.spawnErr
}

// warmReady is how many warm slots are ready now, -1 without a pool.
func (s *Server) warmReady() int {
	if s.pool == nil {
		return -1
	}
	return s.pool.Ready()
}

// Addr is the socket path being served (the activated socket's name when socket-activated); empty before
// the server is ready.
func (s *Server) Addr() string {
	s.addrMu.Lock()
	defer s.addrMu.Unlock()
	return s.addr
}

// Serve listens (or takes the systemd-activated socket), re-adopts every recorded worker, tells systemd it is
// ready, and serves until ctx ends. It returns nil after a clean shutdown. Workers are never touched by a
// shutdown: they belong to their shims.
func (s *Server) Serve(ctx context.Context) error {
	ln, cleanup, err := s.listen()
	if err != nil {
		return err
	}
	defer cleanup()
	return s.serveListener(ctx, ln)
}

func (s *Server) serveListener(ctx context.Context, ln net.Listener) error {
	s.addrMu.Lock()
	s.addr = ln.Addr().String()
	s.addrMu.Unlock()

	// Start-up reconciliation happens before the first request is answered, so a client that lists right
	// after connecting already sees every re-adopted worker; its events are in the ring for ?since=0.
	if err := s.poll(ctx, true); err != nil {
		s.logf("sidecar: initial list of workers failed (will retry): %v", err)
	} else if s.peers != nil {
		// Only the running workers the first pass adopted keep their peer's uid.
		s.mu.Lock()
		err := s.peers.Sweep(func(id string) bool { _, ok := s.slots[id]; return ok })
		s.mu.Unlock()
		if err != nil {
			s.logf("sidecar: %v", err)
		}
	}
	s.checkPlacement(ctx)
	if p := s.placementNote(); p != "" {
		s.logf("sidecar: degraded: %s", p)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.conns.SetTotal(peerlimit.Budget(s.cfg.MaxConns, s.logf))
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// No ReadTimeout or WriteTimeout: /wait and /events are long-lived by design. The body has its own
		// deadline (Handler), and each event written to a stream its own (handleEvents).
		IdleTimeout: s.cfg.IdleTimeout,
		ConnContext: s.connContext,
		ErrorLog:    s.obs.ErrorLog(),
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.watch(ctx) }()
	if s.pool != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.pool.Run(ctx) }()
	}
	if c, ok := s.b.(collector); ok {
		wg.Add(1)
		go func() { defer wg.Done(); s.collect(ctx, c) }()
	}

	errc := make(chan error, 1)
	fl := peerlimit.NewListener(ln, s.conns, s.logf, s.obs.LimitedAt)
	go func() { errc <- hs.Serve(fl) }()
	close(s.ready)
	total, running := s.counts()
	s.obs.Log().Info("started", "version", version.Version, "pid", os.Getpid(), "socket", s.Addr(),
		"workers", total, "running", running, "warm", s.cfg.Warm)
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		s.logf("sidecar: sd_notify READY failed: %v", err)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	defer func() {
		// Workers are not touched by a stop: they belong to their shims and are re-adopted by the next sidecar.
		total, running := s.counts()
		s.obs.Log().Info("stopped", "workers", total, "running", running)
	}()
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	close(s.shutdown)
	s.events.Close() // ends every /events stream so Shutdown does not wait for them
	cancel()         // ends in-flight waits
	// Shutdown waits for requests in flight; a connection that never sent a request counts as busy for 5 s
	// (net/http issue 22682), so after a short grace the rest are closed rather than holding up a restart.
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	wg.Wait()
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// connContext runs once per accepted connection: it reads the peer's credentials and decides whether the
// connection is served. A refused peer is logged and reported as a refused event once per connection.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	a := &connAuth{}
	a.fds, _ = c.(*peerlimit.Conn)
	if a.fds != nil {
		a.peer, a.credErr = a.fds.Peer()
		a.over = a.fds.Over()
	} else {
		a.peer, a.credErr = access.PeerOf(c)
	}
	if a.over != nil {
		return withConnAuth(ctx, a) // answered 429 or 503 (Handler); who it is does not matter then
	}
	if a.credErr == nil {
		a.ok, a.reason = s.auth.Allow(a.peer)
		if a.ok {
			a.ok, a.reason = s.unconfined(c, a.peer)
		}
	} else {
		a.reason = a.credErr.Error()
	}
	if !a.ok {
		uid := a.peer.UID
		ok, skipped := s.refusals.take(s.now())
		if !ok {
			s.obs.RefusedUnreported() // counted, not reported (refusalBudget)
			return withConnAuth(ctx, a)
		}
		reason := a.reason
		if skipped > 0 {
			reason += fmt.Sprintf(" (%d more refused connections not reported since the last one reported)", skipped)
		}
		s.logf("sidecar: refused connection from pid %d uid %d: %s", a.peer.PID, uid, reason)
		s.events.Publish(events.Event{Type: events.Refused, UID: &uid, PeerPID: a.peer.PID, Reason: reason})
	}
	return withConnAuth(ctx, a)
}
