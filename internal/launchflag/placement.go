package launchflag

import (
	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// Placement holds the values of the placement flags both binaries take: --scope, --require-scope, --slice,
// --user, --cgroup-parent and --net. For exec, run and start they place one launch; for the sidecar they are
// the defaults of every spawn (launcher.Config.Defaults).
type Placement struct {
	Scope, Slice, CgroupParent, Net string
	RequireScope, UserManager       bool
}

// Purpose says what the placement flags describe, and so how their help begins.
type Purpose int

const (
	// ForLaunch: the flags place the one worker this command starts (exec, run, start).
	ForLaunch Purpose = iota
	// ForSpawns: the flags are the defaults of every spawn (the sidecar), each applied only where it
	// applies to the spawn.
	ForSpawns
)

// AddPlacement registers the placement flags on fs into p. The displayed defaults are the real ones
// (auto, host); the help is the same sentence for both purposes, which ForSpawns marks as a spawn's default.
func AddPlacement(fs *pflag.FlagSet, p *Placement, purpose Purpose) {
	usage := func(s string) string {
		if purpose == ForSpawns {
			return "default of every spawn: " + s
		}
		return s
	}
	fs.StringVar(&p.Scope, "scope", string(worker.ScopeAuto), usage("placement: auto, systemd, cgroup or none"))
	fs.BoolVar(&p.RequireScope, "require-scope", false, usage("when no restart-safe placement exists, refuse the worker instead of running it degraded (exec: exit 75; a sidecar spawn: 503, health degraded)"))
	fs.StringVar(&p.Slice, "slice", "", usage("systemd slice for the scope (default: the manager's)"))
	fs.BoolVar(&p.UserManager, "user", false, usage("use the caller's systemd user manager for scopes, even as root (default: the system manager for root)"))
	fs.StringVar(&p.CgroupParent, "cgroup-parent", "", usage("raw-cgroup parent, relative to each hierarchy's root (default hlaunch)"))
	fs.StringVar(&p.Net, "net", string(worker.NetHost), usage("a sandboxed worker's network: host, or none (an empty network namespace)"))
}

// Apply copies every placement flag that was given on fs into s, leaving s's other fields as they are: a
// --spec document keeps what the command line does not name, and a sidecar's defaults stay empty (the
// launcher's own default) where no flag was given.
func (p *Placement) Apply(fs *pflag.FlagSet, s *worker.Spec) {
	set := func(name string) bool {
		fl := fs.Lookup(name)
		return fl != nil && fl.Changed
	}
	if set("scope") {
		s.Scope = worker.Scope(p.Scope)
	}
	if set("require-scope") {
		s.RequireScope = p.RequireScope
	}
	if set("slice") {
		s.Slice = p.Slice
	}
	if set("user") {
		s.UserManager = p.UserManager
	}
	if set("cgroup-parent") {
		s.CgroupParent = p.CgroupParent
	}
	if set("net") {
		s.Net = worker.Net(p.Net)
	}
}

// Check refuses a placement value the launcher does not take, with the launcher's own sentence for the
// flag (the one a spec's field and Spec.Validate give): the scope's name, the network's and the cgroup
// parent. The sidecar checks its defaults with it before anything is made; a launch's flags are checked
// with the rest of its spec by Spec.Validate, which calls the same checks.
func (p *Placement) Check() error {
	if err := worker.CheckScope(p.Scope); err != nil {
		return err
	}
	if _, err := worker.ParseNet(p.Net); err != nil {
		return err
	}
	return worker.CheckCgroupParent(p.CgroupParent)
}
