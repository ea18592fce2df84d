package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/handshake"
	"github.com/hlaunch/hlaunch/nsenv"
	"golang.org/x/sys/unix"
)

// childStart is one child to start: the target itself, or the shim that will start it.
type childStart struct {
	argv  []string // the target's argv
	env   []string // the target's environ
	cwd   string
	stdio Stdio
	sb    *nsenv.Sandbox
	attr  syscall.SysProcAttr // session/pgrp settings chosen by the caller
}

// start starts c placed by p. The fast path is one clone3(CLONE_INTO_CGROUP)+execve of the target; a child
// that must be held (v1 joins, a scope naming its PID, a sandbox) is started as the init stub and released
// once placed. It returns the running target's *exec.Cmd.
func (l *Launcher) start(ctx context.Context, spec Spec, id string, p *placement, c childStart) (*exec.Cmd, error) {
	fd, err := p.cloneFD()
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
	cmd := &exec.Cmd{Stdin: c.stdio.Stdin, Stdout: c.stdio.Stdout, Stderr: c.stdio.Stderr, SysProcAttr: &attr}
	if !p.needsHold(fd != nil) && c.sb == nil {
		path, err := handshake.LookPath(c.argv[0], pathOf(c.env))
		if err != nil {
			return nil, execError(err)
		}
		cmd.Path, cmd.Args, cmd.Env, cmd.Dir = path, c.argv, c.env, c.cwd
		if err := cmd.Start(); err != nil {
			return nil, execError(err)
		}
		return cmd, nil
	}
	cmd.Path, cmd.Args, cmd.Env = l.cfg.Self, []string{l.cfg.Self, handshake.InitArg}, []string{}
	if c.sb != nil {
		c.sb.SysProcAttr(cmd.SysProcAttr)
	}
	child, err := handshake.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start init stub %s: %w", l.cfg.Self, err)
	}
	if err := p.place(ctx, spec, id, child.PID(), fd != nil); err != nil {
		child.Abort()
		return nil, err
	}
	if err := child.Release(handshake.Config{Argv: c.argv, Env: c.env, Cwd: c.cwd, Sandbox: c.sb}); err != nil {
		_ = cmd.Wait()
		return nil, execError(err)
	}
	return cmd, nil
}

// execError maps a failure to start the target to ErrCommandNotFound (127), ErrCannotRun (126) or, for
// failures before the exec (sandbox, chdir), a plain error (125).
func execError(err error) error {
	var hs *handshake.Error
	if errors.As(err, &hs) && hs.Stage != "lookup" && hs.Stage != "exec" {
		return fmt.Errorf("child setup failed: %w", err)
	}
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%w: %w", ErrCommandNotFound, err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EPERM),
		errors.Is(err, unix.EISDIR), errors.Is(err, unix.ETXTBSY):
		return fmt.Errorf("%w: %w", ErrCannotRun, err)
	}
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return fmt.Errorf("%w: --cwd: %w", ErrInvalid, err)
	}
	return fmt.Errorf("%w: %w", ErrCannotRun, err)
}

func pathOf(env []string) string { return envLookup(env)("PATH") }

// waitCode turns a finished child's state into a shell-style exit code: 128+N when signal N killed it.
func waitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
