package handshake

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/proc"
)

// InitArg is the argv[1] that makes an hlaunch binary act as the stub.
const InitArg = "__init"

// Child is a started stub, blocked until Release sends it its Config.
type Child struct {
	Proc *proc.Proc
	cfgW *os.File
	resR *os.File
}

// Start starts cmd as the stub (or a shim). The caller sets Path to an hlaunch binary, Args to
// {path, InitArg}, Sys, the three stdio Files and Env (the stub's env should be empty: the target's
// environ travels in the Config). Start adds the two protocol pipes as fds 3 and 4.
func Start(cmd proc.Command) (*Child, error) {
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("handshake pipe: %w", err)
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return nil, fmt.Errorf("handshake pipe: %w", err)
	}
	files := make([]*os.File, 3, 5)
	copy(files, cmd.Files)
	cmd.Files = append(files, cfgR, resW)
	p, err := proc.Spawn(cmd)
	// The child holds its own copies now; ours must go so EOF means what the protocol says.
	cfgR.Close()
	resW.Close()
	if err != nil {
		cfgW.Close()
		resR.Close()
		return nil, err
	}
	return &Child{Proc: p, cfgW: cfgW, resR: resR}, nil
}

// PID is the stub's (and, after Release, the target's) process id.
func (c *Child) PID() int { return c.Proc.Pid }

// Release sends cfg, which lets the stub go on to exec the target, and waits for the outcome: nil once the
// target program is running, an *Error (wrapping ErrFailed and the errno) when the stub reported a failure.
// On any error the stub has exited or is about to; the caller still Waits for it.
func (c *Child) Release(cfg Config) error {
	err := WriteConfig(c.cfgW, cfg)
	c.cfgW.Close()
	c.cfgW = nil
	if err != nil {
		c.resR.Close()
		return fmt.Errorf("handshake: send config: %w", err)
	}
	var f Failure
	err = ReadMsg(c.resR, &f)
	c.resR.Close()
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
func (c *Child) Abort() {
	if c.cfgW != nil {
		c.cfgW.Close()
		c.cfgW = nil
	}
	c.resR.Close()
	_ = c.Proc.Signal(syscall.SIGKILL)
	_, _ = c.Proc.Wait()
}

// Exchange sends msg and reads one reply message into reply: the shim's variant of the protocol, where the
// child answers (with the worker's identity) instead of exec'ing. On success the child keeps running, and
// the config pipe stays open until Done: the child may wait for that EOF before it records anything that
// must come after the parent's own records.
func (c *Child) Exchange(msg, reply any) error {
	err := WriteMsg(c.cfgW, msg)
	if err != nil {
		c.resR.Close()
		return fmt.Errorf("handshake: send config: %w", err)
	}
	err = ReadMsg(c.resR, reply)
	c.resR.Close()
	if err != nil {
		return fmt.Errorf("handshake: no answer from child: %w", err)
	}
	return nil
}

// Done closes the config pipe after a successful Exchange: the child reads EOF and goes on.
func (c *Child) Done() {
	if c.cfgW != nil {
		c.cfgW.Close()
		c.cfgW = nil
	}
}
