package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/fingerprint"
	"github.com/hlaunch/hlaunch/internal/handshake"
	"github.com/hlaunch/hlaunch/internal/state"
)

// ShimArg is the argv[1] that makes an hlaunch binary act as a worker's shim.
const ShimArg = "__shim"

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
	spec = spec.withDefaults(l.cfg.Defaults)
	spec.Detach = true
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	env, prof, err := l.compose(spec)
	if err != nil {
		return nil, err
	}
	cwd, err := l.cwd(spec)
	if err != nil {
		return nil, err
	}
	sb, err := l.sandbox(spec, prof, cwd)
	if err != nil {
		return nil, err
	}
	if spec.Stdio == StdioInherit && (stdio.Stdin == nil || stdio.Stdout == nil || stdio.Stderr == nil) {
		return nil, fmt.Errorf("%w: stdio inherit: the caller passed no stdin, stdout and stderr", ErrInvalid)
	}
	id := newID()
	if spec.Log == "" && spec.Stdio != StdioInherit && l.cfg.WorkerLogs {
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
	if spec.Key != "" {
		unlock, err := l.holdKey(ctx, spec.Key)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	p, err := l.prepare(ctx, spec, id)
	if err != nil {
		return nil, err
	}
	if p.warning != "" {
		fmt.Fprintln(l.cfg.Stderr, p.warning)
	}
	timeout, _ := spec.timeout()
	grace, _ := spec.grace()
	sc := shimConfig{
		ID: id, Workers: workers.Path, Ledger: l.ledger, Log: spec.Log, LogMax: spec.LogMax,
		InheritStdio: spec.Stdio == StdioInherit,
		Timeout:      timeout, Grace: grace,
		Init:    handshake.Config{Argv: spec.Argv, Env: env.Strings(), Cwd: cwd, Sandbox: sb},
		Receipt: l.receipt(spec, prof.Name, prof.Home, id, p),
	}
	res, child, err := l.startShim(ctx, spec, id, p, &sc, stdio)
	if err != nil {
		p.release(context.WithoutCancel(ctx))
		return nil, err
	}
	child.Done()
	go child.Proc.Wait() //nolint:errcheck // reap the shim if it ends while we live; its status is its own record
	p.close()
	return res.Receipt, nil
}

// startShim starts the shim, places it, hands it the worker's config and waits for its report: the
// worker's identity, or why it did not start.
func (l *Launcher) startShim(ctx context.Context, spec Spec, id string, p *placement, sc *shimConfig, stdio Stdio) (*shimResult, *handshake.Child, error) {
	fd, err := p.cloneFD()
	if err != nil {
		return nil, nil, fmt.Errorf("open worker cgroup: %w", err)
	}
	if fd != nil {
		defer fd.Close()
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	if fd != nil {
		attr.UseCgroupFD, attr.CgroupFD = true, int(fd.Fd())
	}
	// The shim's own stdio is /dev/null, or the worker's descriptors when the worker inherits them.
	var files []*os.File
	if sc.InheritStdio {
		files = []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr}
	}
	child, err := handshake.Start(handshake.Command{Path: l.cfg.Self, Args: []string{l.cfg.Self, ShimArg}, Files: files, Sys: attr})
	if err != nil {
		return nil, nil, fmt.Errorf("start shim %s: %w", l.cfg.Self, err)
	}
	if err := p.place(ctx, spec, id, child.PID(), fd != nil); err != nil {
		child.Abort()
		return nil, nil, err
	}
	sc.Cgroup = l.cgroupPath(p, child.PID())
	sc.Unit, sc.InvocationID = p.unit, p.invID
	res := &shimResult{}
	if err := child.Exchange(sc, res); err != nil {
		child.Abort()
		return nil, nil, err
	}
	if res.Failure != nil {
		_, _ = child.Proc.Wait()
		return nil, nil, execError(&handshake.Error{Failure: *res.Failure})
	}
	return res, child, nil
}

// receipt describes a worker about to start; setIdentity completes it once the worker runs.
func (l *Launcher) receipt(spec Spec, profile, home, id string, p *placement) *Receipt {
	return &Receipt{
		ID: id, Mode: p.mode, Profile: profile, Home: home, Argv: redactArgv(spec.Argv, l.policy),
		Limits: p.limits, Key: spec.Key, Warning: p.warning, Log: spec.Log, Sandbox: spec.Sandbox,
	}
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
