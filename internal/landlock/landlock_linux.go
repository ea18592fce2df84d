package landlock

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ScopeABI is the first Landlock ABI with the scopes Restrict sets.
const ScopeABI = 6

// scopes are the Landlock scopes every sandboxed worker gets.
const scopes = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL

// ErrUnsupported is returned when the kernel has no Landlock scopes (no Landlock, or an ABI before 6).
var ErrUnsupported = errors.New("landlock scopes unsupported")

// rulesetAttr is struct landlock_ruleset_attr up to its scoped field (ABI 6); the kernel accepts a
// shorter struct than its own and zero-fills the rest.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// ABI returns the kernel's Landlock ABI version, 0 when Landlock is absent or disabled.
func ABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// Supported says whether Restrict can work here: nil, or an error matching ErrUnsupported that names
// the kernel's ABI.
func Supported() error {
	if v := ABI(); v < ScopeABI {
		if v == 0 {
			return fmt.Errorf("%w: the kernel has no Landlock (or it is not enabled: lsm=)", ErrUnsupported)
		}
		return fmt.Errorf("%w: the kernel's Landlock ABI is %d, scopes need %d (Linux 6.12)", ErrUnsupported, v, ScopeABI)
	}
	return nil
}

// Restrict puts the calling thread (and everything it forks or executes afterwards) in a new Landlock
// domain scoped for abstract Unix sockets and signals. It needs no_new_privs (or CAP_SYS_ADMIN) and
// must run on the thread that starts the target (runtime.LockOSThread): a domain belongs to a thread.
func Restrict() error {
	attr := rulesetAttr{scoped: scopes}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		if errno == unix.ENOSYS || errno == unix.EOPNOTSUPP || errno == unix.EINVAL || errno == unix.E2BIG {
			return fmt.Errorf("%w: landlock_create_ruleset: %w", ErrUnsupported, errno)
		}
		return os.NewSyscallError("landlock_create_ruleset", errno)
	}
	defer unix.Close(int(fd))
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return os.NewSyscallError("landlock_restrict_self", errno)
	}
	return nil
}
