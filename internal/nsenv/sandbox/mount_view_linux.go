package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// sandboxDevices are the device nodes that stay usable; every other device node, in /dev or anywhere
// else, is behind nodev. /dev/pts is not among them: the host's devpts holds every terminal of the host
// (a root launcher's worker could open root's), so the view gets a new instance (newDevpts).
func sandboxDevices() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}
}

// buildView turns the child's copy of the host mount tree into the sandbox's view. The order matters:
// everything read-only first, then the private tmpfs and the covers (homes, /run), then the writable paths, then the hermes root's
// view, then Hide, then /proc; each later step covers the earlier ones, so a writable path that
// contains the hermes root (--rw $HOME) cannot re-expose other profiles, and a hidden path inside a
// writable one stays hidden.
func (s *Spec) buildView(v *view) error {
	slash, err := openPath("/", true)
	if err != nil {
		return err
	}
	// nodev too: a child left as host uid 0 could otherwise read another profile's files from the raw
	// disk (/dev/sda is root's); the harmless devices come back from their clones below.
	// nosuid: with no_new_privs a set-user-ID exec grants nothing anyway; nosuid says so at the mount too.
	err = setAttr(slash, "/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID, true)
	unix.Close(slash)
	if err != nil {
		return err
	}
	if err := makePrivate(); err != nil {
		return err
	}
	covers, err := s.coverDirs()
	defer func() {
		for _, fd := range covers {
			unix.Close(fd)
		}
	}()
	if err != nil {
		return err
	}
	run, err := coverRun(v.runKept)
	if err != nil {
		return err
	}
	if run >= 0 {
		covers = append(covers, run)
	}
	for i, p := range v.devPaths {
		if err := attachAt(v.devTrees[i], p, false); err != nil {
			return err
		}
	}
	if err := newDevpts(); err != nil {
		return err
	}
	for i, p := range v.paths {
		if err := attachAt(v.trees[i], p, v.dirs[i]); err != nil {
			return err
		}
	}
	if err := s.profileView(v); err != nil {
		return err
	}
	for _, a := range v.aliases {
		if err := hide(a); err != nil {
			return err
		}
	}
	for _, h := range s.Hide {
		if err := hide(h); err != nil {
			return err
		}
	}
	// The covers were writable while the view re-made its mount points in them; now read-only (not
	// recursively: what was attached inside keeps its own flags).
	for _, fd := range covers {
		if err := setAttr(fd, "covered directory", unix.MOUNT_ATTR_RDONLY, false); err != nil {
			return err
		}
	}
	proc, err := openPath("/proc", true)
	if err != nil {
		return err
	}
	defer unix.Close(proc)
	// Read-only: the fresh /proc/sys writes the host's sysctls, and nothing a worker needs writes /proc.
	if err := unix.Mount("proc", fdPath(proc), "proc", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount fresh /proc: %w", err)
	}
	return nil
}

// newDevpts mounts a new devpts instance on /dev/pts: a pseudo-terminal the worker opens (/dev/ptmx, a
// clone of the host's node, allocates from the devpts next to it; a link pts/ptmx serves it too) is its
// own, and no terminal of the host is there to open. A host without /dev/pts is left as it is.
func newDevpts() error {
	fd, err := openPath("/dev/pts", true)
	if err != nil {
		return nil //nolint:nilerr // no devpts mount point on this host
	}
	defer unix.Close(fd)
	if err := unix.Mount("devpts", fdPath(fd), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return &os.PathError{Op: "mount devpts", Path: "/dev/pts", Err: err}
	}
	return nil
}

// privateTmpfs covers dir with an empty writable tmpfs; a missing dir (or one reached through a link,
// as /dev/shm -> /run/shm on old systems) is left alone.
func privateTmpfs(dir, data string) error {
	fd, err := openPath(dir, true)
	if err != nil {
		return nil //nolint:nilerr // nothing to make private
	}
	defer unix.Close(fd)
	return mountTmpfs(fd, dir, 0, data)
}

// attachAt mounts a writable clone back at its own path as the view now shows it (inside the private
// /tmp the path is re-created first).
func attachAt(tree int, p string, dir bool) error {
	fd, err := openTarget(p, dir)
	if err != nil {
		return fmt.Errorf("sandbox writable path: %w", err)
	}
	defer unix.Close(fd)
	return attachTree(tree, fd, p)
}

// profileView replaces what the hermes root shows. Default profile: the root (writable, as cloned) with
// an empty read-only tmpfs over profiles/. Named profile: an empty read-only tmpfs over the root holding
// only profiles/<name>, with the writable home bound there; the root's own .env, auth.json, state.db are
// gone with the rest.
func (s *Spec) profileView(v *view) error {
	root, err := openTarget(s.Root, true)
	if err != nil {
		return fmt.Errorf("sandbox root: %w", err)
	}
	defer unix.Close(root)
	if s.Home == s.Root {
		if err := attachTree(v.homeTree, root, s.Home); err != nil {
			return err
		}
		if err := hideDir(filepath.Join(s.Root, "profiles"), "mode=0755"); err != nil {
			return err
		}
		return s.protectHome()
	}
	if err := mountTmpfs(root, s.Root, unix.MS_NOEXEC, "mode=0755"); err != nil {
		return err
	}
	// Re-open: root still names the covered directory, the tmpfs is on top of the path now.
	top, err := openPath(s.Root, true)
	if err != nil {
		return err
	}
	defer unix.Close(top)
	name, _ := s.profileName()
	if err := unix.Mkdirat(top, "profiles", 0o755); err != nil {
		return fmt.Errorf("sandbox view: mkdir profiles: %w", err)
	}
	if err := unix.Mkdirat(top, "profiles/"+name, 0o755); err != nil {
		return fmt.Errorf("sandbox view: mkdir profiles/%s: %w", name, err)
	}
	if err := setAttr(top, s.Root, unix.MOUNT_ATTR_RDONLY, false); err != nil {
		return err
	}
	target, err := openBeneath(top, "profiles/"+name, s.Home, true)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	if err := attachTree(v.homeTree, target, s.Home); err != nil {
		return err
	}
	return s.protectHome()
}

// protectHome binds the Protect files read-only in the home as the view now shows it (the descriptors
// taken before the home was attached name the directory below it).
func (s *Spec) protectHome() error {
	if len(s.Protect) == 0 {
		return nil
	}
	home, err := openPath(s.Home, true)
	if err != nil {
		return fmt.Errorf("sandbox home: %w", err)
	}
	defer unix.Close(home)
	return s.protectFiles(home)
}

// hideDir covers an existing directory with an empty read-only tmpfs (tmpfs options in data).
func hideDir(p, data string) error {
	fd, err := openPath(p, true)
	if err != nil {
		return nil //nolint:nilerr // missing: nothing to hide
	}
	defer unix.Close(fd)
	return mountTmpfs(fd, p, unix.MS_RDONLY|unix.MS_NOEXEC, data)
}

// hide makes p invisible: a directory gets an empty read-only tmpfs, anything else (a socket, a file)
// is covered by /dev/null. A missing path is skipped; a path through a link is refused.
func hide(p string) error {
	fd, err := openPath(p, false)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("sandbox hidden path: %w", err)
	}
	defer unix.Close(fd)
	dir, err := isDir(fd)
	if err != nil {
		return err
	}
	if dir && isPrivate(p) {
		return nil // already the view's own: the host's directory is not there
	}
	if dir {
		return mountTmpfs(fd, p, unix.MS_RDONLY|unix.MS_NOEXEC, "mode=0")
	}
	return bindDevNull(fd, p)
}

// coverDirs mounts an empty tmpfs (mode 0755, writable for now) on every Cover directory that exists
// without a link, is not "/" and is not inside the hermes root (the profile view covers that), and
// returns a descriptor of each new tmpfs for buildView to make read-only at the end. A cover inside
// another cover (the launcher's $HOME under /home) is left to the outer one.
func (s *Spec) coverDirs() ([]int, error) {
	var tops []int
	for _, c := range s.Cover {
		if c == "/" || pathUnder(c, s.Root) {
			continue
		}
		fd, err := openPath(c, true)
		if err != nil {
			continue // missing, a link, or already under a cover: nothing of the host's to cover
		}
		err = mountTmpfs(fd, c, unix.MS_NOEXEC, "mode=0755")
		unix.Close(fd)
		if err != nil {
			return tops, err
		}
		top, err := openPath(c, true)
		if err != nil {
			return tops, err
		}
		tops = append(tops, top)
	}
	return tops, nil
}
