package cgroup

import (
	"path/filepath"
)

// EnterThread moves the calling thread, alone, into the group's directory in every v1 hierarchy, so that a
// child it forks starts there: a child starts in the cgroups of the thread that forked it. With clone3
// CLONE_INTO_CGROUP for the v2 directory (OpenFD), the child is in every hierarchy before its first
// instruction and no process has to be joined by PID after its start (ADR 0012).
//
// It writes "0" (the writer itself) to each directory's `tasks` file: cgroup v1 moves one thread of a
// process on its own, and the kernel moves the writing thread without the global threadgroup lock that a
// write of a PID takes, whose first taker after a quiet spell waits for an RCU grace period (a few ms).
//
// The caller must have locked its goroutine to the thread for good (runtime.LockOSThread, never unlocked):
// the thread must run nothing else while it is a member, and after LeaveThread it still is not where it
// came from. On an error the thread has left every directory it joined (as LeaveThread moves it).
func (g *Group) EnterThread() error {
	for i, d := range g.v1dirs {
		if err := writeFile(filepath.Join(d, "tasks"), "0"); err != nil {
			leaveThread(g.v1dirs[:i])
			return err
		}
	}
	return nil
}

// LeaveThread moves the calling thread out of the group's v1 directories again, into the parent directory
// on each hierarchy (as Leave moves a shim: the parent is hlaunch's or the caller's, never an unrelated
// cgroup), so that the group holds only the worker and can be removed once the worker has ended.
func (g *Group) LeaveThread() error {
	return leaveThread(g.v1dirs)
}

func leaveThread(dirs []string) error {
	var first error
	for _, d := range dirs {
		if err := writeFile(filepath.Join(filepath.Dir(d), "tasks"), "0"); err != nil && first == nil {
			first = err
		}
	}
	return first
}
