package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A root launcher looks the command up as the worker it drops to, as the worker's own execvp would: a
// directory of the PATH (copied from the launcher, as the contract says) that only root may search, a
// root's ~/.pyenv/shims, is passed over for the next one the worker may run. The lookup as root found
// the first, and the worker's exec of it failed: exit 126 for `python3` under a root with pyenv. Foreground
// (the launcher forks it) and detached (the shim does), in a raw cgroup and with none.
func TestLookupAsTheDroppedWorker(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	hermesHome(t, e)
	top, err := os.MkdirTemp("", "hl-lookup-") // t.TempDir's parent is root's alone: the worker must reach pub
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(top) })
	priv, pub := filepath.Join(top, "priv"), filepath.Join(top, "pub")
	must(t, os.MkdirAll(priv, 0o700))
	must(t, os.MkdirAll(pub, 0o755))
	must(t, os.Chmod(top, 0o755))
	must(t, os.Chmod(priv, 0o700))
	must(t, os.WriteFile(filepath.Join(priv, "hl-lookup"), []byte("#!/bin/sh\nexit 3\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(pub, "hl-lookup"), []byte("#!/bin/sh\nexit 7\n"), 0o755))
	var launcher []string
	for _, kv := range e.Launcher {
		if !strings.HasPrefix(kv, "PATH=") {
			launcher = append(launcher, kv)
		}
	}
	e.Launcher = append(launcher, "PATH="+priv+":"+pub+":/usr/bin:/bin")

	for _, scope := range []string{"none", "cgroup"} {
		args := []string{"exec", "-p", "b", "--scope", scope}
		if scope == "cgroup" {
			args = append(args, "--cgroup-parent", e.Parent)
		}
		if r := e.run(append(args, "--", "hl-lookup")...); r.Code != 7 {
			t.Errorf("--scope %s: exit %d (%s); want 7, the hl-lookup the worker may run", scope, r.Code, strings.TrimSpace(r.Stderr))
		}
	}
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, "hl-lookup")
	r := e.run("wait", "--json", "--timeout", "30s", rc.ID)
	var rec receipt
	if err := json.Unmarshal([]byte(r.Stdout), &rec); err != nil {
		t.Fatalf("wait: %v %q %q", err, r.Stdout, r.Stderr)
	}
	if rec.ExitCode == nil || *rec.ExitCode != 7 {
		t.Errorf("detached: exit %v (%s); want 7, the hl-lookup the worker may run", rec.ExitCode, r.Stdout)
	}
}
