package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Net values of Spec.Net.
const (
	// NetHost keeps the launcher's network namespace (the zero value "" means the same).
	NetHost = "host"
	// NetNone gives the child a new, empty network namespace: only the loopback device, brought up.
	NetNone = "none"
)

// Hostname is the host name the child sees in its own UTS namespace.
const Hostname = "hlaunch"

// Spec describes the world of one sandboxed worker: new mount, pid, ipc and uts namespaces (and
// network with Net "none"), a read-only view of the host in which, under the hermes root, only the
// target profile exists, and a child without privileges.
//
// The launcher uses it in three steps: Validate in the parent, SysProcAttr to fill the clone flags of
// the init stub, and Enter in the stub (on the thread that will execve the target, inside the new
// namespaces). The target then runs as PID 1 of its pid namespace, with two consequences the launcher
// must know: the kernel delivers to PID 1 only the signals it installed a handler for (SIGKILL and
// SIGSTOP from the host excepted), so a SIGTERM to a worker that does not handle it is dropped and only
// the SIGKILL after the grace ends it; and when PID 1 exits the kernel kills every other process of the
// namespace, so a worker's whole tree ends with it (orphans are re-parented to the worker, which must
// reap them or leave zombies until it exits).
type Spec struct {
	// Root is the hermes root, absolute, clean and without symbolic links. Required.
	Root string
	// Home is the target profile's home: Root itself for the default profile, else <Root>/profiles/<name>.
	// It stays writable. Required.
	Home string
	// HomeID is the home's identity when its .env was read (Profile.HomeID); the view refuses a Home
	// that is no longer that directory (a worker renamed another profile's home into its place). Zero
	// value: not checked.
	HomeID FileID
	// Cwd is the child's working directory; it stays writable. Empty: none is made writable.
	Cwd string
	// RW are extra host paths (files or directories) that stay writable (--rw). A writable path inside
	// Root must be inside Home: anything else would re-expose what the sandbox hides.
	RW []string
	// Hide are paths made invisible: hlaunch's state directory, a sidecar socket's directory. A
	// directory is covered by an empty read-only tmpfs, anything else by /dev/null. A missing path is
	// skipped.
	Hide []string
	// Cover are host directories of other users' files - the users' homes (/root, /home, the launcher's
	// $HOME) - covered by an empty tmpfs, read-only once the view is built, in which only what the view
	// needs is re-made: the path down to the hermes root when it lies inside, the writable paths. A
	// missing path, one reached through a link, "/" and a path inside the hermes root are skipped.
	Cover []string
	// Protect are files of the home, by name (".env"), that the worker may read but not change,
	// truncate, replace (rename over), remove or hard-link: each is bound read-only over itself in the
	// view, so a worker cannot persist a change into its profile's next launch through them. One that
	// is a symbolic link, not a regular file, or has more than one link is refused (Validate, and the
	// view again). A missing one cannot be covered (its mount point would have to be made in the host's
	// home): it is refused when Require names it too, and left out otherwise (the worker may create it).
	Protect []string
	// Require names those of Protect that must exist.
	Require []string
	// Net is NetHost (or "") to keep the host network, NetNone for a new empty network namespace.
	Net string
	// UID and GID are the ids the child drops to when SetUser is true (ids as seen inside the sandbox;
	// in a user namespace only 0, the caller itself, is mapped).
	UID, GID int
	// SetUser makes the child drop to UID:GID with no supplementary groups. Whatever its value, the child
	// ends with empty capability sets unless KeepCaps is set.
	SetUser bool
	// KeepCaps leaves the child's capabilities alone. Zero value: every set (effective, permitted,
	// inheritable, ambient, bounding) is emptied, because a child holding CAP_SYS_ADMIN could simply
	// unmount the view and read other profiles' files.
	KeepCaps bool
	// SeccompOff leaves out the system-call filter (internal/seccomp) that the init stub otherwise installs
	// right before it starts the target. Zero value: the filter is installed.
	SeccompOff bool
	// Unscoped leaves out the Landlock scopes (internal/landlock: no abstract Unix socket and no signal
	// outside the sandbox's domain), for a kernel that has none (landlock.Supported); the launcher records
	// it in the receipt. Zero value: the scopes are set, and a kernel that refuses them fails the launch.
	Unscoped bool
}

// Validate checks the Spec before anything is started: absolute clean paths, Home equal to Root or
// one level under <Root>/profiles, no writable path re-exposing a hidden part of Root, a known Net
// value, and (on the file system) that Root, Home, Cwd, RW and Hide pass through no symbolic link.
func (s *Spec) Validate() error {
	if err := s.validateLexical(); err != nil {
		return err
	}
	return s.validateFS()
}

