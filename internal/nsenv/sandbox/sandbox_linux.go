package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// validateFS resolves every path of s on the file system the way Enter will: no symbolic link anywhere,
// Home beneath Root.
func (s *Spec) validateFS() error {
	rootFD, err := openPath(s.Root, true)
	if err != nil {
		return fmt.Errorf("sandbox root: %w", err)
	}
	defer unix.Close(rootFD)
	homeFD, err := s.openHome(rootFD)
	if err != nil {
		return err
	}
	for _, name := range s.Protect {
		fd, err := s.checkProtected(homeFD, name)
		if err != nil {
			unix.Close(homeFD)
			return err
		}
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	unix.Close(homeFD)
	for _, w := range s.writable() {
		fd, err := openPath(w.path, false)
		if err != nil {
			return &pathProblem{flag: w.flag, path: w.path, err: err}
		}
		unix.Close(fd)
	}
	for _, h := range s.Hide {
		fd, err := openPath(h, false)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox hidden path: %w", err)
		}
		unix.Close(fd)
	}
	return nil
}

// HomeOwner returns the uid and gid that own Home, resolved as Enter will resolve it (beneath Root, no
// symbolic link): a root launcher's worker runs as them unless the caller names an identity.
func (s *Spec) HomeOwner() (uid, gid int, err error) {
	rootFD, err := openPath(s.Root, true)
	if err != nil {
		return 0, 0, fmt.Errorf("sandbox root: %w", err)
	}
	defer unix.Close(rootFD)
	homeFD, err := s.openHome(rootFD)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(homeFD)
	var st unix.Stat_t
	if err := unix.Fstat(homeFD, &st); err != nil {
		return 0, 0, &os.PathError{Op: "fstat", Path: s.Home, Err: err}
	}
	return int(st.Uid), int(st.Gid), nil
}

// openHome opens Home beneath the already open Root.
func (s *Spec) openHome(rootFD int) (int, error) {
	rel := "."
	if s.Home != s.Root {
		rel = strings.TrimPrefix(s.Home, s.Root+"/")
	}
	fd, err := openBeneath(rootFD, rel, s.Home, true)
	if err != nil {
		return -1, fmt.Errorf("sandbox home: %w", err)
	}
	if s.HomeID != (FileID{}) {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("sandbox home: %w", &os.PathError{Op: "fstat", Path: s.Home, Err: err})
		}
		if (FileID{Dev: uint64(st.Dev), Ino: st.Ino}) != s.HomeID {
			unix.Close(fd)
			// Not ErrUnsafePath: no link is involved, the directory at the path was replaced or renamed.
			return -1, fmt.Errorf("sandbox home: %w: %s is no longer the directory whose .env was read (replaced or renamed since)", ErrInvalid, s.Home)
		}
	}
	return fd, nil
}

// SysProcAttr adds the sandbox's namespaces to attr: mount, pid, ipc and uts, network for Net "none",
// and, when the caller is not root and the kernel allows it, a user namespace that maps the caller's
// uid and gid to 0 (the only ids an unprivileged process may map; setgroups is denied). The caller
// keeps the rest of attr (Setpgid or Setsid, Foreground, Pdeathsig, UseCgroupFD) as it set it; a
// controlling terminal inherited from the caller's session is given up inside (dropTerminal), one of the
// worker's own (a new session with a pty's slave) is kept.
func (s *Spec) SysProcAttr(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
	if s.Net == NetNone {
		attr.Cloneflags |= unix.CLONE_NEWNET
	}
	if os.Geteuid() != 0 && UserNamespaces().Err == nil {
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
}

// Enter builds the sandbox from inside the child, in the namespaces SysProcAttr asked for, before the
// target is executed. It must run on the thread that will call execve (runtime.LockOSThread): no_new_privs
// and the capability sets belong to a thread. On error the child must not execute the target.
//
// Steps: / becomes recursively private (nothing propagates either way); a cgroup namespace; the writable
// paths and the harmless devices (null, zero, full, random, urandom, tty, ptmx) are cloned as they are;
// every mount becomes read-only, nodev and nosuid with one mount_setattr(AT_RECURSIVE); the devices are
// put back; /dev/pts becomes a new devpts instance (none of the host's terminals); /tmp, /var/tmp and
// /dev/shm get private tmpfs, the homes (Cover) and /run empty ones (mount_private_linux.go); the writable
// clones (nodev, nosuid) are put back; the hermes root is replaced by a view holding only the target
// home, whose Protect files are bound read-only; Hide paths are covered; /proc is mounted fresh for the new pid namespace
// (read-only); then the host name, core dumps, the session's inheritance (keyring, personality,
// oom_score_adj), no_new_privs and the identity.
func (s *Spec) Enter() error {
	if err := s.validateLexical(); err != nil {
		return err
	}
	// PID 1 proves a new pid namespace; SysProcAttr never asks for one without a new mount namespace.
	if os.Getpid() != 1 {
		return fmt.Errorf("%w: pid is %d, not 1", ErrNotIsolated, os.Getpid())
	}
	if err := stdioNotDirectories(); err != nil {
		return err
	}
	// Private, not slave: with rslave a file system the host mounts later (a USB disk, an NFS share)
	// would propagate in writable, after the view was made read-only. The price: the sandbox keeps
	// its copy of a mount the host unmounts until the worker exits.
	if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return &os.PathError{Op: "mount rprivate", Path: "/", Err: err}
	}
	// A cgroup namespace rooted at the cgroup the launcher placed us in (the Config that brought us here is
	// the go-ahead sent after placement, on every placement path): the worker's /proc/self/cgroup reads
	// "/", and a cgroup.procs write that would move a process out of this subtree fails (ENOENT) even
	// where a cgroupfs were writable. The unshare is per thread: this is the thread that starts the target.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return os.NewSyscallError("unshare(CLONE_NEWCGROUP)", err)
	}
	// The mount points the view creates (the hermes root's path re-made inside the private /tmp) must be
	// searchable by the worker whatever umask the launcher has (a unit's UMask=0027); the worker gets the
	// launcher's umask back.
	defer unix.Umask(unix.Umask(0o022))
	v, err := s.openView()
	if err != nil {
		return err
	}
	defer v.close()
	if err := s.buildView(v); err != nil {
		return err
	}
	return s.harden()
}

