package launcher

import (
	"context"
	"io"
	"os"
	"syscall"
	"time"
)

// Config is what a Launcher needs from its host; zero fields take the defaults given.
type Config struct {
	// Root is the hermes root (--root); empty resolves it as nsenv.ResolveRoot does.
	Root string
	// StateDir holds worker records; empty means HLAUNCH_STATE_DIR, else /run/hlaunch for root,
	// else $XDG_RUNTIME_DIR/hlaunch.
	StateDir string
	// LedgerDir holds the execution ledger; empty means <StateDir>/ledger.
	LedgerDir string
	// PolicyFile is a JSON policy that extends the built-in name lists; empty means none.
	PolicyFile string
	// Environ is the launcher's own environment; nil means os.Environ(). Only the base names and
	// --inherit names are ever read from it.
	Environ []string
	// Stderr receives the one-line warnings (a degraded placement, a fallback); nil means os.Stderr.
	Stderr io.Writer
	// Self is the hlaunch binary used for the init stub and the shim; empty means /proc/self/exe.
	Self string
	// Defaults fill the placement fields a Spec leaves empty (Scope, CgroupParent, Slice, RequireScope, Net).
	Defaults Spec
}

// Stdio are the foreground child's standard streams; nil fields mean /dev/null.
type Stdio struct {
	Stdin          *os.File
	Stdout, Stderr *os.File
}

// Launcher carries out launches and later operations on workers. It holds no global state; one value per
// process is enough, and it is safe for concurrent use.
type Launcher struct {
	cfg Config
}

// Run starts spec in the foreground with stdio, forwards the given signals to it, waits, removes its
// cgroup, and returns its wait status as an exit code (128+N for signal N).
func (l *Launcher) Run(ctx context.Context, spec Spec, stdio Stdio, signals <-chan os.Signal) (int, error) {
	panic("not yet")
}

// Start starts spec detached under a shim and returns its receipt at once.
func (l *Launcher) Start(ctx context.Context, spec Spec) (*Receipt, error) { panic("not yet") }

// List returns every worker record in the state directory, each verified now.
func (l *Launcher) List(ctx context.Context) ([]Record, error) { panic("not yet") }

// Get returns one worker's record; ref is a worker id or a token.
func (l *Launcher) Get(ctx context.Context, ref string) (Record, error) { panic("not yet") }

// Signal sends sig to the worker's leader, or to its whole cgroup with all, only when its identity verifies.
func (l *Launcher) Signal(ctx context.Context, ref string, sig syscall.Signal, all bool) error {
	panic("not yet")
}

// Stop sends SIGTERM, waits up to grace for the cgroup to empty, then kills the whole cgroup; it returns
// nil only when the cgroup is verified empty.
func (l *Launcher) Stop(ctx context.Context, ref string, grace time.Duration) (Record, error) {
	panic("not yet")
}

// Wait blocks until the worker has ended (or ctx ends) and returns its final record.
func (l *Launcher) Wait(ctx context.Context, ref string) (Record, error) { panic("not yet") }
