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

// spawnDropped is Spawn for a child that drops to another uid: it forks from the calling thread after
// that thread joined a fresh session keyring, and locks the calling goroutine to the thread for good (no
// other goroutine ever runs with that keyring; the runtime ends the thread with the goroutine). The child's
// parent-death signal, if any, therefore comes when the calling goroutine ends, as for a caller that
// locked its thread to keep it (the foreground Run); no thread is started for the fork.
func spawnDropped(c Command) (*Proc, error) {
	runtime.LockOSThread()
	if err := joinFreshSessionKeyring(); err != nil {
		runtime.UnlockOSThread() // the keyring is unchanged: the thread may serve others
		return nil, err
	}
	return forkExec(c)
}