// writableAttrs are set on every writable clone.
const writableAttrs = unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID

// view holds the descriptors taken before the host is made read-only.
type view struct {
	rootFD   int
	homeTree int
	paths    []string // writable paths (other than inside Home), parents first
	trees    []int    // their clones, same order
	dirs     []bool
	devPaths []string // sandboxDevices present on this host
	devTrees []int    // their clones
	aliases  []string // other mounts showing the hermes root's files (rootAliases)
	runKept  []keptFile
}

func (v *view) close() {
	for _, fd := range append(append([]int{v.rootFD, v.homeTree}, v.trees...), v.devTrees...) {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	for _, k := range v.runKept {
		unix.Close(k.tree)
	}
}

func (s *Spec) openView() (*view, error) {
	v := &view{rootFD: -1, homeTree: -1}
	var err error
	if v.rootFD, err = openPath(s.Root, true); err != nil {
		return v, fmt.Errorf("sandbox root: %w", err)
	}
	if v.aliases, err = s.rootAliases(v.rootFD); err != nil {
		return v, err
	}
	if v.runKept, err = runKept(); err != nil {
		return v, err
	}
	homeFD, err := s.openHome(v.rootFD)
	if err != nil {
		return v, err
	}
	v.homeTree, err = cloneTree(homeFD, s.Home)
	unix.Close(homeFD)
	if err != nil {
		return v, err
	}
	// The writable copies get nodev and nosuid like the rest of the view (a device node or a set-user-ID
	// file planted in a home does nothing inside).
	if err := setAttr(v.homeTree, s.Home, writableAttrs, true); err != nil {
		return v, err
	}
	for _, d := range sandboxDevices() {
		fd, err := openPath(d, false)
		if err != nil {
			continue // absent, or a link (ptmx -> pts/ptmx): the devpts clone serves it
		}
		t, err := cloneTree(fd, d)
		unix.Close(fd)
		if err != nil {
			return v, err
		}
		v.devPaths, v.devTrees = append(v.devPaths, d), append(v.devTrees, t)
	}
	var ws []string
	for _, w := range s.writable() {
		ws = append(ws, w.path)
	}
	slices.Sort(ws) // a parent sorts before its children, so children end up on top
	for _, w := range ws {
		if pathUnder(w, s.Home) {
			continue // the home's clone carries it
		}
		fd, err := openPath(w, false)
		if err != nil {
			return v, fmt.Errorf("sandbox writable path: %w", err)
		}
		dir, err := isDir(fd)
		if err == nil {
			var t int
			t, err = cloneTree(fd, w)
			if err == nil {
				err = setAttr(t, w, writableAttrs, true)
			}
			if err == nil {
				v.paths, v.trees, v.dirs = append(v.paths, w), append(v.trees, t), append(v.dirs, dir)
			}
		}
		unix.Close(fd)
		if err != nil {
			return v, err
		}
	}
	return v, nil
}

// pathProblem is a writable path (--cwd, --rw) that could not be opened. Its message says in words what
// is wrong with the path the caller named, without the system call; it is ErrInvalid and the
// resolution's own error (ErrUnsafePath, fs.ErrNotExist, ...) for errors.Is.
type pathProblem struct {
	flag, path string
	err        error
}

func (e *pathProblem) Error() string {
	return fmt.Sprintf("%v: %s %s: %s", ErrInvalid, e.flag, e.path, resolveProblem(e.err))
}

func (e *pathProblem) Unwrap() []error { return []error{ErrInvalid, e.err} }

// resolveProblem says in words why a path could not be opened.
func resolveProblem(err error) string {
	switch {
	case errors.Is(err, ErrUnsafePath):
		return "passes through a symbolic link (refused: name the real path)"
	case errors.Is(err, unix.ENOENT):
		return "does not exist"
	case errors.Is(err, unix.ENOTDIR):
		return "a component of it is not a directory"
	case errors.Is(err, unix.EACCES):
		return "permission denied"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
