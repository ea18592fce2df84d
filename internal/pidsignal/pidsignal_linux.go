// Package pidsignal is the one way hlaunch signals the members of a cgroup: every member is pinned with a
// pidfd, the members are listed again, and only a process listed both times is signalled, through its
// pidfd. A PID number read from cgroup.procs is never passed to kill(2): between the read and the signal
// the process could exit and its number go to a stranger. Tree is the one whole-cgroup signal built on it
// (the worker's lock, cgroup.kill, freeze, passes until no new member, thaw): fingerprint (a worker's
// Handle) and cgroup (Group.Signal, Kill) both signal through Tree, and the tests' cleanups
// (testutil.KillCgroup, systemdtest's removal of its manager's tree) through Members.
//
// What is signalled by a plain PID elsewhere is a process's own child that it has not reaped: the
// launcher's foreground worker and a shim's worker leader (internal/proc.Proc, which refuses a signal once
// reaped), a held stub or shim it aborts (the same), and a sandbox's init forwarding to its target (reaped
// only by the loop that then exits). An unreaped child's PID cannot be reused, so none of those can reach a
// stranger; no other worker member is ever signalled by its number.
package pidsignal

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Members signals the processes list names that are not in done, the pinned way: list, pidfd_open each,
// list again, pidfd_send_signal to each one listed both times. A pidfd opened before the second listing and
// still unreaped when signalled can only be the process that listing named. Every process signalled is
// added to done; it returns how many it signalled.
func Members(list func() ([]int, error), sig syscall.Signal, done map[int]bool) (int, error) {
	pids, err := list()
	if err != nil {
		return 0, err
	}
	fds := map[int]int{}
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	for _, pid := range pids {
		if done[pid] {
			continue
		}
		fd, err := linux.PidfdOpen(pid)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return 0, err
		}
		fds[pid] = fd
	}
	again, err := list()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pid := range again {
		fd, ok := fds[pid]
		if !ok {
			continue
		}
		err := linux.PidfdSignal(fd, sig)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return n, fmt.Errorf("signal pid %d: %w", pid, err)
		}
		done[pid] = true
		n++
	}
	return n, nil
}
