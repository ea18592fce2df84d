package proc

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// accessAs asks the kernel whether the ids of cred may run p: faccessat2 with AT_EACCESS, which checks
// with the calling thread's filesystem ids and supplementary groups, on a thread given cred's for the
// one call and then ours again. Every directory on the way must be searchable, p executable, and the
// mode bits, ACLs and a root cred's overrides are the kernel's own, as at the worker's exec. The thread
// is never unlocked unless its ids are ours again: a thread left with cred's ids ends with the goroutine.
func accessAs(p string, cred *syscall.Credential) error {
	runtime.LockOSThread()
	groups, err := unix.Getgroups()
	if err != nil {
		runtime.UnlockOSThread()
		return os.NewSyscallError("getgroups", err)
	}
	uid, gid := unix.Geteuid(), unix.Getegid()
	if err := setFSIDs(int(cred.Uid), int(cred.Gid), toInts(cred.Groups)); err != nil {
		if setFSIDs(uid, gid, groups) == nil {
			runtime.UnlockOSThread()
		}
		return err
	}
	err = unix.Faccessat2(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS)
	if rerr := setFSIDs(uid, gid, groups); rerr != nil {
		return rerr
	}
	runtime.UnlockOSThread()
	return err
}

// setFSIDs gives the calling thread the supplementary groups and the filesystem ids uid and gid, and
// checks that it has them (setfsuid and setfsgid report no failure of their own). The groups come
// first and the uid last, so that going to a non-root uid is the last change and coming back to
// root's is the first, as CAP_SETGID needs.
func setFSIDs(uid, gid int, groups []int) error {
	if uid == 0 {
		if _, err := unix.SetfsuidRetUid(uid); err != nil {
			return os.NewSyscallError("setfsuid", err)
		}
	}
	if err := unix.Setgroups(groups); err != nil {
		return os.NewSyscallError("setgroups", err)
	}
	if _, err := unix.SetfsgidRetGid(gid); err != nil {
		return os.NewSyscallError("setfsgid", err)
	}
	if _, err := unix.SetfsuidRetUid(uid); err != nil {
		return os.NewSyscallError("setfsuid", err)
	}
	// An invalid id (-1) changes nothing and returns the thread's current one.
	if u, _ := unix.SetfsuidRetUid(-1); u != uid {
		return fmt.Errorf("setfsuid(%d): the thread's filesystem uid is %d", uid, u)
	}
	if g, _ := unix.SetfsgidRetGid(-1); g != gid {
		return fmt.Errorf("setfsgid(%d): the thread's filesystem gid is %d", gid, g)
	}
	return nil
}

func toInts(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
