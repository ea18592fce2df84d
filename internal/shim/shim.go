package shim

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hlaunch/hlaunch/internal/msgpipe"
	"github.com/hlaunch/hlaunch/internal/proc"
)

// Arg is the argv[1] that makes an hlaunch binary act as a worker's shim.
const Arg = "__shim"

// Config is what the launcher hands a worker's shim once the shim is placed. Init is the init stub's
// config (internal/handshake.Config) and Receipt the launcher's receipt type: the shim's protocol carries
// them without depending on either package.
type Config[Init, Receipt any] struct {
	ID           string        `json:"id"`
	Workers      string        `json:"workers"` // state directory of worker records
	Ledger       string        `json:"ledger"`
	Log          string        `json:"log,omitempty"`
	LogMax       int64         `json:"log_max,omitempty"`
	InheritStdio bool          `json:"inherit_stdio,omitempty"` // the worker gets the shim's own 0, 1, 2
	Timeout      time.Duration `json:"timeout,omitempty"`
	Grace        time.Duration `json:"grace,omitempty"`
	Cgroup       string        `json:"cgroup,omitempty"` // the worker's cgroup, v2-relative; "" when unplaced
	Unit         string        `json:"unit,omitempty"`
	InvocationID string        `json:"invocation_id,omitempty"`
	// Cred, when not nil, is the uid and gid an unsandboxed worker runs as, with no supplementary groups;
	// the shim itself keeps its own (it supervises and records the worker).
	Cred    *Cred    `json:"cred,omitempty"`
	Init    Init     `json:"init"`
	Receipt *Receipt `json:"receipt"` // without identity; the shim completes and records it
}

// Cred is a worker's uid and gid (Config.Cred).
type Cred struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// Result is the shim's answer: the worker's receipt, or why it did not start.
type Result[Receipt any] struct {
	Receipt *Receipt `json:"receipt,omitempty"`
	Failure *Failure `json:"failure,omitempty"`
}

// Failure is why the worker did not start; its fields (and JSON) are the init stub's handshake.Failure, to
// which it converts.
type Failure struct {
	Stage   string `json:"stage"` // the stub's stages, "record" when the worker's record failed, "ledger" its ledger record
	Errno   int    `json:"errno,omitempty"`
	Message string `json:"message"`
}

// Parent is the launcher's end: a started shim, blocked until Exchange sends it its Config.
type Parent struct {
	Proc *proc.Proc
	conn *msgpipe.Conn
}

// Start starts cmd as a shim. The caller sets Path to an hlaunch binary, Args to {path, Arg}, Sys, the
// three stdio Files and an empty Env. Start adds the protocol's pipes as fds 3 and 4.
func Start(cmd proc.Command) (*Parent, error) {
	c, err := msgpipe.Start(cmd)
	if err != nil {
		return nil, err
	}
	return &Parent{Proc: c.Proc, conn: c}, nil
}

// PID is the shim's process id.
func (p *Parent) PID() int { return p.Proc.Pid }

// Exchange sends cfg (a Config) and reads the shim's Result into res. On success the shim keeps running
// and fd 3 stays open until Done: the shim waits for that EOF before a held worker runs.
func (p *Parent) Exchange(cfg, res any) error {
	if err := p.conn.SendJSON(cfg); err != nil {
		p.conn.CloseReceive()
		return fmt.Errorf("shim: send config: %w", err)
	}
	err := p.conn.ReceiveJSON(res)
	p.conn.CloseReceive()
	if err != nil {
		return fmt.Errorf("shim: no answer: %w", err)
	}
	return nil
}

// Done closes fd 3 after a successful Exchange: the shim reads EOF and goes on.
func (p *Parent) Done() { p.conn.CloseSend() }

// Abort ends a shim that will not start its worker (or that failed to): killed and reaped.
func (p *Parent) Abort() { p.conn.Abort() }

// Child is the shim's end of the protocol.
type Child struct {
	config, result *os.File
}

// Open takes the shim's inherited fds 3 and 4.
func Open() *Child {
	cfg, res := msgpipe.ChildFiles("shim")
	return &Child{config: cfg, result: res}
}

// ReadConfig reads the launcher's Config into cfg; io.EOF when the launcher went away before sending it.
func (c *Child) ReadConfig(cfg any) error { return msgpipe.ReadJSON(c.config, cfg) }

// Answer writes the shim's Result and closes fd 4.
func (c *Child) Answer(res any) error {
	err := msgpipe.WriteJSON(c.result, res)
	c.result.Close()
	return err
}

// WaitDone blocks until the launcher closes fd 3 (Parent.Done, or its exit).
func (c *Child) WaitDone() { _, _ = io.Copy(io.Discard, c.config) }

// Close closes fd 3.
func (c *Child) Close() { c.config.Close() }
