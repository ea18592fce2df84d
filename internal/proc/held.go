package proc

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Held is a target that has been exec'd but has not run its first instruction: it was started traced and
// sits in the stop the kernel makes at a traced execve. Its parent places it (a scope naming its PID, v1
// cgroup.procs writes) and then releases it. No stub is started: a held launch without a sandbox does not
// pay the stub's Go start-up (ADR 0001, ADR 0006).
//
// The tracer is the thread that forked, so Hold locks the calling goroutine to its thread until Release or
// Abort, which must be called from the same goroutine. Once Hold returns, the parent's death kills the
// child before it can run (PTRACE_O_EXITKILL).
type Held struct {
	Proc *Proc
	done bool
}

// ErrNotHeld says that Hold cannot hold this child: the calling thread lacks CAP_SYS_PTRACE (the kernel
// does not honour set-user-ID bits or file capabilities at an exec traced by a tracer without it, so a
// held `sudo` or `ping` would run unprivileged), or the kernel refused to trace it (EPERM from
// PTRACE_TRACEME: the caller is traced itself with its children followed, as under `strace -f`, or ptrace
// is restricted by Yama or seccomp). Nothing was started; the caller holds the child another way. An
// execve that fails with EPERM gives the same error, and the other way then reports it.
var ErrNotHeld = errors.New("the child cannot be held at its exec")

// ErrEndedBeforeExec says that a held child ended before its exec: a signal that reached it first (passed on
// as it would have been untraced) killed it.
var ErrEndedBeforeExec = errors.New("the child ended before its exec")

// Hold starts c (Path already looked up) traced and returns once its execve has succeeded and it is stopped
// before the program's first instruction. Exec errors are returned as Spawn returns them, EPERM wrapped
// with ErrNotHeld; on any error no child is left.
func Hold(c Command) (*Held, error) {
	runtime.LockOSThread()
	if ok, err := canTraceExec(); !ok {
		runtime.UnlockOSThread()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotHeld, err)
		}
		return nil, fmt.Errorf("%w: no CAP_SYS_PTRACE", ErrNotHeld)
	}
	sys := syscall.SysProcAttr{}
	if c.Sys != nil {
		sys = *c.Sys
	}
	sys.Ptrace = true
	c.Sys = &sys
	if dropsUID(c.Sys) {
		// The tracer must be this thread, so it takes the fresh session keyring (Spawn's spawnDropped) and
		// stays this goroutine's for good: locked once more, never unlocked, it ends with the goroutine.
		runtime.LockOSThread()
		if err := joinFreshSessionKeyring(); err != nil {
			runtime.UnlockOSThread() // the keyring is unchanged: the thread may serve others
			runtime.UnlockOSThread()
			return nil, err
		}
	}
	proc, err := forkExec(c)
	if err != nil {
		runtime.UnlockOSThread()
		if errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("%w: %w", ErrNotHeld, err)
		}
		return nil, err
	}
	h := &Held{Proc: proc}
	if err := h.awaitExec(); err != nil {
		h.Abort()
		return nil, err
	}
	return h, nil
}

// awaitExec waits for the stop at the exec and makes our death fatal to the child. A signal that reached
// the child before its exec (a terminal's ^C to its process group) is passed on as it would have been
// untraced; stop signals are dropped, since a traced child cannot be left in a group stop.
func (h *Held) awaitExec() error {
	for {
		var ws syscall.WaitStatus
		_, err := linux.Retry(func() (int, error) { return syscall.Wait4(h.Proc.Pid, &ws, 0, nil) })
		if err != nil {
			return fmt.Errorf("wait for held child %d: %w", h.Proc.Pid, err)
		}
		if !ws.Stopped() {
			h.Proc.reaped = true // a signal passed on below ended it
			return fmt.Errorf("%w (%s)", ErrEndedBeforeExec, describe(ws))
		}
		sig := ws.StopSignal()
		if sig == syscall.SIGTRAP {
			// The kernel sends SIGKILL to a tracee with this option before it detaches a dying
			// tracer's tracees, so the target cannot run unplaced once this call has returned.
			if err := syscall.PtraceSetOptions(h.Proc.Pid, unix.PTRACE_O_EXITKILL); err != nil {
				return fmt.Errorf("ptrace(SETOPTIONS) %d: %w", h.Proc.Pid, err)
			}
			return nil
		}
		switch sig {
		case syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
			sig = 0
		}
		if err := syscall.PtraceCont(h.Proc.Pid, int(sig)); err != nil {
			return fmt.Errorf("ptrace(CONT) %d: %w", h.Proc.Pid, err)
		}
	}
}

// Release lets the target run: the tracer detaches and the exec's SIGTRAP is dropped. If the detach fails,
// the child is killed and reaped instead.
func (h *Held) Release() error {
	if h.done {
		return errors.New("proc: held child released twice")
	}
	if err := syscall.PtraceDetach(h.Proc.Pid); err != nil {
		h.Abort()
		return fmt.Errorf("ptrace(DETACH) %d: %w", h.Proc.Pid, err)
	}
	h.done = true
	runtime.UnlockOSThread()
	return nil
}

// Abort kills a held child that will not be released and reaps it: it never runs an instruction of the
// target.
func (h *Held) Abort() {
	if h.done {
		return
	}
	h.done = true
	defer runtime.UnlockOSThread()
	if h.Proc.Signal(syscall.SIGKILL) == nil {
		_, _ = h.Proc.Wait()
	}
}

// canTraceExec reports whether the calling thread (the tracer-to-be) has CAP_SYS_PTRACE in its effective
// set, which a traced exec needs to keep the program's set-user-ID and file capabilities.
func canTraceExec() (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("capget: %w", err)
	}
	return data[unix.CAP_SYS_PTRACE/32].Effective&(1<<(unix.CAP_SYS_PTRACE%32)) != 0, nil
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}
