package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The red team's findings on the sandbox view (issue 15), fixed: each test is the red team's
// reproduction (integration/redteam_findings_test.go on branch redteam), kept under its name.

// A root launcher's sandboxed worker is never host root by uid, and never gid 0 either without --as: a
// home made by root and handed over with `chown user dir` keeps group root, and a worker of gid 0 would
// read (or write) what the root group may: here a root:root 0640 file. Such a home is refused (exit 125,
// naming --as) as a home owned by root is; with an explicit --as the worker runs and cannot read it.
func TestRedteamSandboxRootGroupFromHome(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	bHome := filepath.Join(e.Root, "profiles", "b")
	must(t, os.Chown(bHome, profileUID("b"), 0)) // chown user dir: the group stays root's
	dir, err := os.MkdirTemp("/var/tmp", "hl-rt-gid0-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	secret := filepath.Join(dir, "root-group-only")
	must(t, os.WriteFile(secret, []byte("for the root group"), 0o640))
	r := e.run("exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report", "read:"+secret)
	if r.Code == 0 {
		rep := decodeReport(t, r.Stdout)
		t.Errorf("B's sandboxed worker ran (gid %q) from a home of group root; read %q", rep.Status["Gid"], rep.Checks["read:"+secret])
	} else if r.Code != 125 || !strings.Contains(r.Stderr, "group root") || !strings.Contains(r.Stderr, "--as") {
		t.Errorf("a home of group root: exit %d %q; want 125 and one line naming the group and --as", r.Code, r.Stderr)
	}
	if strings.Contains(r.Stdout, "for the root group") {
		t.Errorf("the root group's file was read: %q", r.Stdout)
	}
	// Named explicitly, the identity runs: the caller chose it.
	uid := strconv.Itoa(profileUID("b"))
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none", "--as", uid + ":" + uid}, "read:"+secret)
	if got := rep.Checks["read:"+secret]; strings.HasPrefix(got, "ok:") {
		t.Errorf("--as %s:%s read a root:root 0640 file: %q", uid, uid, got)
	}
}
