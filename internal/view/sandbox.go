package view

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hlaunch/hlaunch/internal/landlock"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
	"github.com/hlaunch/hlaunch/internal/seccomp"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Sandbox builds the sandbox of spec, or returns nil when none is asked for, and the working directory
// the child starts in. The state and ledger directories, the default sidecar socket directories, the
// users' runtime directories (hiddenHostDirs) and the Hide paths of the Config (a sidecar's socket
// directory) are made invisible inside.
//
// The working directory (docs/security.md, "The sandbox view"): an explicit --cwd becomes writable
// (and so obeys the rules of a writable path: not /, not an ancestor of the root); without one the
// worker starts in the launcher's directory only when that is inside its home or a --rw path, and in
// its home otherwise (a sidecar runs in /, a gateway anywhere: none of that is the worker's).
//
// The identity is decided by worker.IdentityFor (docs/security.md, "Privilege follows the profile"): a
// root launcher's sandboxed worker never runs as host uid 0 unless the caller asks with --as 0:0; an
// unprivileged launcher's is the launcher's own uid, mapped to 0 in a user namespace
// (sandbox.Spec.SysProcAttr), and drops to the --as ids inside.
//
// root is the hermes root; own the launcher's state and ledger directories and hide the extra paths it
// hides (Config.Hide); environ is its environment.
func Sandbox(spec worker.Spec, prof *profile.Profile, id worker.Identity, cwd, root string, own, hide, environ []string) (*sandbox.Spec, string, error) {
	if !spec.Sandbox {
		return nil, cwd, nil
	}
	if os.Geteuid() != 0 {
		if err := sandbox.UserNamespaces().Err; err != nil {
			return nil, "", fmt.Errorf("--sandbox without root needs a user namespace: %w", err)
		}
	}
	sb := &sandbox.Spec{
		Root:   root,
		Home:   prof.Home,
		HomeID: sandbox.FileID(prof.HomeID()),
		Cwd:    spec.Cwd,
		RW:     spec.RW,
		Hide:   unique(append(append(own, hiddenHostDirs(environ)...), hide...)),
		Cover:  coveredHomes(environ),
		// The profile's own configuration, read-only (docs/security.md, "The sandbox view"): the .env
		// this launcher (and the next) composes the environ from, hermes' .op.env and config.yaml (what
		// the gateway's next hermes of the profile runs: its MCP servers, its terminal backend). The .env
		// must exist: a missing one cannot be covered, and the worker would create it. auth.json stays
		// writable: hermes refreshes the OAuth tokens in it from inside a run.
		Protect: []string{".env", ".op.env", "config.yaml"},
		Require: []string{".env"},
		Net:     string(spec.Net),
		// The filter is on unless the spec turns it off by name.
		SeccompOff: spec.Seccomp == worker.SeccompOff,
	}
	// The Landlock scopes (abstract sockets, signals) are on wherever the kernel has them; without them
	// the worker still starts, and its receipt says "landlock": "unavailable" (docs/security.md).
	sb.Unscoped = landlock.Supported() != nil
	if err := sb.Validate(); err != nil {
		return nil, "", worker.Invalid(err)
	}
	if !sb.SeccompOff {
		// Refused before anything starts, rather than by the init stub, which could only fail the launch.
		if err := seccomp.Supported(); err != nil {
			return nil, "", worker.Invalid(fmt.Errorf("--sandbox: %w (--seccomp off runs it without the filter)", err))
		}
	}
	if id.AsSet {
		sb.UID, sb.GID, sb.SetUser = int(id.AsUID), int(id.AsGID), true
	}
	return sb, cwd, nil
}

// viewCwd is the working directory of a sandboxed worker given no --cwd: the launcher's own when it is
// inside the home or a --rw path (both in the view, writable), else the home.
func viewCwd(launcherCwd, home string, rw []string) string {
	for _, d := range append([]string{home}, rw...) {
		if launcherCwd == d || strings.HasPrefix(launcherCwd, strings.TrimSuffix(d, "/")+"/") {
			return launcherCwd
		}
	}
	return home
}

// hiddenHostDirs are the host directories every sandbox hides, whoever launches it:
//   - /run/hlaunch, root's default sidecar socket (and state) directory (hlaunch-sidecar --socket), and
//     $XDG_RUNTIME_DIR/hlaunch, a user's: a CLI launch does not know which sidecars run, and hiding a
//     directory (not the socket file) survives a sidecar that renames a new socket into place;
//   - /run/user and the launcher's $XDG_RUNTIME_DIR: every user's runtime directory holds the sockets of
//     that user's systemd manager and session bus, and a unix socket stays connectable on a read-only
//     mount. A worker running as a user with a manager (the home's owner, often a linger user) could
//     otherwise ask it for a transient unit outside the sandbox;
//   - /run/screen: GNU screen's session sockets (S-<user>/), which take commands (screen -X stuff) typed
//     into the user's sessions outside the sandbox.
func hiddenHostDirs(environ []string) []string {
	dirs := []string{RootSidecarDir, "/run/user", "/run/screen"}
	if d := worker.EnvLookup(environ)("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		d = filepath.Clean(d)
		dirs = append(dirs, d, filepath.Join(d, "hlaunch"))
	}
	return dirs
}

// unique drops repeated entries, keeping the first.
func unique(ps []string) []string {
	out := ps[:0:0]
	seen := map[string]bool{}
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// RootSidecarDir is the directory of root's default sidecar socket and state.
const RootSidecarDir = "/run/hlaunch"

// LandlockMode is what a sandboxed worker's receipt says of its Landlock scopes.
func LandlockMode(sb *sandbox.Spec) worker.Landlock {
	if sb.Unscoped {
		return worker.LandlockUnavailable
	}
	return worker.LandlockScoped
}

// KeptGroups are the supplementary groups a sandboxed worker keeps, as host gids: an unprivileged
// launcher's own (its user namespace denies setgroups; the primary group is the one mapped to 0), none
// for a root launcher, whose worker drops them all.
func KeptGroups() []int {
	if os.Geteuid() == 0 {
		return nil
	}
	gs, err := os.Getgroups()
	if err != nil {
		return nil
	}
	kept := gs[:0:0]
	for _, g := range gs {
		if g != os.Getegid() {
			kept = append(kept, g)
		}
	}
	return kept
}

// coveredHomes are the users' homes every sandbox covers (docs/security.md, "The sandbox view"): /root,
// /home and the launcher's $HOME. The host is read-only in the view, and a worker reads what its uid may:
// an unprivileged launcher's worker is the launcher's uid, so its SSH keys and other tools' credentials;
// a root launcher's, the files its home's owner keeps in its own home. A hermes root inside one of them
// is re-made in the cover.
func coveredHomes(environ []string) []string {
	dirs := []string{"/root", "/home"}
	if d := worker.EnvLookup(environ)("HOME"); filepath.IsAbs(d) && filepath.Clean(d) != "/" {
		dirs = append(dirs, filepath.Clean(d))
	}
	return unique(dirs)
}
