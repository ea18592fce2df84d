package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/handshake"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
	hproc "github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/shim"
	"github.com/hlaunch/hlaunch/internal/state"
)

// Start starts spec detached and returns its receipt once the target runs. The worker's parent is a shim
// placed with it (in its cgroup or scope, in its own session), never in the caller's cgroup, session or
// process group. The shim writes the worker's record before it answers, so a worker never runs without
// one even when the caller dies mid-launch; it records the exit status and enforces the timeout even when
// the caller is gone.
func (l *Launcher) Start(ctx context.Context, spec Spec) (*Receipt, error) {
	return l.StartWith(ctx, spec, Stdio{})
}

// StartWith is Start for a spec with Stdio "inherit": stdio are the descriptors the worker gets (nil
// fields are refused for such a spec; they are ignored otherwise). The caller keeps its own copies.
func (l *Launcher) StartWith(ctx context.Context, spec Spec, stdio Stdio) (*Receipt, error) {
	return l.StartWithID(ctx, spec, stdio, newID())
}

// StartWithID is StartWith for a worker id the caller chose before the launch (NewWorkerID), so that it can
// remember the launch under that id first: a sidecar's idempotent spawn finds the worker again by it after
// a crash mid-launch. An id that is not a worker id, or one that names a record already, is refused.
func (l *Launcher) StartWithID(ctx context.Context, spec Spec, stdio Stdio, id string) (_ *Receipt, retErr error) {
	if !isID(id) {
		return nil, invalid(fmt.Errorf("worker id %q: not a worker id (w-<12 hex>)", id))
	}
	if _, err := os.Lstat(filepath.Join(l.workersDir(), id+".json")); err == nil {
		return nil, invalid(fmt.Errorf("worker id %q: already recorded", id))
	}
	d, err := l.detached(ctx, spec, stdio, id)
	if err != nil {
		return nil, err
	}
	defer d.unlock()
	p, err := l.prepare(ctx, d.spec, id)
	if err != nil {
		return nil, err
	}
	// The one cleanup of a failed start: what prepare made is released (the shim, if any, is ended by
	// holdShim or runShim first).
	defer func() {
		if retErr != nil {
			p.release(context.WithoutCancel(ctx))
		}
	}()
	if w := p.describe().warning; w != "" {
		fmt.Fprintln(l.cfg.Stderr, w)
	}
	// The shim's own stdio is /dev/null, or the worker's descriptors when the worker inherits them.
	var files []*os.File
	if d.spec.Stdio == StdioInherit {
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
	spec    Spec
	id      string
	env     []string
	prof    *profile.Profile
	cwd     string
	sb      *sandbox.Spec
	cred    *syscall.Credential // an unsandboxed worker's ids (identity.credential); nil keeps the shim's
	workers *state.Dir
	unlock  func() // releases the key lock (a no-op without --key)
	// onReceipt is Stdio.OnReceipt: called with the receipt before the worker may run.
	onReceipt func(*Receipt)
}

// detached checks spec for a detached launch as worker id and takes its key lock.
func (l *Launcher) detached(ctx context.Context, spec Spec, stdio Stdio, id string) (*detachedLaunch, error) {
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
	if spec.Stdio == StdioInherit && (stdio.Stdin == nil || stdio.Stdout == nil || stdio.Stderr == nil) {
		return nil, fmt.Errorf("%w: stdio inherit: the caller passed no stdin, stdout and stderr", ErrInvalid)
	}
	if err := noTerminal(spec, stdio, who.otherUID()); err != nil {
		return nil, err
	}
	// Before anything is made for it: a spawn never takes the space running workers end with.
	if err := checkRecordSpace("state directory", l.state); err != nil {
		return nil, err
	}
	if err := checkRecordSpace("ledger directory", l.ledger); err != nil {
		return nil, err
	}
	if spec.Log == "" && spec.Stdio != StdioInherit && l.cfg.WorkerLogs {
		// The launcher's own logs directory is made (and checked: owner, mode) like its records'.
		if _, err := state.Open(filepath.Join(l.state, "logs")); err != nil {
			return nil, err
		}
		spec.Log = filepath.Join(l.state, "logs", id+".log")
	}
	if spec.Log != "" {
		f, err := openLog(spec.Log, spec.LogMax) // fail here, not in the shim, when the log cannot be opened
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	workers, err := state.Open(l.workersDir())
	if err != nil {
		return nil, err
	}
	d := &detachedLaunch{spec: spec, id: id, env: env.Strings(), prof: prof, cwd: cwd, sb: sb, cred: who.credential(), workers: workers, unlock: func() {}, onReceipt: stdio.OnReceipt}
	if spec.Key != "" {
		if d.unlock, err = l.holdKey(ctx, spec.Key, id); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// heldShim is a worker's shim, started and placed, waiting on its handshake for the worker's config.
type heldShim struct {
	p      placement
	child  *shim.Parent
	cgroup string // the shim's (and so the worker's) cgroup, relative to the v2 root
}

// holdShim starts the shim for worker id with files as its stdio (nil: /dev/null) and places it in p. On
// failure no shim is left; p is the caller's to release.
func (l *Launcher) holdShim(ctx context.Context, spec Spec, id string, p placement, files []*os.File) (_ *heldShim, retErr error) {
	fd, err := p.cloneFD()
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
	child, err := shim.Start(hproc.Command{Path: l.cfg.Self, Args: []string{l.cfg.Self, shim.Arg}, Files: files, Sys: attr})
	if err != nil {
		return nil, fmt.Errorf("start shim %s: %w", l.cfg.Self, err)
	}
	defer func() {
		if retErr != nil {
			child.Abort() // held on its handshake: it never starts the worker
		}
	}()
	if err := p.place(ctx, spec, id, child.PID(), fd != nil); err != nil {
		return nil, err
	}
	return &heldShim{p: p, child: child, cgroup: p.cgroupPath(child.PID())}, nil
}

// runShim hands a held shim its worker's config and waits for its report: the worker's receipt, or why it
// did not start (the shim is then ended and reaped; the placement is the caller's to release).
func (l *Launcher) runShim(ctx context.Context, d *detachedLaunch, h *heldShim) (_ *Receipt, retErr error) {
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
			_ = os.Remove(workerLock(d.workers.Path, d.id))
			_ = d.workers.Discard(logPosName(d.id))
			_ = (&state.Dir{Path: l.ledger}).Discard(d.id)
			if own := filepath.Join(l.state, "logs", d.id+".log"); d.spec.Log == own {
				_ = os.Remove(own) // the launcher's own log of the worker (Config.WorkerLogs), made for it
			}
		}
	}()
	timeout, _ := d.spec.timeout()
	grace, _ := d.spec.grace()
	sc := &shimConfig{
		ID: d.id, Workers: d.workers.Path, Ledger: l.ledger, Log: d.spec.Log, LogMax: d.spec.LogMax,
		InheritStdio: d.spec.Stdio == StdioInherit,
		Timeout:      timeout, Grace: grace,
		Init:    handshake.Config{Argv: d.spec.Argv, Env: d.env, Cwd: d.cwd, Sandbox: d.sb},
		Receipt: l.receipt(d.spec, d.prof.Name, d.prof.Home, d.id, h.p),
		Cgroup:  h.cgroup,
	}
	if d.cred != nil && d.sb == nil {
		sc.Cred = &shim.Cred{UID: d.cred.Uid, GID: d.cred.Gid}
	}
	where := h.p.describe()
	sc.Unit, sc.InvocationID = where.unit, where.invocationID
	if d.sb != nil {
		sc.Receipt.Landlock = landlockMode(d.sb)
		sc.Receipt.KeptGroups = keptGroups()
	}
	res := &shimResult{}
	watch := guardExchange(ctx, h.child)
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
		return nil, shimFailure(res.Failure, d.workers.Path, l.ledger)
	}
	l.ledgerIdx.added() // the shim has written the execution's ledger record
	if d.onReceipt != nil {
		d.onReceipt(res.Receipt) // before Done: a held worker runs only after it
	}
	l.indexToken(res.Receipt)
	h.child.Done()
	go reapWhenEnded(h.child.Proc) // reap the shim if it ends while we live (no thread held meanwhile)
	h.p.close()
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
		return fmt.Errorf("%w: %s: %s (the worker was ended; free space there, or name another with --state-dir / --ledger-dir)", ErrNoSpace, dir, f.Message)
	default:
		return fmt.Errorf("record the worker in the %s: %s (the worker was ended)", dir, f.Message)
	}
}

