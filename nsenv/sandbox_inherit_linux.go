package nsenv

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/sysfile"
)

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
	b, err := sysfile.ReadFile(p)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || n >= 0 {
		return err
	}
	f, err := sysfile.Open(p, unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write([]byte("0"))
	return err
}
