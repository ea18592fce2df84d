package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/handshake"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
	"github.com/hlaunch/hlaunch/internal/placement"
	hproc "github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/shim"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/terminal"
	"github.com/hlaunch/hlaunch/internal/view"
	"github.com/hlaunch/hlaunch/internal/worker"
	"github.com/hlaunch/hlaunch/internal/workerlog"
)

// Start starts spec detached and returns its receipt once the target runs. The worker's parent is a shim
// placed with it (in its cgroup or scope, in its own session), never in the caller's cgroup, session or
// process group. The shim writes the worker's record before it answers, so a worker never runs without
// one even when the caller dies mid-launch; it records the exit status and enforces the timeout even when
// the caller is gone.
func (l *Launcher) Start(ctx context.Context, spec worker.Spec) (*worker.Receipt, error) {
	return l.StartWith(ctx, spec, worker.Stdio{})
}

// StartWith is Start for a spec with Stdio "inherit": stdio are the descriptors the worker gets (nil
// fields are refused for such a spec; they are ignored otherwise). The caller keeps its own copies.
func (l *Launcher) StartWith(ctx context.Context, spec worker.Spec, stdio worker.Stdio) (*worker.Receipt, error) {
	return l.StartWithID(ctx, spec, stdio, worker.NewWorkerID())
}

// StartWithID is StartWith for a worker id the caller chose before the launch (NewWorkerID), so that it can
// remember the launch under that id first: a sidecar's idempotent spawn finds the worker again by it after
// a crash mid-launch. An id that is not a worker id, or one that names a record already, is refused.
func (l *Launcher) StartWithID(ctx context.Context, spec worker.Spec, stdio worker.Stdio, id string) (_ *worker.Receipt, retErr error) {
	if !worker.IsID(id) {
		return nil, worker.Invalid(fmt.Errorf("worker id %q: not a worker id (w-<12 hex>)", id))
	}
	if _, err := os.Lstat(filepath.Join(l.WorkersDir(), id+".json")); err == nil {
		return nil, worker.Invalid(fmt.Errorf("worker id %q: already recorded", id))
	}
	d, err := l.detached(ctx, spec, stdio, id)
	if err != nil {
		return nil, err
	}
	defer d.unlock()
	p, err := l.Prepare(ctx, d.spec, id)
	if err != nil {
		return nil, err
	}
	// The one cleanup of a failed start: what prepare made is released (the shim, if any, is ended by
	// holdShim or runShim first).
	defer func() {
		if retErr != nil {
			p.Release(context.WithoutCancel(ctx))
		}
	}()
	if w := p.Describe().Warning; w != "" {
		fmt.Fprintln(l.cfg.Stderr, w)
	}
	// The shim's own stdio is /dev/null, or the worker's descriptors when the worker inherits them.
	var files []*os.File
	if d.spec.Stdio == worker.StdioInherit {
		files = []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr}
	}
	h, err := l.holdShim(ctx, d.spec, id, p, files)
	if err != nil {
		return nil, err
	}
	return l.runShim(ctx, d, h)
}

// detachedLaunch is a detached launch's spec, checked and resolved, before any placement: nothing on the
// host exists for it yet except its key lock.
type detachedLaunch struct {
	spec    worker.Spec
	id      string
	env     []string
	prof    *profile.Profile
	cwd     string
	sb      *sandbox.Spec
	cred    *syscall.Credential // an unsandboxed worker's ids (identity.credential); nil keeps the shim's
	workers *state.Dir
	unlock  func() // releases the key lock (a no-op without --key)
	// onReceipt is Stdio.OnReceipt: called with the receipt before the worker may run.
	onReceipt func(*worker.Receipt)
}