// receipt describes a worker about to start; setIdentity completes it once the worker runs.
func (l *Launcher) receipt(spec Spec, profile, home, id string, p placement) *Receipt {
	where := p.describe()
	rc := &Receipt{
		ID: id, Mode: p.mode(), Profile: profile, Home: home, Argv: recordedArgv(redactArgv(spec.Argv, l.policy)),
		Limits: where.limits, Key: spec.Key, Warning: where.warning, Log: spec.Log, Sandbox: spec.Sandbox,
	}
	if spec.Sandbox {
		rc.Seccomp = SeccompDefault
		if spec.Seccomp == SeccompOff {
			rc.Seccomp = SeccompOff
		}
	}
	return rc
}

// setIdentity fills in who the worker is.
func (rc *Receipt) setIdentity(ident fingerprint.Identity, unit, invocationID string) {
	rc.Token, rc.PID, rc.Cgroup, rc.CgroupID = ident.Token(), ident.PID, ident.Cgroup, ident.CgroupID
	rc.Unit, rc.InvocationID = unit, invocationID
	rc.BootID, rc.MachineID, rc.StartTime = ident.BootID, ident.MachineID, ident.Start
	rc.InstantiationEpoch, rc.Fingerprint = ident.Epoch(), ident.Fingerprint()
	rc.Verification = "verified"
	if ident.Unverified {
		rc.Verification = "unverified"
	}
	rc.StartedAt = time.Now().UTC().Format(time.RFC3339Nano)
}

func (l *Launcher) workersDir() string { return l.state + "/workers" }

// WorkersDir is the directory that holds one record per detached worker; a watcher (the sidecar) may
// watch it for changes. Its files are the launcher's: read them through Get and List.
func (l *Launcher) WorkersDir() string { return l.workersDir() }
