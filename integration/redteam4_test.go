package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The red team's fourth round (issue 24): what a more privileged launch inherits from what a less
// privileged uid controls, and what a worker or a peer can consume without bound (docs/security.md,
// "What a privileged launch inherits, and what nothing bounds"). Each test passes while the boundary
// holds, and failed on the code it was written against.

// asOwner runs a shell command as uid:gid with no supplementary groups and fails the test when it fails.
func asOwner(t *testing.T, uid, gid int, script string) {
	t.Helper()
	cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", "--", "sh", "-c", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %s: %v: %s", uid, script, err, out)
	}
}

// searchable lets every uid walk down to dir (mode o+x on it and the test's directories above it, up to
// the temporary directory): the profile's owner acts on its home from outside, as a local user would.
func searchable(t *testing.T, dir string) {
	t.Helper()
	stop := filepath.Clean(os.TempDir())
	for d := dir; d != stop && d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		must(t, err)
		must(t, os.Chmod(d, st.Mode().Perm()|0o011))
	}
}

// A root launcher trusts the loader names (PATH, LD_PRELOAD, ...) of a .env that root owns. A profile's
// owner can make one: a root launcher creates a worker's --log (hermes' kanban logs live in the home's
// logs/) as a root-owned file holding what the worker printed, and the owner of the home renames it to
// .env (a rename needs write access to the directories, not ownership of the file). Then a planted
// "true" early in that PATH ran as uid 0 at the root launcher's next plain `exec -p b -- true`. Who may
// write the home chooses which file is its .env: a .env in a home another uid owns, or that its group
// or others may write, counts as that uid's, and the launch is refused (exit 125, naming the file and the
// name). On the old code the planted command ran as uid 0.
func TestRedteam4RootLogRenamedToDotenv(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	searchable(t, filepath.Join(e.Root, "profiles"))
	bHome := filepath.Join(e.Root, "profiles", "b")
	uid := profileUID("b")
	ws := filepath.Join(bHome, "workspace")
	pwned := filepath.Join(bHome, "pwned")
	log := filepath.Join(bHome, "logs", "task-7.log")
	// The worker prints the .env it wants; the root launcher writes it to a root-owned file in B's home.
	r := e.run("exec", "-p", "b", "--scope", "none", "--log", log, "--", "printf", "B_MARKER=b\\nPATH="+ws+":/usr/bin:/bin\\n")
	if r.Code != 0 {
		t.Fatalf("the worker's launch: exit %d: %s", r.Code, r.Stderr)
	}
	st, err := os.Stat(log)
	must(t, err)
	if fileOwner(st) != 0 {
		t.Fatalf("%s is owned by uid %d; the attack needs root's file", log, fileOwner(st))
	}
	// The profile's owner, from outside: the root-owned log becomes the .env, and a "true" is planted.
	asOwner(t, uid, uid, "mv -f "+log+" "+bHome+"/.env && printf '#!/bin/sh\\nid -u > "+pwned+"\\n' > "+ws+"/true && chmod 755 "+ws+"/true")
	st, err = os.Stat(filepath.Join(bHome, ".env"))
	must(t, err)
	if fileOwner(st) != 0 {
		t.Fatalf("the renamed .env is owned by uid %d, want 0", fileOwner(st))
	}
	r = e.run("exec", "-p", "b", "--scope", "none", "--", "true")
	if b, err := os.ReadFile(pwned); err == nil {
		t.Errorf("B's owner (uid %d) had its planted %s/true run as uid %s by the root launcher's next launch (a root-owned log renamed to .env)", uid, ws, strings.TrimSpace(string(b)))
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, ".env") || !strings.Contains(r.Stderr, "PATH") {
		t.Errorf("B's next launch: exit %d %q; want 125 naming the .env and PATH", r.Code, r.Stderr)
	}
	// The caller may still name it: --secrets none --pass takes the .env's PATH on purpose.
	must(t, os.Remove(filepath.Join(ws, "true")))
	if r := e.run("exec", "-p", "b", "--scope", "none", "--secrets", "none", "--pass", "PATH", "--", "sh", "-c", "echo $PATH"); r.Code != 0 || !strings.Contains(r.Stdout, ws) {
		t.Errorf("--pass PATH: exit %d %q %q; want the .env's PATH", r.Code, r.Stdout, r.Stderr)
	}
}

// fileOwner is the uid that owns the file st describes.
func fileOwner(st os.FileInfo) int { return int(st.Sys().(*syscall.Stat_t).Uid) }
