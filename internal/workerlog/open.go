package workerlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/beneath"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// RotateSize is the default size at which a worker log is rotated when a launch opens it, and by a
// detached worker's shim while the worker runs (internal/shim/logcopy.go): the old file becomes <log>.1 (one old file
// kept), as hermes does for kanban logs. Spec.LogMax changes it.
const RotateSize = 2 << 20

// Open opens path for appending, rotating it first when it has reached max bytes (0: RotateSize).
//
// A log often lies in a directory a worker can write (its profile's logs/), and a root launcher creates
// it: resolved as a string, a worker that swaps that directory for a symbolic link to /etc would have a
// root-owned file created, or appended to, where it chose. So the path is walked once from "/" through
// descriptors (internal/beneath) and no symbolic link is followed anywhere on it; its directory must
// exist (nothing is created but the file); the file is rotated and created relative to
// its directory's descriptor, created with O_EXCL, and an existing file is opened for writing only after
// fstat showed a regular file with one link (a FIFO, a device or a hard link planted as the log is never
// opened).
func Open(path string, max int64) (*os.File, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: --log %q must be absolute", worker.ErrInvalid, path)
	}
	if max <= 0 {
		max = RotateSize
	}
	path = filepath.Clean(path)
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, fmt.Errorf("%w: --log %q names a directory", worker.ErrInvalid, path)
	}
	top, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("--log: %w", os.NewSyscallError("open /", err))
	}
	defer unix.Close(top)
	// The directory must exist: a root launcher that made a worker-chosen chain of directories would
	// be a side effect nobody asked for (a refused launch creates nothing), and a typo would pass.
	dfd, err := openDir(top, strings.TrimPrefix(filepath.Clean(dir), "/"), dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: --log %q: directory %s does not exist (hlaunch does not create it)", worker.ErrInvalid, path, filepath.Clean(dir))
	}
	if err != nil {
		return nil, logErr(path, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if err := checkLogFile(&st, path); err != nil {
			return nil, err
		}
		if st.Size >= max {
			// renameat never follows a link, at either name.
			if err := unix.Renameat(dfd, base, dfd, base+".1"); err != nil {
				return nil, fmt.Errorf("--log: rotate: %w", &os.LinkError{Op: "renameat", Old: path, New: path + ".1", Err: err})
			}
		}
	}
	// Open what is there, or create it exclusively; a file made or removed in between is tried again.
	for range 8 {
		pfd, err := beneath.Open(dfd, base, unix.O_PATH, 0, path)
		if errors.Is(err, fs.ErrNotExist) {
			fd, err := beneath.Open(dfd, base, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_EXCL|unix.O_NOCTTY, 0o600, path)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				return nil, logErr(path, err)
			}
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != nil {
			return nil, logErr(path, err)
		}
		f, err := reopenRegular(pfd, path)
		unix.Close(pfd)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("%w: --log %q: the file keeps changing while it is opened", worker.ErrInvalid, path)
}

// reopenRegular opens the O_PATH descriptor pfd for appending if it is a regular file.
func reopenRegular(pfd int, path string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("--log: %w", os.NewSyscallError("fstat", err))
	}
	if err := checkLogFile(&st, path); err != nil {
		return nil, err
	}
	fd, err := beneath.Reopen(pfd, unix.O_WRONLY|unix.O_APPEND|unix.O_NOCTTY, path)
	if err != nil {
		return nil, logErr(path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// checkLogFile refuses an existing log file hlaunch must not append to: anything but a regular file;
// a file with more than one name (a hard link planted in a writable log directory would have a root
// launcher append a worker's output to whatever file it names); a file another user owns, or that its
// group or anyone may write (a local user who made /tmp/cron-42.log first, mode 0666, would read the
// worker's output: an existing file is opened without O_CREAT, so fs.protected_regular does not apply).
func checkLogFile(st *unix.Stat_t, path string) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: --log %q: not a regular file", worker.ErrInvalid, path)
	}
	if st.Nlink > 1 {
		return fmt.Errorf("%w: --log %q: the file has %d hard links; a log is appended to only when it is its one name", worker.ErrInvalid, path, st.Nlink)
	}
	if euid := uint32(os.Geteuid()); st.Uid != euid {
		return fmt.Errorf("%w: --log %q: the existing file is owned by uid %d, not by the launcher (uid %d); remove it or name another file", worker.ErrInvalid, path, st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%w: --log %q: the existing file is writable by its group or others (mode %04o); chmod go-w it or name another file", worker.ErrInvalid, path, st.Mode&0o7777)
	}
	return nil
}

// logErr words a failure to open or create the log.
func logErr(path string, err error) error {
	if beneath.IsUnsafe(err) {
		return fmt.Errorf("%w: --log %q passes through a symbolic link (refused: name the real path; a worker could re-point a link between a check and the open)", worker.ErrInvalid, path)
	}
	return fmt.Errorf("%w: --log: %w", worker.ErrInvalid, err)
}

// openDir opens the directory rel below top (top itself for "") as an O_PATH descriptor, through no
// symbolic link.
func openDir(top int, rel, name string) (int, error) {
	if rel == "" || rel == "." {
		fd, err := unix.Dup(top)
		if err != nil {
			return -1, os.NewSyscallError("dup", err)
		}
		return fd, nil
	}
	return beneath.Open(top, rel, unix.O_PATH|unix.O_DIRECTORY, 0, name)
}
