package handshake

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hlaunch/hlaunch/internal/msgpipe"
	"github.com/hlaunch/hlaunch/internal/proc"
)

// InitArg is the argv[1] that makes an hlaunch binary act as the stub.
const InitArg = "__init"

// Child is a started stub, blocked until Release sends it its Config.
type Child struct {
	Proc *proc.Proc
	conn *msgpipe.Conn
}

// RoleEnv is the whole environ of a process hlaunch re-executes itself as (the init stub, the shim): one P
// from the runtime's start, so that it neither counts more threads against the worker's --pids nor keeps
// the memory of the Ps it would make on a host of many CPUs and drop at once (runtime.GOMAXPROCS after the
// start frees neither). It names nothing of the launcher's: a target's environ travels in its Config.
func RoleEnv() []string { return []string{"GOMAXPROCS=1"} }

// Start starts cmd as the stub. The caller sets Path to an hlaunch binary, Args to {path, InitArg}, Sys,
// the three stdio Files and Env (the stub's env should be empty: the target's environ travels in the
// Config). Start adds the two protocol pipes as fds 3 and 4 and the status pipe as fd 5: a stub that stays
// as a sandbox's init reports its target's wait status there, so Proc.Wait returns the target's own end
// (a signal as a signal), never the init's translation of it.
func Start(cmd proc.Command) (*Child, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("handshake: status pipe: %w", err)
	}
	files := make([]*os.File, 3, 4)
	copy(files, cmd.Files)
	cmd.Files = append(files, statusW)
	c, err := msgpipe.Start(cmd)
	statusW.Close() // the stub's alone now: EOF once it has ended
	if err != nil {
		statusR.Close()
		return nil, err
	}
	c.Proc.ReportedBy(statusR)
	return &Child{Proc: c.Proc, conn: c}, nil
}

// PID is the stub's (and, after Release, the target's) process id.
func (c *Child) PID() int { return c.Proc.Pid }

// Release sends cfg, which lets the stub go on to exec the target, and waits for the outcome: nil once the
// target program is running, an *Error (wrapping ErrFailed and the errno) when the stub reported a failure.
// On any error the stub has exited or is about to; the caller still Waits for it.
func (c *Child) Release(cfg Config) error {
	b, err := cfg.MarshalBinary()
	if err == nil {
		err = c.conn.Send(b)
	}
	c.conn.CloseSend()
	if err != nil {
		c.conn.CloseReceive()
		return fmt.Errorf("handshake: send config: %w", err)
	}
	var f Failure
	err = c.conn.ReceiveJSON(&f)
	c.conn.CloseReceive()
	switch {
	case errors.Is(err, io.EOF):
		return nil // the result pipe closed on exec: the target runs
	case err != nil:
		return fmt.Errorf("handshake: read result: %w", err)
	default:
		return &Error{f}
	}
}

// Abort ends a stub that will not be released; it never reaches the target program.
func (c *Child) Abort() { c.conn.Abort() }
