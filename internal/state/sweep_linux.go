package state

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// tempInfix is what Write puts between a record's name and the random suffix of its temp file:
// ".<name>.tmp-<digits>".
const tempInfix = ".tmp-"

// tempGrace is how old a temp file must be (its last write) before SweepTemps may take it for a dead
// writer's. Write locks its temp file right after making it, so the lock is what tells a live writer;
// the grace only covers the instant between the two, and a writer that stalled there for longer than
// the grace loses its write (its rename fails, and Write says so), never another record.
const tempGrace = time.Minute

// lockTemp takes a writer's lock on its temp file (flock, exclusive). The kernel drops it when the file is
// closed or the writer dies, however it dies: a temp file nobody holds locked has no writer left.
func lockTemp(f *os.File) error {
	fd := int(f.Fd())
	if err := linux.RetryErr(func() error { return unix.Flock(fd, unix.LOCK_EX) }); err != nil {
		return os.NewSyscallError("flock", err)
	}
	return nil
}

// isTempName reports whether name has the shape of Write's temp files: ".<record>.tmp-<digits>".
func isTempName(name string) bool {
	i := strings.LastIndex(name, tempInfix)
	if !strings.HasPrefix(name, ".") || i < 2 {
		return false
	}
	suffix := name[i+len(tempInfix):]
	return suffix != "" && strings.Trim(suffix, "0123456789") == ""
}

// SweepTemps removes the temp files whose writer cannot still be writing them: a writer killed between
// its temp file and the rename (a shim SIGKILLed mid-write) leaves one that no listing shows and nothing
// else removes, in a directory that is often a tmpfs. The rule: a regular file named as Write names its
// temp files, last written more than a minute ago (tempGrace), that no process holds locked (a live Write holds its
// lock until after its rename). It never follows a symbolic link and removes nothing but the file it
// checked: each name is opened below the directory's descriptor with O_NOFOLLOW (a link, a FIFO or a
// device in a temp file's name is left alone, and opening it does not block), and unlinked there only
// while the opened file is locked by the sweep and the name still names it. A missing directory has
// nothing to sweep. It returns how many temp files went.
func (d *Dir) SweepTemps() (int, error) {
	dfd, err := linux.Retry(func() (int, error) {
		return unix.Open(d.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep temp files: %w", &os.PathError{Op: "open", Path: d.Path, Err: err})
	}
	dir := os.NewFile(uintptr(dfd), d.Path)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("sweep temp files: %w", err)
	}
	cutoff := time.Now().Add(-tempGrace)
	n := 0
	for _, name := range names {
		if !isTempName(name) {
			continue
		}
		gone, err := sweepTemp(dfd, name, cutoff)
		if err != nil {
			return n, fmt.Errorf("sweep temp files: %w", &os.PathError{Op: "unlinkat", Path: d.Path + "/" + name, Err: err})
		}
		if gone {
			n++
		}
	}
	return n, nil
}

// sweepTemp removes one temp file by SweepTemps' rule; only a failed unlink of a file it had judged
// stale is an error (one that vanished or changed meanwhile was renamed by its writer or swept by
// another collection: not this one's to remove).
func sweepTemp(dfd int, name string, cutoff time.Time) (bool, error) {
	fd, err := linux.Retry(func() (int, error) {
		return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return false, nil // gone (renamed into place), a symbolic link (ELOOP), unreadable: not a dead writer's
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, nil
	}
	if !time.Unix(st.Mtim.Unix()).Before(cutoff) {
		return false, nil // too fresh: its writer may not have taken its lock yet
	}
	if linux.RetryErr(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) }) != nil {
		return false, nil // a live writer holds it (EWOULDBLOCK)
	}
	var now unix.Stat_t
	if unix.Fstatat(dfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return false, nil
	}
	if err := unix.Unlinkat(dfd, name, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
