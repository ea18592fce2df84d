package placement

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/systemd"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// scopePlacement is a transient systemd scope (--scope systemd, or auto where a manager answers).
type scopePlacement struct {
	conn *systemd.Conn // the manager that owns the scope (after dialed has been waited for)
	// sharedConn: conn is the launcher's kept connection (Config.KeepBus), not closed with the placement.
	sharedConn bool
	// dialed, when not nil, delivers conn (or why there is none) from a connect that runs while the child
	// starts: --scope systemd overlaps the bus handshake with the child's fork and exec.
	dialed chan dialResult
	unit   string // "<name>.scope", once placed
	invID  string // the scope's InvocationID, once placed
	cgroup string // the leader's v2 cgroup once placed, read from the leader itself; "" without a v2 line
	limits cgroup.Limits
	// Unit name generated (unique per launch): the scope's cgroup.events on the unified tree, so release
	// can see the scope is already empty and leave it to the manager instead of a StopUnit job.
	events  string
	unified string       // the cgroup2 mount, "" when unknown
	host    *cgroup.Host // this host's layout, to read the scope's limits back; nil when unknown

	// defaults is the part of limits that came from the launcher's defaults: place keeps only those the
	// manager applied (a user manager on a hybrid host applies no memory or pids limit), and limits is then
	// what is in effect.
	defaults cgroup.Limits
}

// dialResult is the outcome of an overlapped connect.
type dialResult struct {
	p   *scopePlacement
	err error
}

// UserManager reports whether spec's scope is made by a user manager (--user, or any non-root caller)
// rather than the system manager.
func UserManager(spec worker.Spec) bool { return spec.UserManager || os.Geteuid() != 0 }

// CheckUnit refuses a bad --unit before anything is started.
func CheckUnit(spec worker.Spec) error {
	if spec.Unit != "" {
		if err := systemd.ValidUnitName(spec.Unit); err != nil {
			return fmt.Errorf("%w: --unit: %w", worker.ErrInvalid, err)
		}
	}
	return nil
}

func (l *Host) newScope(spec worker.Spec) *scopePlacement {
	p := &scopePlacement{host: l.Cgroups}
	p.limits, p.defaults = l.LimitsFor(spec)
	if l.Cgroups != nil {
		p.unified = l.Cgroups.Unified
	}
	return p
}

func (l *Host) prepareSystemd(ctx context.Context, spec worker.Spec) (*scopePlacement, error) {
	if err := CheckUnit(spec); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, ScopeTimeout)
	defer cancel()
	user := UserManager(spec)
	dial := func(ctx context.Context) (*systemd.Conn, error) {
		return systemd.Connect(ctx, systemd.ConnectOptions{User: user, UID: os.Geteuid(), Getenv: l.Getenv})
	}
	var conn *systemd.Conn
	var err error
	if l.Buses != nil {
		conn, err = l.Buses.get(cctx, user, dial)
	} else {
		conn, err = dial(cctx)
	}
	if err != nil {
		return nil, err
	}
	p := l.newScope(spec)
	p.conn, p.sharedConn = conn, l.Buses != nil
	return p, nil
}

// prepareSystemdAsync is prepareSystemd for an explicit --scope systemd, run in the background: the bus
// connection (two authenticated D-Bus connections in go-systemd) is made while the child is forked and
// exec'd, and place waits for it. Nothing runs unplaced meanwhile: the child is held (at its exec, or the
// sandbox's stub on its handshake) until place succeeds, and a failed connect aborts it (exit 125, the
// target never runs). The unit name is still checked first, so a bad --unit starts nothing at all.
// --scope auto stays synchronous: its fallback depends on the answer.
func (l *Host) prepareSystemdAsync(ctx context.Context, spec worker.Spec) (*scopePlacement, error) {
	if err := CheckUnit(spec); err != nil {
		return nil, err
	}
	p := l.newScope(spec)
	p.dialed = make(chan dialResult, 1)
	go func() {
		q, err := l.prepareSystemd(ctx, spec)
		if err != nil && !errors.Is(err, worker.ErrInvalid) {
			// No manager answered: a host-level condition (exit 75, 503), never the caller's bad input.
			err = fmt.Errorf("%w: --scope systemd: %w", worker.ErrDegraded, err)
		}
		p.dialed <- dialResult{q, err}
	}()
	// Let the dials reach the bus before the child's fork: a pinned launch has one P, and the fork (a raw
	// vfork, which keeps the P) and the wait for the child's exec would otherwise run first.
	runtime.Gosched()
	return p, nil
}

