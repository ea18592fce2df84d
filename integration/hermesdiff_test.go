package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/hermes-contract.md, "Where hlaunch differs from hermes", the TMPDIR row, from a real child: the
// launcher's TMPDIR (the launch profile's scratch in a gateway) is replaced by the target's; a TMPDIR the
// target's .env names is kept, as hermes keeps it, but only when it passes the worker-directory check: a
// root worker is never handed a temp dir a user can write (nothing starts, exit 125, one line naming
// TMPDIR).
func TestHermesDiffTMPDIRKeptAndChecked(t *testing.T) {
	requireRoot(t)
	t.Run("launcher's replaced, .env's kept", func(t *testing.T) {
		e := newEnv(t).with(t)
		bHome := filepath.Join(e.Root, "profiles", "b")
		aScratch := filepath.Join(e.Root, "profiles", "a", "cache", "scratch")
		e.Launcher = append(append([]string{}, e.Launcher...), "TMPDIR="+aScratch, "TMP="+aScratch)
		rep, _ := e.report([]string{"-p", "b", "--scope", "none"})
		if got := rep.Env["TMPDIR"]; got != filepath.Join(bHome, "cache", "scratch") {
			t.Errorf("launcher TMPDIR=%s: B's child has TMPDIR=%q, want B's scratch", aScratch, got)
		}
		kept := filepath.Join(bHome, "workspace")
		e.profile("b", "B_MARKER=b\nTMPDIR="+kept+"\n")
		rep, _ = e.report([]string{"-p", "b", "--scope", "none"})
		if got := rep.Env["TMPDIR"]; got != kept || rep.UID != profileUID("b") {
			t.Errorf(".env TMPDIR=%s: B's child (uid %d) has TMPDIR=%q, want it kept", kept, rep.UID, got)
		}
	})
	t.Run("root worker, user-writable .env TMPDIR", func(t *testing.T) {
		e := rootHomeEnv(t).with(t)
		userTmp := filepath.Join(t.TempDir(), "user-tmp")
		must(t, os.Mkdir(userTmp, 0o700))
		must(t, os.Chown(userTmp, profileUID("a"), profileUID("a")))
		must(t, os.WriteFile(filepath.Join(e.Root, "profiles", "b", ".env"), []byte("TMPDIR="+userTmp+"\n"), 0o600))
		ran := filepath.Join(e.State, "ran")
		must(t, os.MkdirAll(e.State, 0o700))
		r := e.run("exec", "-p", "b", "--scope", "none", "--", "sh", "-c", ": > "+ran)
		msg := strings.TrimSpace(r.Stderr)
		if r.Code != 125 || strings.Contains(msg, "\n") || !strings.Contains(msg, "TMPDIR "+userTmp) {
			t.Errorf("root worker with .env TMPDIR=%s (uid %d's): exit %d %q; want 125, one line naming TMPDIR", userTmp, profileUID("a"), r.Code, msg)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Error("the worker ran")
		}
	})
}
