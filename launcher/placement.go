package launcher

import (
	"context"
	"errors"
	"fmt"
	"github.com/hlaunch/hlaunch/internal/sysfile"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hlaunch/hlaunch/cgroup"
	"github.com/hlaunch/hlaunch/internal/systemd"
)

// Receipt modes.
const (
	ModeScoped   = "scoped"
	ModeCgroup   = "cgroup"
	ModeDegraded = "degraded"
	ModeNone     = "none"
)

// scopeTimeout bounds the wait for StartTransientUnit's job: a manager that does not answer in this time is
// treated as absent.
const scopeTimeout = 10 * time.Second

// placement is where one worker lives. It is decided and created before the child starts; place runs after
// the child (a held target, the sandbox's stub or a shim) exists and before it may run.
type placement struct {
	mode  string
	group *cgroup.Group // cgroup mode: the worker's own cgroup
	conn  *systemd.Conn // scoped: the manager that owns the scope (after dialed has been waited for)
	// sharedConn: conn is the launcher's kept connection (Config.KeepBus), not closed with the placement.
	sharedConn bool
	// dialed, when not nil, delivers conn (or why there is none) from a connect that runs while the child
	// starts: --scope systemd overlaps the bus handshake with the child's fork and exec.
	dialed  chan dialResult
	unit    string // scoped: "<name>.scope"
	invID   string // scoped: InvocationID
	warning string // degraded: the one warning
	limits  cgroup.Limits
	// scoped, unit name generated (unique per launch): the scope's cgroup.events on the unified tree, so
	// release can see the scope is already empty and leave it to the manager instead of a StopUnit job.
	events  string
	unified string       // scoped: the cgroup2 mount, "" when unknown
	host    *cgroup.Host // scoped: this host's layout, to read the scope's limits back; nil when unknown
}

// prepare decides the placement for spec and creates what must exist before the child starts.
func (l *Launcher) prepare(ctx context.Context, spec Spec, id string) (*placement, error) {
	switch spec.Scope {
	case ScopeNone:
		return &placement{mode: ModeNone}, nil
	case ScopeCgroup:
		return l.prepareCgroup(spec, id)
	case ScopeSystemd:
		return l.prepareSystemdAsync(ctx, spec)
	}
	// auto: a scope when a manager answers; else a raw cgroup; else degraded, said once.
	p, sdErr := l.prepareSystemd(ctx, spec)
	if sdErr == nil {
		return p, nil
	}
	if errors.Is(sdErr, ErrInvalid) {
		return nil, sdErr
	}
	p, cgErr := l.prepareCgroup(spec, id)
	if cgErr == nil {
		return p, nil
	}
	// A bad parent or a limit this host cannot apply is the caller's error; a parent that is not ours or
	// not writable only means no raw cgroup is available here.
	if errors.Is(cgErr, cgroup.ErrBadParent) || errors.Is(cgErr, cgroup.ErrUnsupportedLimit) {
		return nil, cgErr
	}
	why := fmt.Sprintf("no restart-safe placement: systemd: %v; cgroup: %v", sdErr, cgErr)
	if spec.RequireScope {
		return nil, fmt.Errorf("%w: %s", ErrDegraded, why)
	}
	if !spec.Limits.IsZero() {
		return nil, fmt.Errorf("%w: limits cannot be applied: %s", ErrDegraded, why)
	}
	return &placement{mode: ModeDegraded, warning: "hlaunch: warning: running degraded (a plain process in its own session, not restart-safe): " + why}, nil
}

