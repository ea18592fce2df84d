package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The mount helpers below work on O_PATH descriptors opened with RESOLVE_NO_SYMLINKS, never on path
// strings handed to mount(2): a path is resolved once, refusing any symbolic link, and the mount goes
// exactly where that resolution ended. A worker that swaps a directory of its own home for a link to
// another profile between Validate and Enter gains nothing.

// noFollow is the resolution used for every sandbox path: no symbolic link anywhere, magic links included.
const noFollow = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openPath opens p (absolute) as an O_PATH descriptor without following any symbolic link.
func openPath(p string, dirOnly bool) (int, error) {
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if dirOnly {
		flags |= unix.O_DIRECTORY
	}
	fd, err := openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: flags, Resolve: noFollow})
	if err != nil {
		return -1, pathErr("openat2", p, err)
	}
	return fd, nil
}

// openBeneath opens rel below dirfd as an O_PATH descriptor; the walk may neither leave dirfd nor
// follow a symbolic link. name is used in errors.
func openBeneath(dirfd int, rel, name string, dirOnly bool) (int, error) {
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if dirOnly {
		flags |= unix.O_DIRECTORY
	}
	fd, err := openat2(dirfd, rel, &unix.OpenHow{Flags: flags, Resolve: noFollow | unix.RESOLVE_BENEATH})
	if err != nil {
		return -1, pathErr("openat2", name, err)
	}
	return fd, nil
}

// openat2 retries the kernel's EAGAIN (a rename or mount raced a RESOLVE_BENEATH walk) and EINTR; the
// retry is bounded so a hostile renamer cannot spin us forever.
func openat2(dirfd int, p string, how *unix.OpenHow) (int, error) {
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, p, how)
		if (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && i < 16 {
			continue
		}
		return fd, err
	}
}

// pathErr wraps a resolution failure; a symbolic link (ELOOP with RESOLVE_NO_SYMLINKS) or an escape
// (EXDEV with RESOLVE_BENEATH) also matches ErrUnsafePath.
func pathErr(op, p string, err error) error {
	pe := &os.PathError{Op: op, Path: p, Err: err}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return fmt.Errorf("%w: %w", ErrUnsafePath, pe)
	}
	return pe
}

// fdPath names an open descriptor for the classic mount(2) calls, which take paths only. The host's
// /proc is still mounted while the view is built.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// cloneTree returns a detached recursive copy of the mount tree at fd (open_tree OPEN_TREE_CLONE). The
// copy keeps the mount flags it has now, so taking it before the whole view is made read-only keeps a
// writable path exactly as writable as it is on the host.
func cloneTree(fd int, name string) (int, error) {
	t, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, &os.PathError{Op: "open_tree", Path: name, Err: err}
	}
	return t, nil
}

// attachTree mounts the detached tree on the object open at target.
func attachTree(tree, target int, name string) error {
	err := unix.MoveMount(tree, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
	if err != nil {
		return &os.PathError{Op: "move_mount", Path: name, Err: err}
	}
	return nil
}

// setAttr sets mount attributes (unix.MOUNT_ATTR_*) on the mount at fd, which may be a detached tree;
// with recursive, on every mount below it too (one mount_setattr call however many mounts there are).
func setAttr(fd int, name string, attr uint64, recursive bool) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: attr}); err != nil {
		return &os.PathError{Op: "mount_setattr", Path: name, Err: err}
	}
	return nil
}

// mountTmpfs mounts a fresh tmpfs on the directory open at target.
func mountTmpfs(target int, name string, flags uintptr, data string) error {
	if err := unix.Mount("tmpfs", fdPath(target), "tmpfs", flags|unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return &os.PathError{Op: "mount tmpfs", Path: name, Err: err}
	}
	return nil
}

// bindDevNull covers the non-directory open at target with /dev/null: reads are empty, connect(2) on a
// socket path is refused.
func bindDevNull(target int, name string) error {
	if err := unix.Mount("/dev/null", fdPath(target), "", unix.MS_BIND, ""); err != nil {
		return &os.PathError{Op: "mount bind /dev/null", Path: name, Err: err}
	}
	return nil
}

// openTarget opens p as a mount point in the view being built. A missing p is created (a directory, or
// an empty file when dir is false) with its missing parents; this only succeeds on a writable file
// system, that is inside the private /tmp, where the host's path was covered.
func openTarget(p string, dir bool) (int, error) {
	fd, err := openPath(p, false)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	// The parents are created with MkdirAll, which follows links: safe because only the fresh tmpfs
	// (with no links in it) is writable here; the final open still refuses links.
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return -1, err
	}
	if dir {
		err = unix.Mkdir(p, 0o755)
	} else {
		var f int
		f, err = unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
		if err == nil {
			unix.Close(f)
		}
	}
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, &os.PathError{Op: "create mount point", Path: p, Err: err}
	}
	return openPath(p, false)
}

// isDir reports whether the object open at fd is a directory.
func isDir(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, os.NewSyscallError("fstat", err)
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// isNotExist reports a missing path (ENOENT, or ENOTDIR for a file in the middle of it).
func isNotExist(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}