// await waits for an overlapped connect; afterwards p.conn is set, or the error says why not.
func (p *scopePlacement) await() error {
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

func (*scopePlacement) Mode() worker.Mode          { return worker.ModeScoped }
func (*scopePlacement) CloneFD() (*os.File, error) { return nil, nil }
func (*scopePlacement) NeedsHold(bool) bool        { return true }
func (*scopePlacement) Group() *cgroup.Group       { return nil }

func (p *scopePlacement) Describe() Placed {
	return Placed{Limits: p.limits, Unit: p.unit, InvocationID: p.invID}
}

// CgroupPath is read from the leader itself (by place), so that scopes and raw cgroups are described the
// same way.
func (p *scopePlacement) CgroupPath(int) string { return p.cgroup }

// Place makes the transient scope with pid in it and checks that its limits were applied.
func (p *scopePlacement) Place(ctx context.Context, spec worker.Spec, id string, pid int, _ bool) error {
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
		return fmt.Errorf("%w: --unit: %w", worker.ErrInvalid, err)
	}
	backstop := scopeBackstop(spec)
	cctx, cancel := context.WithTimeout(ctx, ScopeTimeout)
	defer cancel()
	info, err := p.conn.StartScope(cctx, systemd.ScopeSpec{
		Unit:               unit,
		Slice:              spec.Slice,
		Description:        desc,
		PIDs:               []uint32{uint32(pid)},
		MemoryMax:          p.limits.Memory,
		MemoryHigh:         p.limits.MemoryHigh,
		TasksMax:           uint64(p.limits.Pids),
		CPUWeight:          uint64(p.limits.CPUWeight),
		CPUQuotaPerSecUSec: uint64(p.limits.CPUs * 1e6),
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
	// A cgroup this launcher cannot name (outside its cgroup namespace) is refused, not guessed: the
	// worker's identity and its release would name another cgroup. No v2 line (a v1 host) is no path.
	cg, err := cgroup.ProcCgroup2(pid)
	if err != nil && !errors.Is(err, cgroup.ErrNotFound) {
		return fmt.Errorf("the scope's cgroup: %w", err)
	}
	p.cgroup = cg
	if spec.Unit == "" && p.unified != "" && cg != "" {
		p.events = filepath.Join(p.unified, cg, "cgroup.events")
	}
	return nil
}

// enforced checks that the manager applied the scope's limits: a systemd user manager on a hybrid host
// accepts MemoryMax= and TasksMax= and applies neither (those controllers are on v1 hierarchies it cannot
// manage), and a worker must never run under weaker limits than it asked for. The held child is aborted
// by the caller, so nothing runs; the scope, emptied, is collected by the manager. A default the manager
// did not apply is left out of p.limits, which the receipt shows.
func (p *scopePlacement) enforced(pid int) error {
	asked := worker.OnlyAsked(p.limits, p.defaults)
	if p.host == nil {
		p.limits = asked
		if asked.IsZero() {
			return nil
		}
		return fmt.Errorf("%w: cannot check the limits of scope %s: no cgroup filesystem here", worker.ErrInvalid, p.unit)
	}
	if err := p.host.Enforced(pid, asked); err != nil {
		return fmt.Errorf("%w: %w: the systemd manager did not apply them to scope %s; --scope cgroup applies them itself", worker.ErrInvalid, err, p.unit)
	}
	if p.defaults.IsZero() {
		return nil
	}
	got, err := p.host.InEffect(pid, p.limits)
	if err != nil {
		return err
	}
	p.limits = got
	return nil
}

func (p *scopePlacement) Release(ctx context.Context) {
	_ = p.await()
	if p.conn == nil {
		return
	}
	// An empty scope is stopped and collected by the manager itself (CollectMode=inactive-or-failed); the
	// StopUnit job costs a D-Bus round trip and a job wait on every foreground launch (ADR 0003). Only
	// for generated unit names, which no later launch reuses, and only when the scope's own cgroup says
	// "populated 0"; anything else (members left, an unreadable file) still goes through StopUnit.
	if p.unit != "" && !scopeEmpty(p.events) {
		sctx, cancel := context.WithTimeout(ctx, ScopeTimeout)
		_ = p.conn.StopUnit(sctx, p.unit)
		cancel()
	}
	p.closeConn()
}

// Close drops the bus connection: the scope outlives it, and nothing later needs it.
func (p *scopePlacement) Close() {
	_ = p.await()
	if p.conn != nil {
		p.closeConn()
	}
}

// closeConn closes the placement's own bus connection; a kept one stays open for the next launch.
func (p *scopePlacement) closeConn() {
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
	b, err := os.ReadFile(events)
	if err != nil {
		return false
	}
	ev, err := linux.ParseEvents(b)
	return err == nil && !ev.Populated
}

// scopeBackstop is what a detached worker's scope is given so that its manager ends it at its deadline
// with nothing of hlaunch's running (its shim killed, no sidecar, no CLI call): RuntimeMaxSec= at
// timeout+grace+backstopMargin, after the shim's own kill, and TimeoutStopSec= of the grace, so that a tree
// that ignores the manager's SIGTERM is killed a grace later. A live shim drops the manager's SIGTERM (it
// catches it) and has recorded the end long before the manager's SIGKILL. A foreground launch's hlaunch
// enforces its own deadline, and a warm slot's scope is made before its spec is known: neither gets one.
func scopeBackstop(spec worker.Spec) systemd.ScopeSpec {
	timeout, _ := spec.TimeoutDuration()
	if !spec.Detach || timeout <= 0 {
		return systemd.ScopeSpec{}
	}
	grace, _ := spec.GraceDuration()
	return systemd.ScopeSpec{RuntimeMax: timeout + grace + backstopMargin, StopTimeout: grace}
}

// backstopMargin puts the manager's stop after the shim's own deadline: the manager counts from the
// scope's start, the shim from its receipt, which comes later by the identity capture and the records
// (ADR 0005): a manager's stop at timeout+grace could end a tree before its shim's deadline, and its end
// be recorded as not timed out.
const backstopMargin = 5 * time.Second
