package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/hlaunch/hlaunch/internal/linux"
	"golang.org/x/sys/unix"
)

// The host's shared places, made the worker's own (docs/security.md, "The sandbox view"). The host is
// in the view read-only, but connect(2) needs no write access: every pathname Unix socket the worker's
// uid (or group) may reach serves it, wherever it lies. The places where sessions, agents and services
// keep their sockets are therefore not the host's inside: /tmp, /var/tmp and /dev/shm are fresh tmpfs
// (systemd's PrivateTmp model, size-bounded), and /run is an empty tmpfs that keeps only what a worker
// needs there: the file /etc/resolv.conf points to when it points into /run (systemd-resolved's
// stub-resolv.conf, resolvconf's, NetworkManager's), never a socket, and a private /run/lock.

// privateDir is a host directory the view replaces with a fresh, writable tmpfs of the worker's own.
type privateDir struct{ path, opts string }

// privateDirs are the shared writable directories every sandbox replaces. Each is bounded to a quarter
// of the machine's memory (tmpfs' default is half, and three of them would be one and a half times it);
// the pages are charged to the worker's memory cgroup as well, so --memory bounds them together.
func privateDirs() []privateDir {
	return []privateDir{
		{"/tmp", "mode=1777,size=25%"},
		{"/var/tmp", "mode=1777,size=25%"},
		{"/dev/shm", "mode=1777,size=25%"},
	}
}

// runDir is covered whole; runCoverOpts is its tmpfs (it only ever holds mount points).
const (
	runDir       = "/run"
	runCoverOpts = "mode=0755,size=1m"
)

// runPrivate are the directories of /run re-made, when the host has them, as fresh tmpfs in the cover:
// /run/lock is /var/lock's target (the FHS lock directory), and on old systems /dev/shm is a link to
// /run/shm.
func runPrivate() []privateDir {
	return []privateDir{
		{"/run/lock", "mode=1777,size=5m"},
		{"/run/shm", "mode=1777,size=25%"},
	}
}

// resolvConf is the name-service configuration whose target the /run cover keeps.
const resolvConf = "/etc/resolv.conf"

// keptFile is a regular file of the host's /run the view binds back (read-only) into the cover.
type keptFile struct {
	path string // its path, below /run
	tree int    // a detached clone of it, taken before /run is covered
}

// runKept opens what the /run cover keeps, before the cover hides it: the target of /etc/resolv.conf
// when that is a regular file inside /run (the link is the host's own, in its read-only /etc; it is
// followed, and only its final target's path is used). Nothing else of /run is kept: no socket, no
// directory.
func runKept() ([]keptFile, error) {
	fd, err := unix.Open(resolvConf, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil //nolint:nilerr // no resolv.conf (or a dangling link): nothing to keep
	}
	defer unix.Close(fd)
	target, err := os.Readlink(fdPath(fd))
	if err != nil || !filepath.IsAbs(target) || !pathUnder(target, runDir) || target == runDir {
		return nil, nil //nolint:nilerr // not inside /run: the read-only /etc serves it as it is
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil //nolint:nilerr // not a regular file: kept out with the rest of /run
	}
	t, err := cloneTree(fd, target)
	if err != nil {
		return nil, err
	}
	return []keptFile{{path: target, tree: t}}, nil
}

// makePrivate gives the view its own /tmp, /var/tmp and /dev/shm.
func makePrivate() error {
	for _, d := range privateDirs() {
		if err := privateTmpfs(d.path, d.opts); err != nil {
			return err
		}
	}
	return nil
}

// coverRun mounts the empty tmpfs over /run (writable while the view is built, like the homes' covers;
// the caller makes the returned descriptor read-only at the end), re-makes those of runPrivate the host
// has, and binds the kept files back read-only. A host without /run (or with a link there) is left as
// it is: -1.
func coverRun(kept []keptFile) (int, error) {
	fd, err := openPath(runDir, true)
	if err != nil {
		return -1, nil //nolint:nilerr // nothing to cover
	}
	var remake []privateDir
	for _, d := range runPrivate() {
		if h, err := openPath(d.path, true); err == nil {
			unix.Close(h)
			remake = append(remake, d)
		}
	}
	err = mountTmpfs(fd, runDir, unix.MS_NOEXEC, runCoverOpts)
	unix.Close(fd)
	if err != nil {
		return -1, err
	}
	top, err := openPath(runDir, true)
	if err != nil {
		return -1, err
	}
	if err := fillRun(remake, kept); err != nil {
		unix.Close(top)
		return -1, err
	}
	return top, nil
}

