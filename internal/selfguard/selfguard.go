// Package selfguard keeps an hlaunch process's own environment and memory from its workers.
//
// hlaunch builds a worker's environ from the target profile alone, but the launcher itself (the CLI in
// the foreground, a shim, the sidecar) still holds the environment it was started with - the gateway's,
// with the launch profile's keys - and /proc/<pid>/environ shows it to every process of the same uid.
// An unsandboxed worker is such a process: its foreground parent, its shim and the sidecar are found in
// /proc. Hide blanks the block /proc/<pid>/environ reads (so it shows nothing, to root too: a root
// launcher's unsandboxed worker is root) and makes the process non-dumpable, which closes
// /proc/<pid>/{environ,mem,fd,...} and ptrace to everything without CAP_SYS_PTRACE. What it cannot do:
// a process with CAP_SYS_PTRACE (root's worker) still reads the heap copy through /proc/<pid>/mem.
package selfguard

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Hide makes this process non-dumpable and blanks the environment block /proc/self/environ shows
// (the strings execve copied onto the initial stack), after moving the Go runtime's copy of every
// variable onto the heap: os.Getenv and os.Environ keep answering. It must run first in main, before
// anything keeps a string of the environment it was started with. The non-dumpable flag is inherited
// by a forked child until its execve; see AllowIDMaps.
func Hide() error {
	// The runtime's strings point into the block: give the process heap copies before it is blanked.
	env := os.Environ()
	os.Clearenv()
	for _, kv := range env {
		k, v, _ := strings.Cut(strings.Clone(kv), "=")
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("selfguard: setenv %q: %w", k, err)
		}
	}
	if err := blankEnviron(); err != nil {
		return err
	}
	// Last: a non-dumpable process's /proc/self/mem is root's, which an unprivileged one cannot open.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("selfguard: %w", os.NewSyscallError("prctl PR_SET_DUMPABLE", err))
	}
	return nil
}

// blankEnviron overwrites the environment block with NULs, through /proc/self/mem (the kernel's own
// access to this process's memory): PR_SET_MM could point the range elsewhere only with
// CAP_SYS_RESOURCE, which a container's root often lacks.
func blankEnviron() error {
	start, end, err := environRange()
	if err != nil || end <= start {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("selfguard: %w", err)
	}
	defer mem.Close()
	if _, err := mem.WriteAt(make([]byte, end-start), int64(start)); err != nil {
		return fmt.Errorf("selfguard: blank the environment block: %w", err)
	}
	return nil
}

// AllowIDMaps makes this process dumpable again so that it can write the uid_map and gid_map of a
// child it forks into a user namespace without being root: a forked child keeps the parent's
// non-dumpable flag until its execve, and the kernel then makes its /proc files root's, which an
// unprivileged parent cannot open. It is called only on the way to a sandboxed worker, which lives in a
// PID namespace of its own and cannot name this process; root needs no such call.
func AllowIDMaps() error {
	if os.Geteuid() == 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("selfguard: %w", os.NewSyscallError("prctl PR_SET_DUMPABLE", err))
	}
	return nil
}

// environRange reads env_start and env_end (fields 50 and 51 of /proc/self/stat, proc(5)).
func environRange() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("selfguard: %w", err)
	}
	st, err := linux.ParseStat(b)
	if err == nil {
		if start, err = st.Field(50); err == nil {
			end, err = st.Field(51)
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("selfguard: /proc/self/stat: %w", err)
	}
	return start, end, nil
}
