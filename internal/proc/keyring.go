package proc

import (
	"errors"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// dropsUID reports whether the child sys describes runs as another uid than ours (an unsandboxed worker
// of a root launcher, which runs as its home's owner). Such a child must not keep our session keyring:
// possessing a keyring grants the possessor's permissions on every key in it whatever the uid, and a
// child keeps the session keyring of the thread that forked it.
func dropsUID(sys *syscall.SysProcAttr) bool {
	return sys != nil && sys.Credential != nil && int(sys.Credential.Uid) != os.Geteuid()
}

// joinFreshSessionKeyring gives the calling thread, which the caller has locked to its goroutine for
// good (the thread must never serve another goroutine after it), a new, empty, anonymous session keyring
// that a child it forks inherits instead of ours. A kernel without keyrings (ENOSYS) has none to leak.
func joinFreshSessionKeyring() error {
	_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if errno != 0 && !errors.Is(errno, unix.ENOSYS) {
		return os.NewSyscallError("keyctl(KEYCTL_JOIN_SESSION_KEYRING)", errno)
	}
	return nil
}

// spawnDropped is Spawn for a child that drops to another uid: it forks from a thread of its own whose
// session keyring is a fresh one. The thread stays, parked, until the child is reaped (a parent-death
// signal is the forking thread's death, not the process's), and then ends with its goroutine, so no other
// goroutine ever runs on it.
func spawnDropped(c Command) (*Proc, error) {
	type started struct {
		p   *Proc
		err error
	}
	ch := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := joinFreshSessionKeyring(); err != nil {
			ch <- started{err: err}
			return
		}
		p, err := forkExec(c)
		if err != nil {
			ch <- started{err: err}
			return
		}
		p.reapedCh = make(chan struct{})
		ch <- started{p: p}
		<-p.reapedCh
	}()
	s := <-ch
	return s.p, s.err
}
