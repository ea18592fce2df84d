// Package sysfile reads small kernel and configuration files (mountinfo, cgroup.events, a profile's .env)
// with plain system calls.
//
// os.Open registers every descriptor it opens with the Go runtime's network poller, and the first one
// starts the poller: an epoll instance, an eventfd, and from then on a scheduler that polls it and a
// thread parked in epoll_wait. The hlaunch CLI never waits on such a file, and on its launch path (one
// short-lived process per launch) that start-up is measurable (ADR 0006). Descriptors made
// here are blocking and are never registered with the poller. Kind names a stat mode's file type for the
// messages that refuse a file of the wrong kind.
package sysfile

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Open opens path read-only with O_CLOEXEC plus flags (O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY...). The
// returned file is not registered with the runtime poller: O_NONBLOCK, when asked for, only keeps the open
// itself from blocking (on a FIFO) and is cleared before the file is returned. Errors are *os.PathError.
func Open(path string, flags int) (*os.File, error) {
	fd, err := linux.Retry(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|flags, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if flags&unix.O_NONBLOCK != 0 {
		if err := unix.SetNonblock(fd, false); err != nil {
			_ = unix.Close(fd)
			return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
	}
	// os.NewFile on a blocking descriptor makes a file the poller never sees.
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the whole of path, as os.ReadFile does, without the runtime poller.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Kernel files report size 0; 4 KiB holds cgroup.events and a small mountinfo in one read.
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}
