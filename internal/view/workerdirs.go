package view

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/trustpath"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// WorkerCwd is the directory a worker starts in: --cwd when given, else the launcher's own, except that a
// worker whose uid is not the launcher's, or a sandboxed one, starts in the launcher's directory only when
// that is inside its home (or a --rw path), and in its home otherwise (viewCwd): the launcher's directory
// is none of that worker's business.
func WorkerCwd(spec worker.Spec, launcherCwd, home string, id worker.Identity) string {
	if spec.Cwd != "" {
		return launcherCwd
	}
	if spec.Sandbox || id.UID != uint32(os.Geteuid()) {
		return viewCwd(launcherCwd, home, spec.RW)
	}
	return launcherCwd
}

// CheckWorkerDirs refuses, before anything starts, a directory the worker is given that someone with less
// privilege than the worker could change under it (docs/security.md, "Privilege follows the profile"): the
// final working directory, TMPDIR, TMP and TEMP as composed (whatever their source; a relative value as
// the worker resolves it, from its working directory), and the directory of --log. Each must be, on every component from / down, owned by root or the worker's uid and writable by
// neither group nor others, except a root-owned sticky directory (internal/trustpath).
func CheckWorkerDirs(spec worker.Spec, env profile.Environ, cwd string, id worker.Identity) error {
	type dir struct{ what, path, pass, resolved string }
	dirs := []dir{{"--cwd", cwd, "--cwd DIR", cwd}}
	for _, name := range []string{"TMPDIR", "TMP", "TEMP"} {
		e, ok := env.Lookup(name)
		if !ok || e.Value == "" {
			continue
		}
		resolved := e.Value
		if !filepath.IsAbs(resolved) {
			// The worker resolves it from its working directory; not cleaned: ".." is the kernel's.
			resolved = cwd + "/" + resolved
		}
		dirs = append(dirs, dir{name, e.Value, "--env " + name + "=DIR", resolved})
	}
	if spec.Log != "" {
		dirs = append(dirs, dir{"--log", filepath.Dir(spec.Log), "--log FILE", filepath.Dir(spec.Log)})
	}
	walked := map[string]bool{} // TMPDIR, TMP and TEMP are often one directory: walk it once
	for _, d := range dirs {
		if walked[d.resolved] {
			continue
		}
		walked[d.resolved] = true
		err := trustpath.Check(d.resolved, id.UID)
		var u *trustpath.Untrusted
		switch {
		case errors.As(err, &u):
			return &worker.FieldError{Msg: fmt.Sprintf("%s %s: %v, and the worker runs as uid %d: pass a %s in directories owned by root or uid %d that only their owner may write, or run the worker as the home's owner by dropping --as", d.what, d.path, u, id.UID, d.pass, id.UID)}
		case err != nil:
			return fmt.Errorf("%w: %s %s: %w", worker.ErrInvalid, d.what, d.path, err)
		}
	}
	return nil
}
