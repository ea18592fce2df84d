package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/handshake"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
	"github.com/hlaunch/hlaunch/internal/placement"
	hproc "github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/selfguard"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// childStart is one child to start: the target itself, or the shim that will start it.
type childStart struct {
	argv  []string // the target's argv
	env   []string // the target's environ
	cwd   string
	stdio worker.Stdio
	sb    *sandbox.Spec
	attr  syscall.SysProcAttr // session/pgrp settings chosen by the caller
	cred  *syscall.Credential // an unsandboxed worker's ids (identity.credential); nil keeps ours
}

// start starts c placed by p. The fast path is one clone3(CLONE_INTO_CGROUP)+execve of the target. A target
// that must be placed by PID first (v1 joins, a scope naming it) is held by the kernel at its traced exec
// and detached once placed; a sandboxed one is started as the init stub and released once placed (ADR
// 0001). It returns the running target (a sandbox's init).
func (l *Launcher) start(ctx context.Context, spec worker.Spec, id string, p placement.Placement, c childStart) (*hproc.Proc, error) {
	fd, err := p.CloneFD()
	if err != nil {
		return nil, fmt.Errorf("open worker cgroup: %w", err)
	}
	if fd != nil {
		defer fd.Close()
	}
	attr := c.attr
	if fd != nil {
		attr.UseCgroupFD = true
		attr.CgroupFD = int(fd.Fd())
	}
	files := []*os.File{c.stdio.Stdin, c.stdio.Stdout, c.stdio.Stderr}
	if c.sb == nil {
		// The worker drops to its ids in the child, before its exec (and, held, before its traced exec);
		// the stub a fallback starts drops the same way before it execs the target.
		attr.Credential = c.cred
		path, err := hproc.LookPathAs(c.argv[0], pathOf(c.env), c.cred)
		if err != nil {
			return nil, execError(err)
		}
		cmd := hproc.Command{Path: path, Args: c.argv, Env: c.env, Dir: c.cwd, Files: files, Sys: &attr}
		if !p.NeedsHold(fd != nil) {
			proc, err := hproc.Spawn(cmd)
			if err != nil {
				return nil, execError(err)
			}
			return proc, nil
		}
		proc, err := l.startHeld(ctx, spec, id, p, cmd, fd != nil)
		if !errors.Is(err, hproc.ErrNotHeld) {
			return proc, err
		}
		// It cannot be held at its exec (we lack CAP_SYS_PTRACE, run under strace -f or a debugger, or
		// ptrace is restricted): the stub holds it instead, at the cost of its Go start (ADR 0006).
	} else {
		c.sb.SysProcAttr(&attr)
		if err := selfguard.AllowIDMaps(); err != nil {
			return nil, err
		}
	}
	return l.startStub(ctx, spec, id, p, c, files, &attr, fd != nil)
}

// startStub starts c through the init stub (hlaunch __init), places the stub and releases it into the
// target. On failure no stub is left: its one cleanup kills and reaps it (one whose target failed to
// start is exiting anyway; one that did not answer must never reach the target).
func (l *Launcher) startStub(ctx context.Context, spec worker.Spec, id string, p placement.Placement, c childStart, files []*os.File, attr *syscall.SysProcAttr, cloned bool) (_ *hproc.Proc, retErr error) {
	child, err := handshake.Start(hproc.Command{Path: l.cfg.Self, Args: []string{l.cfg.Self, handshake.InitArg}, Env: handshake.RoleEnv(), Files: files, Sys: attr})
	if err != nil {
		return nil, fmt.Errorf("start init stub %s: %w", l.cfg.Self, err)
	}
	defer func() {
		if retErr != nil {
			child.Abort()
		}
	}()
	if err := p.Place(ctx, spec, id, child.PID(), cloned); err != nil {
		return nil, err
	}
	if err := child.Release(handshake.Config{Argv: c.argv, Env: c.env, Cwd: c.cwd, Sandbox: c.sb}); err != nil {
		return nil, execError(err)
	}
	return child.Proc, nil
}

// execError maps a failure to start the target to ErrCommandNotFound (127), ErrCannotRun (126) or, for
// failures before the exec (sandbox, chdir), a plain error (125).
func execError(err error) error {
	var hs *handshake.Error
	if errors.As(err, &hs) && hs.Stage != "lookup" && hs.Stage != "exec" {
		return fmt.Errorf("child setup failed: %w", err)
	}
	var pe *os.PathError
	isPath := errors.As(err, &pe)
	// "command not found: tool: no such file or directory", not "...: exec tool: ...": the sentinel
	// already says that it was the exec.
	if isPath && pe.Op == "exec" {
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			return &wrapped{fmt.Sprintf("%s: %s: %v", worker.ErrCommandNotFound, pe.Path, pe.Err), worker.ErrCommandNotFound, err}
		default:
			return &wrapped{fmt.Sprintf("%s: %s: %v", worker.ErrCannotRun, pe.Path, pe.Err), worker.ErrCannotRun, err}
		}
	}
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%w: %w", worker.ErrCommandNotFound, err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EPERM),
		errors.Is(err, unix.EISDIR), errors.Is(err, unix.ETXTBSY):
		return fmt.Errorf("%w: %w", worker.ErrCannotRun, err)
	}
	if isPath && pe.Op == "chdir" {
		return fmt.Errorf("%w: --cwd: %w", worker.ErrInvalid, err)
	}
	return fmt.Errorf("%w: %w", worker.ErrCannotRun, err)
}

// wrapped is an error with its own wording that still unwraps to the sentinel and the cause.
type wrapped struct {
	msg      string
	sentinel error
	cause    error
}

func (e *wrapped) Error() string   { return e.msg }
func (e *wrapped) Unwrap() []error { return []error{e.sentinel, e.cause} }

func pathOf(env []string) string { return worker.EnvLookup(env)("PATH") }

// startHeld starts cmd held at its exec (hproc.Hold), places it and lets it run. It returns an error
// wrapping hproc.ErrNotHeld, with nothing started, when it cannot be held that way.
func (l *Launcher) startHeld(ctx context.Context, spec worker.Spec, id string, p placement.Placement, cmd hproc.Command, cloned bool) (_ *hproc.Proc, retErr error) {
	held, err := hproc.Hold(cmd)
	if errors.Is(err, hproc.ErrNotHeld) {
		return nil, err
	}
	if err != nil {
		return nil, execError(err)
	}
	defer func() {
		if retErr != nil {
			held.Abort() // never released: it dies at its exec, before the target's first instruction
		}
	}()
	if err := p.Place(ctx, spec, id, held.Proc.Pid, cloned); err != nil {
		return nil, err
	}
	if err := held.Release(); err != nil {
		return nil, err
	}
	return held.Proc, nil
}
