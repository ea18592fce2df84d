package launcher

import (
	"context"
	"io"

	"github.com/hlaunch/hlaunch/internal/doctor"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/placement"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/view"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Config is what a Launcher needs from its host; zero fields take the defaults given.
type Config struct {
	// Root is the hermes root (--root); empty resolves it as profile.ResolveRoot does.
	Root string
	// StateDir holds worker records; empty means HLAUNCH_STATE_DIR, else /run/hlaunch for root,
	// else $XDG_RUNTIME_DIR/hlaunch.
	StateDir string
	// LedgerDir holds the execution ledger; empty means HLAUNCH_LEDGER_DIR, else <StateDir>/ledger. Put it
	// on a persistent disk to keep the ledger across reboots (the default state dir is a tmpfs).
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
	// WorkerLogs gives every detached worker without a Log of its own (and without inherited stdio) the log
	// <state-dir>/logs/<id>.log; the sidecar sets it. Without it such workers write to /dev/null.
	WorkerLogs bool
	// Hide lists extra paths a sandboxed worker must not see (a sidecar's socket directory).
	Hide []string
	// Defaults fill the placement fields a Spec leaves empty (Scope, CgroupParent, Slice, RequireScope, Net),
	// and its Limits the limit fields: a zero field there takes the built-in default (BuiltinLimits: tasks
	// DefaultPids, memory DefaultMemoryPercent of MemTotal, CPU weight DefaultCPUWeight; none for the
	// others), cgroup.Unlimited gives no default, any other value is the default.
	Defaults worker.Spec
	// KeepBus makes the launcher keep its systemd manager connections open and share them between
	// launches (a long-lived caller such as the sidecar) instead of dialling two per launch and closing
	// them after it; a lost connection is dialled again by the next launch. Close closes them.
	KeepBus bool
	// OwnerOnly refuses a spec whose User names other ids than its profile home's owner and group (a
	// sidecar without --allow-as: it runs each worker as its home's owner). False takes any --as.
	OwnerOnly bool
}

// Launcher carries out launches and later operations on workers. It holds no global state; one value per
// process is enough, and it is safe for concurrent use.
type Launcher struct {
	records.Store  // the state directory's records and the ledger
	placement.Host // where its workers can be placed
	cfg            Config
	root           string          // resolved hermes root
	policy         *profile.Policy // built-in lists, extended by --policy

	tempSweep tempSweep // when the collection last swept dead writers' temp files (sweepTemps)
}

// Close releases what the launcher keeps open between launches (Config.KeepBus); workers are not
// touched. A launch after Close dials again.
func (l *Launcher) Close() error {
	if l.Buses != nil {
		l.Buses.Close()
	}
	return nil
}

// Doctor reports what this host offers and what --scope auto would choose with this launcher's defaults,
// creating nothing.
func (l *Launcher) Doctor(ctx context.Context) (doctor.Report, error) {
	return doctor.Run(ctx, &l.Host, l.cfg.Defaults, l.cfg.Environ, view.KeptGroups())
}
