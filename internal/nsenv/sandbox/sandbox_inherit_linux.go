package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// dropTerminal gives up the controlling terminal the child inherited from its launcher's session, if it
// has one (TIOCNOTTY on /dev/tty; the child is not a session leader, so only its own link to the terminal
// goes, and nobody is sent SIGHUP).
//
// The kernel lets ioctl(TIOCSTI) push input into a terminal only when it is the caller's controlling
// terminal (or with CAP_SYS_ADMIN, which the worker does not keep), and it lets a process acquire a
// controlling terminal (TIOCSCTTY, or an open without O_NOCTTY) only when it leads a session and the
// terminal belongs to no other session: the caller's terminal is its caller's session's. So a worker that
// holds the caller's terminal as stdio can still read and write it, but neither type into it nor take it
// over, even after a setsid of its own. The stub does not take a session of its own (setsid): with
// scheduler autogroups every new session is a new scheduling group, which slows the stub's Go start-up on
// a loaded host (ADR 0004); nor a pty relay: that is a process per worker.
//
// A stub that leads its session was started so by a launcher that gave it a pty of its own as its
// controlling terminal (launcher's ptyRelay: setsid and TIOCSCTTY at the clone): that terminal it keeps.
func dropTerminal() error {
	if sid, err := unix.Getsid(0); err == nil && sid == unix.Getpid() {
		return nil
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil //nolint:nilerr // ENXIO (no controlling terminal) or no /dev/tty: nothing to give up
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.TIOCNOTTY, 0); err != nil {
		return os.NewSyscallError("ioctl(TIOCNOTTY)", err)
	}
	return nil
}

// stdioNotDirectories refuses a directory as stdin, stdout or stderr: the one kind of descriptor that
// walks around the view (openat(0, "..."), /proc/self/fd/0/...), reaching with the worker's uid whatever
// the view hides or makes read-only. A caller (the CLI's own stdio, descriptors sent to the sidecar) has
// no reason to hand a worker one.
func stdioNotDirectories() error {
	for fd, name := range []string{"stdin", "stdout", "stderr"} {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			continue // closed: nothing handed over
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return fmt.Errorf("%w: %s is a directory, which would reach outside the view", ErrInvalid, name)
		}
	}
	return nil
}

// perMask keeps the base personality (PER_LINUX, PER_LINUX32) and drops the flags (linux/personality.h).
const perMask = 0x00ff

// resetInherited undoes what a process inherits from its launcher's session and that a worker must not
// keep (docs/security.md, "The terminal and the session"); the controlling terminal and the process group
// are left by the new session SysProcAttr asks for, descriptors above 2 by close-on-exec
// (launcher.MaybeRunInternal), the environ by the handshake.
//
//   - The session keyring: a child keeps its parent's, and "possessing" a keyring grants the possessor
//     permissions on every key in it whatever the uid, so a worker could read the launcher's keys
//     (keyctl read). It joins a new, empty, anonymous session keyring instead.
//   - The personality: a launcher started under `setarch -R` (ADDR_NO_RANDOMIZE) or with
//     READ_IMPLIES_EXEC would hand its worker a weaker address space. Only the base personality stays.
//   - A negative oom_score_adj (a daemon protected from the OOM killer) would make the worker the last
//     process the kernel kills when it eats the memory. It is raised to 0, which needs no privilege.
func resetInherited() error {
	if err := dropTerminal(); err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
		return os.NewSyscallError("keyctl(KEYCTL_JOIN_SESSION_KEYRING)", errno)
	}
	cur, _, errno := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	if errno != 0 {
		return os.NewSyscallError("personality", errno)
	}
	if base := cur & perMask; base != cur {
		if _, _, errno := unix.Syscall(unix.SYS_PERSONALITY, base, 0, 0); errno != 0 {
			return os.NewSyscallError("personality", errno)
		}
	}
	return raiseOOMScoreAdj()
}

// raiseOOMScoreAdj sets a negative oom_score_adj to 0.
func raiseOOMScoreAdj() error {
	const p = "/proc/self/oom_score_adj"
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || n >= 0 {
		return err
	}
	f, err := os.OpenFile(p, unix.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write([]byte("0"))
	return err
}
