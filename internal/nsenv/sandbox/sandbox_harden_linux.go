package sandbox

import (
	"errors"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/landlock"
)

// harden sets what the sandbox asks of the child's process after the view is built: host name, lo up
// for Net "none", no core dumps, no_new_privs, the Landlock scopes, and the identity (ids and capability sets). Capabilities go last: everything
// before needs CAP_SYS_ADMIN or CAP_SETUID.
//
// PR_SET_DUMPABLE 0 only protects the stub itself: execve resets it to 1 for an ordinary binary. What
// survives execve is RLIMIT_CORE 0 (no core file, and no core pipe helper is started with a zero limit
// except by a pipe pattern that ignores it) and the pid namespace, which hides the worker from other
// profiles' workers (they cannot ptrace what they cannot name).
func (s *Spec) harden() error {
	if err := unix.Sethostname([]byte(Hostname)); err != nil {
		return os.NewSyscallError("sethostname", err)
	}
	if s.Net == NetNone {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return os.NewSyscallError("setrlimit(RLIMIT_CORE)", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_DUMPABLE)", err)
	}
	if err := resetInherited(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	// Landlock needs no_new_privs; the domain is this thread's, the one that starts the target.
	if !s.Unscoped {
		if err := landlock.Restrict(); err != nil {
			return err
		}
	}
	if s.KeepCaps && !s.SetUser {
		return nil
	}
	if err := dropBounding(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", err)
	}
	if s.SetUser {
		if err := s.setIDs(); err != nil {
			return err
		}
	}
	if s.KeepCaps {
		return nil
	}
	// setresuid to a non-zero uid already cleared the effective and permitted sets, but not the
	// inheritable one; for a child that stays uid 0 this is what makes execve grant nothing (with an
	// empty bounding set root's "all file capabilities" are masked to none).
	var data [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		return os.NewSyscallError("capset", err)
	}
	return nil
}

// loopbackUp brings lo up in the new network namespace: "no network" should not mean "no localhost",
// which workers use to talk to their own helpers.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("ioctl(SIOCGIFFLAGS lo)", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("ioctl(SIOCSIFFLAGS lo)", err)
	}
	return nil
}

// dropBounding empties the capability bounding set, up to the kernel's last capability (EINVAL).
func dropBounding() error {
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			return nil
		}
		if err != nil {
			return os.NewSyscallError("prctl(PR_CAPBSET_DROP)", err)
		}
	}
	return nil
}

// setIDs drops to UID:GID with no supplementary groups. In a user namespace made by an unprivileged
// launcher setgroups is denied by the kernel (/proc/self/setgroups holds "deny"); the supplementary
// groups then stay what the launcher had, and cannot be dropped from inside.
func (s *Spec) setIDs() error {
	if b, err := os.ReadFile("/proc/self/setgroups"); err != nil || strings.TrimSpace(string(b)) != "deny" {
		if err := syscall.Setgroups([]int{}); err != nil {
			return os.NewSyscallError("setgroups", err)
		}
	}
	if err := syscall.Setresgid(s.GID, s.GID, s.GID); err != nil {
		return os.NewSyscallError("setresgid", err)
	}
	if err := syscall.Setresuid(s.UID, s.UID, s.UID); err != nil {
		return os.NewSyscallError("setresuid", err)
	}
	return nil
}