func (l *Launcher) prepareCgroup(spec Spec, id string) (*placement, error) {
	if l.host == nil {
		return nil, fmt.Errorf("no cgroup filesystem: %w", l.hostErr)
	}
	parent := spec.CgroupParent
	if parent == "" {
		// No parent named: where systemd owns the tree, only inside the caller's delegated subtree.
		var err error
		if parent, err = l.host.DefaultParent(); err != nil {
			return nil, fmt.Errorf("%w: %w: name a parent with --cgroup-parent (inside a unit with Delegate=yes), or use --scope systemd", ErrInvalid, err)
		}
	}
	g, err := l.host.Create(parent, id, spec.Limits)
	if errors.Is(err, fs.ErrNotExist) {
		// The parent was removed between its check and our mkdir (a gc beside us found it empty): again.
		g, err = l.host.Create(parent, id, spec.Limits)
	}
	if err != nil {
		if errors.Is(err, cgroup.ErrBadParent) || errors.Is(err, cgroup.ErrNotOurs) || errors.Is(err, cgroup.ErrNotWritable) ||
			errors.Is(err, cgroup.ErrUnsupportedLimit) {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return nil, err
	}
	return &placement{mode: ModeCgroup, group: g, limits: g.Limits()}, nil
}

func (l *Launcher) prepareSystemd(ctx context.Context, spec Spec) (*placement, error) {
	if spec.Unit != "" {
		if err := systemd.ValidUnitName(spec.Unit); err != nil {
			return nil, fmt.Errorf("%w: --unit: %w", ErrInvalid, err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, scopeTimeout)
	defer cancel()
	user := spec.UserManager || os.Geteuid() != 0
	dial := func(ctx context.Context) (*systemd.Conn, error) {
		return systemd.Connect(ctx, systemd.ConnectOptions{User: user, UID: os.Geteuid(), Getenv: envLookup(l.cfg.Environ)})
	}
	var conn *systemd.Conn
	var err error
	if l.buses != nil {
		conn, err = l.buses.get(cctx, user, dial)
	} else {
		conn, err = dial(cctx)
	}
	if err != nil {
		return nil, err
	}
	p := &placement{mode: ModeScoped, conn: conn, sharedConn: l.buses != nil, limits: spec.Limits, host: l.host}
	if l.host != nil {
		p.unified = l.host.Unified
	}
	return p, nil
}

// dialResult is the outcome of an overlapped connect.
type dialResult struct {
	p   *placement
	err error
}

// prepareSystemdAsync is prepareSystemd for an explicit --scope systemd, run in the background: the bus
// connection (two authenticated D-Bus connections in go-systemd) is made while the child is forked and
// exec'd, and place waits for it. Nothing runs unplaced meanwhile: the child is held (at its exec, or the
// sandbox's stub on its handshake) until place succeeds, and a failed connect aborts it (exit 125, the
// target never runs). The unit name
// is still checked first, so a bad --unit starts nothing at all. --scope auto stays synchronous: its
// fallback depends on the answer.
func (l *Launcher) prepareSystemdAsync(ctx context.Context, spec Spec) (*placement, error) {
	if spec.Unit != "" {
		if err := systemd.ValidUnitName(spec.Unit); err != nil {
			return nil, fmt.Errorf("%w: --unit: %w", ErrInvalid, err)
		}
	}
	p := &placement{mode: ModeScoped, limits: spec.Limits, dialed: make(chan dialResult, 1), host: l.host}
	if l.host != nil {
		p.unified = l.host.Unified
	}
	go func() {
		q, err := l.prepareSystemd(ctx, spec)
		if err != nil && !errors.Is(err, ErrInvalid) {
			// No manager answered: a host-level condition (exit 75, 503), never the caller's bad input.
			err = fmt.Errorf("%w: --scope systemd: %w", ErrDegraded, err)
		}
		p.dialed <- dialResult{q, err}
	}()
	// Let the dials reach the bus before the child's fork: a pinned launch has one P, and the fork (a raw
	// vfork, which keeps the P) and the wait for the child's exec would otherwise run first.
	runtime.Gosched()
	return p, nil
}

// await waits for an overlapped connect; afterwards p.conn is set, or the error says why not.
func (p *placement) await() error {
	if p.dialed == nil {
		return nil
	}
	r := <-p.dialed
	p.dialed = nil
	if r.err != nil {
		return r.err
	}
	p.conn, p.sharedConn = r.p.conn, r.p.sharedConn
	return nil
}

// cloneFD opens the fd a child is cloned into (clone3 CLONE_INTO_CGROUP), or returns nil when the child is
// placed another way.
func (p *placement) cloneFD() (*os.File, error) {
	if p.group == nil {
		return nil, nil
	}
	f, err := p.group.OpenFD()
	if errors.Is(err, cgroup.ErrNoUnified) {
		return nil, nil
	}
	return f, err
}

// needsHold reports whether the child must wait on the handshake until place has run.
func (p *placement) needsHold(cloned bool) bool {
	switch p.mode {
	case ModeScoped:
		return true
	case ModeCgroup:
		return p.group.NeedsJoin() || !cloned
	}
	return false
}

// place puts pid where it belongs: v1 joins (and v2 when it was not cloned there), or a transient scope.
func (p *placement) place(ctx context.Context, spec Spec, id string, pid int, cloned bool) error {
	switch p.mode {
	case ModeCgroup:
		if cloned {
			return p.group.Join(pid)
		}
		return p.group.JoinAll(pid)
	case ModeScoped:
		if err := p.await(); err != nil {
			return err
		}
		name := spec.Unit
		switch {
		case name != "":
		case spec.Profile == "": // a warm slot's scope, made before its profile is known
			name = "hlaunch-" + strings.TrimPrefix(id, "w-")
		default:
			name = "hlaunch-" + spec.Profile + "-" + strings.TrimPrefix(id, "w-")
		}
		desc := "hlaunch worker " + id
		if spec.Profile != "" {
			desc += " for profile " + spec.Profile
		}
		if len(spec.Argv) > 0 {
			desc += ": " + spec.Argv[0]
		}
		unit, err := systemd.ScopeName(name)
		if err != nil {
			return fmt.Errorf("%w: --unit: %w", ErrInvalid, err)
		}
		backstop := scopeBackstop(spec)
		cctx, cancel := context.WithTimeout(ctx, scopeTimeout)
		defer cancel()
		info, err := p.conn.StartScope(cctx, systemd.ScopeSpec{
			Unit:               unit,
			Slice:              spec.Slice,
			Description:        desc,
			PIDs:               []uint32{uint32(pid)},
			MemoryMax:          spec.Limits.Memory,
			MemoryHigh:         spec.Limits.MemoryHigh,
			TasksMax:           uint64(spec.Limits.Pids),
			CPUWeight:          spec.Limits.CPUWeight,
			CPUQuotaPerSecUSec: uint64(spec.Limits.CPUs * 1e6),
			RuntimeMax:         backstop.RuntimeMax, StopTimeout: backstop.StopTimeout,
			// A foreground launch records nothing: no InvocationID, and its cgroup comes from the member.
			NoInfo: !spec.Detach,
		})
		if err != nil {
			return err
		}
		p.unit, p.invID = info.Unit, info.InvocationID
		if err := p.enforced(pid); err != nil {
			return err
		}
		if spec.Unit == "" && p.unified != "" {
			if cg := procCgroup2(pid); cg != "" {
				p.events = filepath.Join(p.unified, cg, "cgroup.events")
			}
		}
	}
	return nil
}

// enforced checks that the manager applied the scope's limits: a systemd user manager on a hybrid host
// accepts MemoryMax= and TasksMax= and applies neither (those controllers are on v1 hierarchies it cannot
// manage), and a worker must never run under weaker limits than it asked for. The held child is aborted
// by the caller, so nothing runs; the scope, emptied, is collected by the manager.
func (p *placement) enforced(pid int) error {
	if p.limits.IsZero() {
		return nil
	}
	if p.host == nil {
		return fmt.Errorf("%w: cannot check the limits of scope %s: no cgroup filesystem here", ErrInvalid, p.unit)
	}
	if err := p.host.Enforced(pid, p.limits); err != nil {
		return fmt.Errorf("%w: %w: the systemd manager did not apply them to scope %s; --scope cgroup applies them itself", ErrInvalid, err, p.unit)
	}
	return nil
}

// cgroupPath is the worker's cgroup as the v2 tree names it (relative to its root), read from the leader
// itself so that scopes and raw cgroups are described the same way.
func (l *Launcher) cgroupPath(p *placement, pid int) string {
	if p.group != nil {
		return p.group.Path()
	}
	if p.mode != ModeScoped {
		return ""
	}
	return procCgroup2(pid)
}

// procCgroup2 is pid's v2 cgroup (cgroup.ProcCgroup2); "" when it cannot be read.
func procCgroup2(pid int) string {
	p, err := cgroup.ProcCgroup2(pid)
	if err != nil {
		return ""
	}
	return p
}

// release undoes prepare after a failed start, or tidies up after a foreground worker ended: the cgroup
// is killed (its leftovers die with the leader) and removed; a scope is stopped.
func (p *placement) release(ctx context.Context) {
	if p.group != nil {
		// The usual end: the leader was the only member and has been reaped. Only what it left behind
		// needs the kill (and its wait for "populated 0").
		if pop, err := p.group.Populated(); err != nil || pop {
			kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_ = p.group.Kill(kctx)
			cancel()
		}
		_ = p.group.Delete()
	}
	_ = p.await()
	if p.conn != nil {
		// An empty scope is stopped and collected by the manager itself (CollectMode=inactive-or-failed); the
		// StopUnit job costs a D-Bus round trip and a job wait on every foreground launch (make bench). Only
		// for generated unit names, which no later launch reuses, and only when the scope's own cgroup says
		// "populated 0"; anything else (members left, an unreadable file) still goes through StopUnit.
		if p.unit != "" && !scopeEmpty(p.events) {
			sctx, cancel := context.WithTimeout(ctx, scopeTimeout)
			_ = p.conn.StopUnit(sctx, p.unit)
			cancel()
		}
		p.closeConn()
	}
}

// close drops what the launcher holds without touching the worker (a detached launch).
func (p *placement) close() {
	_ = p.await()
	if p.conn != nil {
		p.closeConn()
	}
}

// closeConn closes the placement's own bus connection; a kept one stays open for the next launch.
func (p *placement) closeConn() {
	if !p.sharedConn {
		p.conn.Close()
	}
	p.conn = nil
}

// scopeEmpty reports whether events (a scope's cgroup.events) exists and says "populated 0".
func scopeEmpty(events string) bool {
	if events == "" {
		return false
	}
	b, err := sysfile.ReadFile(events)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v == "0"
		}
	}
	return false
}