func (s *Spec) validateLexical() error {
	check := func(what, p string) error {
		if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fmt.Errorf("%w: %s %q must be an absolute clean path", ErrInvalid, what, p)
		}
		return nil
	}
	if err := check("root", s.Root); err != nil {
		return err
	}
	if s.Root == "/" {
		return fmt.Errorf("%w: root may not be /", ErrInvalid)
	}
	if err := check("home", s.Home); err != nil {
		return err
	}
	if s.Home != s.Root {
		name, ok := s.profileName()
		if !ok {
			return fmt.Errorf("%w: home %q is neither the root nor %s/profiles/<name>", ErrInvalid, s.Home, s.Root)
		}
		if strings.HasPrefix(name, ".") {
			return fmt.Errorf("%w: home %q is a hidden entry of profiles/", ErrInvalid, s.Home)
		}
	}
	for _, w := range s.writable() {
		if err := s.checkWritable(w.flag, w.path); err != nil {
			return err
		}
	}
	for _, h := range s.Hide {
		if err := check("hidden path", h); err != nil {
			return err
		}
		// Hiding a directory that holds the home would hide the worker's own home (and "/" everything).
		if pathUnder(s.Home, h) {
			return fmt.Errorf("%w: hidden path %q contains the profile home %s", ErrInvalid, h, s.Home)
		}
	}
	for _, name := range append(append([]string(nil), s.Protect...), s.Require...) {
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return fmt.Errorf("%w: protected file %q must be a name in the home", ErrInvalid, name)
		}
	}
	for _, name := range s.Require {
		if !slices.Contains(s.Protect, name) {
			return fmt.Errorf("%w: required file %q is not among the protected ones", ErrInvalid, name)
		}
	}
	for _, c := range s.Cover {
		if err := check("covered path", c); err != nil {
			return err
		}
	}
	switch s.Net {
	case "", NetHost, NetNone:
	default:
		return fmt.Errorf("%w: net %q (want %q or %q)", ErrInvalid, s.Net, NetHost, NetNone)
	}
	if s.SetUser && (s.UID < 0 || s.GID < 0) {
		return fmt.Errorf("%w: user %d:%d", ErrInvalid, s.UID, s.GID)
	}
	return nil
}

// profileName returns the target profile's name, and false when Home is not <Root>/profiles/<name>.
func (s *Spec) profileName() (string, bool) {
	dir, name := filepath.Split(s.Home)
	if filepath.Clean(dir) != filepath.Join(s.Root, "profiles") || name == "" {
		return "", false
	}
	return name, true
}

// checkWritable refuses a writable path (flag names where it came from: --cwd or --rw) that would undo
// the view once it is bound writable over it:
//   - "/" or an ancestor of the hermes root. A clone attached over "/" lands on top of the process's root
//     directory, where no later path lookup looks (they start at the root *below* it): every later mount
//     (the profile view, the hidden paths) would go under it, and the whole host would be writable at
//     "/..". An ancestor of the root would expose the root's other profiles until the view covers them;
//     refusing both keeps "the writable clones come first, everything after covers them" a simple rule.
//   - the root itself (for a named profile), or anything under it but outside the home: other profiles,
//     the root's .env.
//   - anything under /proc or /sys: a writable cgroupfs lets the worker leave its cgroup (write its pid to
//     an ancestor's cgroup.procs), a writable sysfs or procfs changes the host.
func (s *Spec) checkWritable(flag, w string) error {
	if w == "" || !filepath.IsAbs(w) || filepath.Clean(w) != w {
		return fmt.Errorf("%w: %s %q must be an absolute clean path", ErrInvalid, flag, w)
	}
	if w == "/" || (pathUnder(s.Root, w) && w != s.Root) {
		return fmt.Errorf("%w: %s %q: a writable path may not be / or contain the hermes root %s", ErrInvalid, flag, w, s.Root)
	}
	if s.Home == s.Root && pathUnder(w, filepath.Join(s.Root, "profiles")) {
		return fmt.Errorf("%w: %s %q is inside another profile", ErrInvalid, flag, w)
	}
	if pathUnder(w, s.Root) && !pathUnder(w, s.Home) {
		return fmt.Errorf("%w: %s %q is inside the hermes root but not inside the home", ErrInvalid, flag, w)
	}
	if pathUnder(w, "/proc") || pathUnder(w, "/sys") {
		return fmt.Errorf("%w: %s %q: /proc and /sys stay read-only", ErrInvalid, flag, w)
	}
	return nil
}

// writablePath is one writable path and the flag it came from.
type writablePath struct{ flag, path string }

// writable lists Cwd and RW, without duplicates (an empty Cwd is left out; an empty RW entry is kept
// so that Validate refuses it).
func (s *Spec) writable() []writablePath {
	out := make([]writablePath, 0, len(s.RW)+1)
	seen := map[string]bool{}
	if s.Cwd != "" {
		out = append(out, writablePath{"--cwd", s.Cwd})
		seen[s.Cwd] = true
	}
	for _, p := range s.RW {
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, writablePath{"--rw", p})
	}
	return out
}

// pathUnder reports whether clean absolute p is dir or inside it, lexically.
func pathUnder(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}
