package proc

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Command is one child to start with Spawn.
type Command struct {
	Path string   // the program, already looked up
	Args []string // argv, Args[0] included
	Env  []string // the whole environ; nil is empty
	Dir  string   // working directory; empty keeps the parent's
	// Files become the child's descriptors 0, 1, 2, ...; a nil entry is /dev/null. Nothing else is
	// inherited: every other descriptor is close-on-exec (MaybeRunInternal marks the inherited ones).
	Files []*os.File
	Sys   *syscall.SysProcAttr
}

// Proc is a started child, owned by the parent until Wait reaps it.
//
// Spawn uses syscall.ForkExec, not os/exec: os.StartProcess probes pidfd support once per process by
// forking a throw-away child, and every hlaunch process (the CLI, the shim) starts exactly one child, so
// the probe would be paid on every launch (ADR 0006).
type Proc struct {
	Pid int

	mu     sync.Mutex
	reaped bool
	// status, when set (ReportedBy), is where the child may leave the status Wait returns.
	status *os.File
}

// Spawn starts c. Errors from the kernel's execve (ENOENT, EACCES, ENOEXEC) are returned as they are. A
// child that drops to another uid (c.Sys.Credential) starts with a fresh, empty session keyring of its
// own rather than ours, and then the calling goroutine stays locked to its thread (spawnDropped).
func Spawn(c Command) (*Proc, error) {
	if dropsUID(c.Sys) {
		return spawnDropped(c)
	}
	return forkExec(c)
}

// forkExec starts c from the calling thread.
func forkExec(c Command) (*Proc, error) {
	files := make([]uintptr, len(c.Files))
	var devnull *os.File
	for i, f := range c.Files {
		if f == nil {
			if devnull == nil {
				var err error
				if devnull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
					return nil, err
				}
				defer devnull.Close()
			}
			f = devnull
		}
		files[i] = f.Fd()
	}
	env := c.Env
	if env == nil {
		env = []string{}
	}
	pid, err := syscall.ForkExec(c.Path, c.Args, &syscall.ProcAttr{Dir: c.Dir, Env: env, Files: files, Sys: c.Sys})
	if err != nil {
		return nil, &os.PathError{Op: "fork/exec", Path: c.Path, Err: err}
	}
	return &Proc{Pid: pid}, nil
}

// Signal sends sig unless the child has been reaped: until Wait has reaped it, its PID cannot name anyone
// else, so the signal cannot reach a stranger.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return os.ErrProcessDone
	}
	return syscall.Kill(p.Pid, sig)
}

// Wait waits for the child to end, reaps it and returns its status.
func (p *Proc) Wait() (syscall.WaitStatus, error) {
	// Wait without reaping first, so Signal can never race a reap (the same dance os.Process does).
	var info unix.Siginfo
	if err := linux.RetryErr(func() error { return unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) }); err != nil {
		return 0, os.NewSyscallError("waitid", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var ws syscall.WaitStatus
	if _, err := linux.Retry(func() (int, error) { return syscall.Wait4(p.Pid, &ws, 0, nil) }); err != nil {
		return 0, fmt.Errorf("wait4 %d: %w", p.Pid, err)
	}
	p.reaped = true
	if p.status != nil {
		if reported, ok := readStatus(p.status); ok {
			ws = reported
		}
		p.status.Close()
		p.status = nil
	}
	return ws, nil
}

// ReportedBy makes f, the read end of a pipe whose only write end the child holds, the source of the
// status Wait returns: when the child wrote one (WriteStatus) before it ended, Wait returns that status in
// place of the child's own. A sandbox's init reports its target's end this way: a pid namespace's init
// cannot die of a signal sent from inside it, so its own status could only translate a signal into
// 128+N. Wait closes f. Call it before Wait.
func (p *Proc) ReportedBy(f *os.File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = f
}

// WriteStatus is the child's side of ReportedBy: it writes ws to f, in the encoding readStatus reads.
func WriteStatus(f *os.File, ws syscall.WaitStatus) error {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(ws))
	_, err := f.Write(b[:])
	return err
}

// readStatus reads a status WriteStatus wrote to f's pipe, without blocking: the child that held the
// write end has been reaped, so the pipe holds all it ever will (nothing when the child ended before it
// wrote one, which leaves the child's own status in force).
func readStatus(f *os.File) (syscall.WaitStatus, bool) {
	fd := int(f.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		return 0, false
	}
	var b [4]byte
	n, err := linux.Retry(func() (int, error) { return unix.Read(fd, b[:]) })
	if err != nil || n != len(b) {
		return 0, false
	}
	return syscall.WaitStatus(binary.BigEndian.Uint32(b[:])), true
}

// ExitCode is a shell's view of a wait status: the exit code, or 128+N when signal N ended the child.
func ExitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
