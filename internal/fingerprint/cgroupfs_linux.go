package fingerprint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// maxCgroupDepth bounds the walk through a worker's sub-cgroups.
const maxCgroupDepth = 32

// openCgroupDir opens <root><rel> as a directory fd. The path comes from a token the caller handed us, so it
// is resolved beneath root with no symlinks and no mount crossings.
func openCgroupDir(root, rel string) (int, error) {
	full := filepath.Join(root, rel)
	rootFD, err := linux.Retry(func() (int, error) {
		return unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer closeFD(rootFD)
	name := strings.TrimPrefix(rel, "/")
	fd, err := linux.Retry(func() (int, error) {
		return unix.Openat2(rootFD, name, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
	})
	if errors.Is(err, unix.ENOSYS) { // kernels before 5.6; the path was cleaned, so only symlinks remain to refuse
		fd, err = linux.Retry(func() (int, error) {
			return unix.Openat(rootFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		})
	}
	if err != nil {
		return -1, &os.PathError{Op: "openat2", Path: full, Err: err}
	}
	return fd, nil
}

// dirIno returns the inode of an open directory: for a cgroup, its id.
func dirIno(fd int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, os.NewSyscallError("fstat", err)
	}
	return st.Ino, nil
}

func openAt(dir int, name string, flags int) (int, error) {
	fd, err := linux.Retry(func() (int, error) {
		return unix.Openat(dir, name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	})
	if err != nil {
		return -1, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return fd, nil
}

// readAt reads a cgroup file relative to the pinned directory.
func readAt(dir int, name string) ([]byte, error) {
	fd, err := openAt(dir, name, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(f)
}

// readProcs lists the processes directly in the cgroup (cgroup.procs), as the reader's PID namespace sees them.
func readProcs(dir int) ([]int, error) {
	b, err := readAt(dir, "cgroup.procs")
	if err != nil {
		return nil, err
	}
	return linux.ParseProcs(b)
}

// walkProcs lists the processes in the cgroup and all of its descendants.
func walkProcs(dir int) ([]int, error) { return walkProcsDepth(dir, 0) }

func walkProcsDepth(dir, depth int) ([]int, error) {
	if depth > maxCgroupDepth {
		return nil, fmt.Errorf("cgroup nesting deeper than %d", maxCgroupDepth)
	}
	pids, err := readProcs(dir)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		// Removed after it was opened (systemd collects an empty scope at any moment): rmdir succeeds only
		// on an empty cgroup, so it holds no process.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	self, err := openAt(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(self), ".")
	entries, err := f.ReadDir(-1)
	f.Close()
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		// Removed between its procs and its listing (a concurrent stop's shim removes it once empty): as
		// above, it held no process when it went.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub, err := openAt(dir, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) {
			continue // removed while we looked
		}
		if err != nil {
			return nil, err
		}
		more, err := walkProcsDepth(sub, depth+1)
		closeFD(sub)
		if err != nil && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENOENT) {
			return nil, err
		}
		pids = append(pids, more...)
	}
	return pids, nil
}

// isMember reports whether pid is a process of the cgroup or of one of its descendants (a worker may nest
// its own sub-cgroups; its leader is still the worker's).
func isMember(dir, pid int) (bool, error) {
	pids, err := walkProcs(dir)
	if err != nil {
		return false, err
	}
	return slices.Contains(pids, pid), nil
}

// populated reports whether the cgroup or a descendant holds a process: cgroup.events on v2, a walk of
// cgroup.procs on v1 (which has no cgroup.events).
func populated(dir int) (bool, error) {
	b, err := readAt(dir, "cgroup.events")
	if errors.Is(err, unix.ENODEV) {
		return false, nil // removed while we looked: rmdir succeeds only on an empty cgroup
	}
	if errors.Is(err, unix.ENOENT) {
		pids, err := walkProcs(dir)
		return len(pids) > 0, err
	}
	if err != nil {
		return false, err
	}
	ev, err := linux.ParseEvents(b)
	return ev.Populated, err
}

// waitEvent waits until cgroup.events shows key=want. The kernel wakes pollers (POLLPRI) when the file
// changes; the bounded poll timeout is only a safety net.
func waitEvent(ctx context.Context, dir int, key, want string) error {
	fd, err := openAt(dir, "cgroup.events", unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer closeFD(fd)
	buf := make([]byte, 512)
	for {
		n, err := linux.Retry(func() (int, error) { return unix.Pread(fd, buf, 0) })
		if err != nil {
			return &os.PathError{Op: "pread", Path: "cgroup.events", Err: err}
		}
		v, ok := linux.KeyedValue(buf[:n], key)
		if !ok {
			return fmt.Errorf("%w: cgroup.events has no %s key", linux.ErrMalformed, key)
		}
		if v == want {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for cgroup %s=%s: %w", key, want, err)
		}
		if _, err := linux.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}, 50); err != nil {
			return err
		}
	}
}

// waitProcsEmpty is waitEvent's v1 stand-in: poll cgroup.procs of the subtree until it is empty.
func waitProcsEmpty(ctx context.Context, dir int) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		pids, err := walkProcs(dir)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for cgroup to empty: %w", ctx.Err())
		case <-t.C:
		}
	}
}