// fillRun makes the cover's private directories and binds its kept files.
func fillRun(remake []privateDir, kept []keptFile) error {
	for _, d := range remake {
		dir, err := openTarget(d.path, true)
		if err != nil {
			return err
		}
		err = mountTmpfs(dir, d.path, 0, d.opts)
		unix.Close(dir)
		if err != nil {
			return err
		}
	}
	for _, k := range kept {
		if err := setAttr(k.tree, k.path, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID, false); err != nil {
			return err
		}
		if err := attachAt(k.tree, k.path, false); err != nil {
			return err
		}
	}
	return nil
}

// isPrivate reports whether p is one of the directories the view already made its own (a private
// tmpfs or the /run cover), where hiding the host's directory has nothing left to hide.
func isPrivate(p string) bool {
	if p == runDir {
		return true
	}
	for _, d := range append(privateDirs(), runPrivate()...) {
		if p == d.path {
			return true
		}
	}
	return false
}

// protectFiles binds each of s.Protect read-only over itself in the view's home (open at home): the
// worker reads it, and cannot write, truncate, replace (rename over), remove or hard-link it. A missing
// one is left out unless s.Require names it; one that is a link, not a regular file, or has other hard
// links (another name that writes the same file) is refused (checkProtected).
func (s *Spec) protectFiles(home int) error {
	for _, name := range s.Protect {
		fd, err := s.checkProtected(home, name)
		if err != nil {
			return err
		}
		if fd < 0 {
			continue
		}
		err = bindReadOnly(fd, filepath.Join(s.Home, name))
		if err == nil {
			err = s.checkBound(home, name, fd)
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// checkProtected opens the protected file name below home (O_PATH, no link followed) and checks it:
// a regular file with one link. It returns -1 for a missing file that s.Require does not name.
func (s *Spec) checkProtected(home int, name string) (int, error) {
	p := filepath.Join(s.Home, name)
	fd, err := openBeneath(home, name, p, false)
	if err != nil {
		if errors.Is(err, unix.ENOENT) && !slices.Contains(s.Require, name) {
			return -1, nil
		}
		if errors.Is(err, unix.ENOENT) {
			return -1, fmt.Errorf("%w: %s does not exist, and a sandboxed worker could create it for the profile's next launch to read: create it (an empty file is what a missing one means to hermes)", ErrInvalid, p)
		}
		return -1, fmt.Errorf("%w: %s, which the worker may read but not change: %s", ErrInvalid, p, resolveProblem(err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s, which the worker may read but not change, is not a regular file with one link (%s, %d links)", ErrInvalid, p, linux.FileKind(st.Mode), st.Nlink)
	}
	return fd, nil
}

// checkBound re-opens name below home after its bind and checks that the path names the file checked
// (fd) on a read-only mount: the bind lands on the checked descriptor, and a rename over the path
// between the check and the bind would leave the bind on a file no longer there and the replacement in
// its place, writable.
func (s *Spec) checkBound(home int, name string, fd int) error {
	p := filepath.Join(s.Home, name)
	now, err := openBeneath(home, name, p, false)
	if err != nil {
		return fmt.Errorf("%w: %s changed while it was bound read-only: %s", ErrInvalid, p, resolveProblem(err))
	}
	defer unix.Close(now)
	var a, b unix.Stat_t
	var fs unix.Statfs_t
	if unix.Fstat(fd, &a) != nil || unix.Fstat(now, &b) != nil || unix.Fstatfs(now, &fs) != nil ||
		a.Dev != b.Dev || a.Ino != b.Ino || fs.Flags&unix.ST_RDONLY == 0 {
		return fmt.Errorf("%w: %s changed (replaced or renamed) while it was bound read-only", ErrInvalid, p)
	}
	return nil
}

// bindReadOnly mounts a read-only clone of the file open at fd over itself.
func bindReadOnly(fd int, name string) error {
	t, err := cloneTree(fd, name)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	if err := setAttr(t, name, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID, false); err != nil {
		return err
	}
	return attachTree(t, fd, name)
}
