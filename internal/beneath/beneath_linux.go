package beneath

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// resolve is the resolution of every walk: below the directory, no symbolic link, no magic link.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// IsUnsafe reports whether err means the path met a symbolic link (ELOOP) or tried to leave its
// directory (EXDEV), as opposed to a missing or unreadable file.
func IsUnsafe(err error) bool { return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) }

// Open opens rel below the directory dir with flags (O_CLOEXEC is always added) and mode, never
// following a symbolic link and never leaving dir; a link as the last component fails too (ELOOP), also
// with O_PATH. name is the path errors report. Errors are *os.PathError; IsUnsafe tells a link or an
// escape.
func Open(dir int, rel string, flags int, mode uint32, name string) (int, error) {
	flags |= unix.O_CLOEXEC
	// Not O_NOFOLLOW: with O_PATH it would return the trailing link itself; without it,
	// RESOLVE_NO_SYMLINKS fails on a trailing link as on any other.
	flags &^= unix.O_NOFOLLOW
	how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: resolve}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dir, rel, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS):
			return walk(dir, rel, flags|unix.O_NOFOLLOW, mode, name)
		case (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && i < 16:
			// EAGAIN: a rename or mount raced the RESOLVE_BENEATH walk; bounded, so a hostile renamer
			// cannot keep us here.
			continue
		}
		return -1, &os.PathError{Op: "openat2", Path: name, Err: err}
	}
}

// walk is Open for kernels without openat2: one component at a time, each with O_NOFOLLOW.
func walk(dir int, rel string, flags int, mode uint32, name string) (int, error) {
	if strings.HasPrefix(rel, "/") {
		return -1, &os.PathError{Op: "openat", Path: name, Err: unix.EXDEV}
	}
	var parts []string
	for _, c := range strings.Split(rel, "/") {
		switch c {
		case "", ".":
		case "..":
			return -1, &os.PathError{Op: "openat", Path: name, Err: unix.EXDEV}
		default:
			parts = append(parts, c)
		}
	}
	if len(parts) == 0 {
		parts = []string{"."}
	}
	cur := dir
	closeCur := func() {
		if cur != dir {
			unix.Close(cur)
		}
	}
	defer closeCur()
	for _, c := range parts[:len(parts)-1] {
		fd, err := linux.Retry(func() (int, error) {
			return unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return -1, &os.PathError{Op: "openat", Path: name, Err: linkErr(cur, c, err)}
		}
		closeCur()
		cur = fd
	}
	last := parts[len(parts)-1]
	fd, err := linux.Retry(func() (int, error) { return unix.Openat(cur, last, flags|unix.O_NOFOLLOW, mode) })
	if err != nil {
		return -1, &os.PathError{Op: "openat", Path: name, Err: linkErr(cur, last, err)}
	}
	if flags&unix.O_PATH != 0 {
		// O_PATH|O_NOFOLLOW opens a symbolic link itself instead of failing.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			if err == nil {
				err = unix.ELOOP
			}
			return -1, &os.PathError{Op: "openat", Path: name, Err: err}
		}
	}
	return fd, nil
}

// linkErr turns the ENOTDIR that O_DIRECTORY|O_NOFOLLOW gives for a symbolic link into ELOOP, as
// openat2 reports it.
func linkErr(dir int, name string, err error) error {
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return unix.ELOOP
		}
	}
	return err
}

// Lstat reports what rel below dir is, without following a link at its end (a link there is reported
// as a link) and without following one on the way (that is an error IsUnsafe reports).
func Lstat(dir int, rel, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	parent, base := ".", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, base = rel[:i], rel[i+1:]
	}
	pfd, err := Open(dir, parent, unix.O_PATH|unix.O_DIRECTORY, 0, name)
	if err != nil {
		return st, err
	}
	defer unix.Close(pfd)
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "fstatat", Path: name, Err: err}
	}
	return st, nil
}

// Reopen opens the file an O_PATH descriptor refers to with flags, through /proc/self/fd: the same
// inode, not a walk of its path again. It is how a file is opened for reading only after fstat showed
// it is a regular file (opening a device or a FIFO can have effects of its own).
func Reopen(fd, flags int, name string) (int, error) {
	nfd, err := linux.Retry(func() (int, error) {
		return unix.Open("/proc/self/fd/"+strconv.Itoa(fd), flags|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, &os.PathError{Op: "reopen", Path: name, Err: err}
	}
	return nfd, nil
}