// detached checks spec for a detached launch as worker id and takes its key lock.
func (l *Launcher) detached(ctx context.Context, spec worker.Spec, stdio worker.Stdio, id string) (*detachedLaunch, error) {
	spec, err := l.resolve(spec, true)
	if err != nil {
		return nil, err
	}
	env, prof, who, err := l.compose(spec)
	if err != nil {
		return nil, err
	}
	cwd, sb, err := l.workerPlace(spec, env, prof, who)
	if err != nil {
		return nil, err
	}
	if spec.Stdio == worker.StdioInherit && (stdio.Stdin == nil || stdio.Stdout == nil || stdio.Stderr == nil) {
		return nil, fmt.Errorf("%w: stdio inherit: the caller passed no stdin, stdout and stderr", worker.ErrInvalid)
	}
	if err := terminal.CheckInherited(spec, stdio, who.OtherUID()); err != nil {
		return nil, err
	}
	// Before anything is made for it: a spawn never takes the space running workers end with.
	if err := records.CheckRecordSpace("state directory", l.StatePath); err != nil {
		return nil, err
	}
	if err := records.CheckRecordSpace("ledger directory", l.LedgerPath); err != nil {
		return nil, err
	}
	if spec.Log == "" && spec.Stdio != worker.StdioInherit && l.cfg.WorkerLogs {
		// The launcher's own logs directory is made (and checked: owner, mode) like its records'.
		if _, err := state.Open(filepath.Join(l.StatePath, "logs")); err != nil {
			return nil, err
		}
		spec.Log = filepath.Join(l.StatePath, "logs", id+".log")
	}
	if spec.Log != "" {
		f, err := workerlog.Open(spec.Log, spec.LogMax) // fail here, not in the shim, when the log cannot be opened
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	workers, err := state.Open(l.WorkersDir())
	if err != nil {
		return nil, err
	}
	d := &detachedLaunch{spec: spec, id: id, env: env.Strings(), prof: prof, cwd: cwd, sb: sb, cred: who.Credential(), workers: workers, unlock: func() {}, onReceipt: stdio.OnReceipt}
	if spec.Key != "" {
		if d.unlock, err = l.holdKey(ctx, spec.Key, id); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// heldShim is a worker's shim, started and placed, waiting on its handshake for the worker's config.
type heldShim struct {
	p      placement.Placement
	child  *shim.Parent
	cgroup string // the shim's (and so the worker's) cgroup, relative to the v2 root
}

// holdShim starts the shim for worker id with files as its stdio (nil: /dev/null) and places it in p. On
// failure no shim is left; p is the caller's to release.
func (l *Launcher) holdShim(ctx context.Context, spec worker.Spec, id string, p placement.Placement, files []*os.File) (_ *heldShim, retErr error) {
	fd, err := p.CloneFD()
	if err != nil {
		return nil, fmt.Errorf("open worker cgroup: %w", err)
	}
	if fd != nil {
		defer fd.Close()
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	if fd != nil {
		attr.UseCgroupFD, attr.CgroupFD = true, int(fd.Fd())
	}
	child, err := shim.Start(hproc.Command{Path: l.cfg.Self, Args: []string{l.cfg.Self, shim.Arg}, Env: handshake.RoleEnv(), Files: files, Sys: attr})
	if err != nil {
		return nil, fmt.Errorf("start shim %s: %w", l.cfg.Self, err)
	}
	defer func() {
		if retErr != nil {
			child.Abort() // held on its handshake: it never starts the worker
		}
	}()
	if err := p.Place(ctx, spec, id, child.PID(), fd != nil); err != nil {
		return nil, err
	}
	return &heldShim{p: p, child: child, cgroup: p.CgroupPath(child.PID())}, nil
}

// runShim hands a held shim its worker's config and waits for its report: the worker's receipt, or why it
// did not start (the shim is then ended and reaped; the placement is the caller's to release).
func (l *Launcher) runShim(ctx context.Context, d *detachedLaunch, h *heldShim) (_ *worker.Receipt, retErr error) {
	defer func() {
		if retErr != nil {
			// Killed and reaped: a shim that reported a failure is exiting anyway, one that did not
			// answer must not start the worker later.
			h.child.Abort()
			// A shim stopped or killed while it recorded the worker, before it answered, left the records
			// (or a record's temp file) of a launch that failed: no receipt names them, and the caller's
			// cleanup ends the worker. Removed now that no shim can write them again.
			_ = d.workers.Discard(d.id)
			_ = d.workers.Discard(d.id + ".exit")
			_ = os.Remove(records.WorkerLock(d.workers.Path, d.id))
			_ = d.workers.Discard(records.LogPosName(d.id))
			_ = (&state.Dir{Path: l.LedgerPath}).Discard(d.id)
			if own := filepath.Join(l.StatePath, "logs", d.id+".log"); d.spec.Log == own {
				_ = os.Remove(own) // the launcher's own log of the worker (Config.WorkerLogs), made for it
			}
		}
	}()
	timeout, _ := d.spec.TimeoutDuration()
	grace, _ := d.spec.GraceDuration()
	sc := &shim.WorkerConfig{
		ID: d.id, Workers: d.workers.Path, Ledger: l.LedgerPath, Log: d.spec.Log, LogMax: d.spec.LogMax,
		InheritStdio: d.spec.Stdio == worker.StdioInherit,
		Timeout:      timeout, Grace: grace,
		Init:    handshake.Config{Argv: d.spec.Argv, Env: d.env, Cwd: d.cwd, Sandbox: d.sb},
		Receipt: l.receipt(d.spec, d.prof.Name, d.prof.Home, d.id, h.p),
		Cgroup:  h.cgroup,
	}
	if d.cred != nil && d.sb == nil {
		sc.Cred = &shim.Cred{UID: d.cred.Uid, GID: d.cred.Gid}
	}
	where := h.p.Describe()
	sc.Unit, sc.InvocationID = where.Unit, where.InvocationID
	if d.sb != nil {
		sc.Receipt.Landlock = view.LandlockMode(d.sb)
		sc.Receipt.KeptGroups = view.KeptGroups()
	}
	res := &shim.WorkerResult{}
	watch := shim.GuardExchange(ctx, h.child)
	err := h.child.Exchange(sc, res)
	if why := watch(); why != nil && err != nil {
		return nil, fmt.Errorf("%w (%w)", why, err)
	} else if why != nil {
		// Killed as it answered (ctx ended in between): the worker must not run on with its shim killed by
		// its own launcher. The launch fails like one the shim did not answer; the deferred cleanup ends it.
		return nil, fmt.Errorf("%w: the shim was killed as it answered", why)
	}
	if err != nil {
		return nil, err
	}
	if res.Failure != nil {
		return nil, shimFailure(res.Failure, d.workers.Path, l.LedgerPath)
	}
	l.LedgerAdded() // the shim has written the execution's ledger record
	if d.onReceipt != nil {
		d.onReceipt(res.Receipt) // before Done: a held worker runs only after it
	}
	l.IndexToken(res.Receipt)
	h.child.Done()
	go shim.ReapWhenEnded(h.child.Proc) // reap the shim if it ends while we live (no thread held meanwhile)
	h.p.Close()
	return res.Receipt, nil
}

// shimFailure words a shim's report that the worker did not start. A worker its shim could not record
// (its record, or its ledger record) names the directory; want of space there is ErrNoSpace.
func shimFailure(f *shim.Failure, workers, ledger string) error {
	dir := map[string]string{"record": "state directory " + workers, "ledger": "ledger directory " + ledger}[f.Stage]
	switch {
	case dir == "":
		return execError(&handshake.Error{Failure: handshake.Failure(*f)})
	case f.Errno == int(syscall.ENOSPC):
		return fmt.Errorf("%w: %s: %s (the worker was ended; free space there, or name another with --state-dir / --ledger-dir)", worker.ErrNoSpace, dir, f.Message)
	default:
		return fmt.Errorf("record the worker in the %s: %s (the worker was ended)", dir, f.Message)
	}
}

// receipt describes a worker about to start; setIdentity completes it once the worker runs.
func (l *Launcher) receipt(spec worker.Spec, profile, home, id string, p placement.Placement) *worker.Receipt {
	where := p.Describe()
	rc := &worker.Receipt{
		ID: id, Mode: p.Mode(), Profile: profile, Home: home, Argv: worker.RecordedArgv(worker.RedactArgv(spec.Argv, l.policy)),
		Limits: where.Limits, Key: spec.Key, Warning: where.Warning, Log: spec.Log, Sandbox: spec.Sandbox,
	}
	if spec.Sandbox {
		rc.Seccomp = worker.SeccompDefault
		if spec.Seccomp == worker.SeccompOff {
			rc.Seccomp = worker.SeccompOff
		}
	}
	return rc
}
