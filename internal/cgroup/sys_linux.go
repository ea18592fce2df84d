package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Ownership marker. cgroupfs (kernfs) stores trusted.* extended attributes on cgroup directories in both v1
// and v2 hierarchies (verified on 6.18: mkdir, setxattr, getxattr all work; the attribute vanishes with the
// directory). trusted.* needs CAP_SYS_ADMIN to set or read, so an unprivileged process cannot forge it on a
// directory it was delegated. Where trusted.* is refused (a delegated, unprivileged hlaunch), user.* is the
// fallback; the kernel allows user.* on cgroupfs since 5.7. Checking reads either.
const (
	markerTrusted = "trusted.hlaunch"
	markerUser    = "user.hlaunch"
	limitsXattr   = "trusted.hlaunch.limits"
	limitsXattrU  = "user.hlaunch.limits"
)

// writeFile writes data to an existing cgroup control file in one write(2), as the kernel expects.
func writeFile(path, data string) error {
	var fd int
	err := linux.RetryErr(func() (err error) {
		fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	err = linux.RetryErr(func() error {
		_, err := unix.Write(fd, []byte(data))
		return err
	})
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// readUint reads a file holding one unsigned number ("max" reads as 0).
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// readKey returns the number key holds in a flat-keyed file (memory.events, cpu.stat, memory.oom_control),
// and whether it is there.
func readKey(path, key string) (uint64, bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	return linux.KeyedUint(b, key)
}

// readEvents reads the cgroup.events of the v2 directory dir.
func readEvents(dir string) (linux.Events, error) {
	name := filepath.Join(dir, "cgroup.events")
	b, err := os.ReadFile(name)
	if err != nil {
		return linux.Events{}, err
	}
	ev, err := linux.ParseEvents(b)
	if err != nil {
		return linux.Events{}, fmt.Errorf("%s: %w", name, err)
	}
	return ev, nil
}

// readPids returns the PIDs listed in a cgroup.procs file.
func readPids(path string, into map[int]struct{}) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	pids, err := linux.ParseProcs(b)
	for _, pid := range pids {
		into[pid] = struct{}{}
	}
	return err
}

// mark sets hlaunch's ownership marker on a directory.
func mark(dir string) error {
	err := linux.RetryErr(func() error { return unix.Setxattr(dir, markerTrusted, []byte("1"), 0) })
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOTSUP) {
		err = linux.RetryErr(func() error { return unix.Setxattr(dir, markerUser, []byte("1"), 0) })
	}
	if err != nil {
		return &os.PathError{Op: "setxattr", Path: dir, Err: err}
	}
	return nil
}

// marked reports whether dir carries hlaunch's ownership marker.
func marked(dir string) (bool, error) {
	var buf [8]byte
	for _, name := range []string{markerTrusted, markerUser} {
		var n int
		err := linux.RetryErr(func() (err error) { n, err = unix.Getxattr(dir, name, buf[:]); return err })
		if err == nil {
			return n == 1 && buf[0] == '1', nil
		}
		if !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOTSUP) {
			return false, &os.PathError{Op: "getxattr", Path: dir, Err: err}
		}
	}
	return false, nil
}

// setXattr stores a trusted (else user) attribute; used for the worker's limits record.
func setXattr(dir, trusted, user string, val []byte) error {
	err := linux.RetryErr(func() error { return unix.Setxattr(dir, trusted, val, 0) })
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOTSUP) {
		err = linux.RetryErr(func() error { return unix.Setxattr(dir, user, val, 0) })
	}
	if err != nil {
		return &os.PathError{Op: "setxattr", Path: dir, Err: err}
	}
	return nil
}

func getXattr(dir, trusted, user string) ([]byte, error) {
	buf := make([]byte, 512)
	for _, name := range []string{trusted, user} {
		var n int
		err := linux.RetryErr(func() (err error) { n, err = unix.Getxattr(dir, name, buf); return err })
		if err == nil {
			return buf[:n], nil
		}
		if !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOTSUP) {
			return nil, &os.PathError{Op: "getxattr", Path: dir, Err: err}
		}
	}
	return nil, nil
}

// mkdir creates one cgroup directory; EEXIST is reported as os.ErrExist through the PathError.
func mkdir(dir string) error {
	err := linux.RetryErr(func() error { return unix.Mkdir(dir, 0o755) })
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return nil
}

// rmdir removes one cgroup directory.
func rmdir(dir string) error {
	err := linux.RetryErr(func() error { return unix.Rmdir(dir) })
	if err != nil {
		return &os.PathError{Op: "rmdir", Path: dir, Err: err}
	}
	return nil
}

// inode returns the inode number of dir: a cgroup2 directory's inode is its cgroup id.
func inode(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := linux.RetryErr(func() error { return unix.Stat(dir, &st) }); err != nil {
		return 0, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return st.Ino, nil
}
