package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/landlock"
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

// A sandboxed worker on the host's network (the default, --net host) must not reach a host service on
// an abstract Unix socket: abstract names live in the network namespace and have no permissions at
// all, so every such service (an X server's @/tmp/.X11-unix/X0, a container shim's socket) answers it.
// With --net none it is out of reach by the namespace; with --net host by the Landlock scope
// (internal/landlock), which the detached worker's receipt names. On a kernel without the scopes (before
// Linux 6.12: the guest lane's Debian kernel) the receipt says "unavailable" and the worker still
// starts: there only --net none holds, which docs/security.md says.
func TestRedteamSandboxReachesAbstractSockets(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	name := "@hlaunch-redteam-" + randHex(6)
	servePeers(t, name, -1)
	scoped := landlock.Supported() == nil
	for _, net := range []string{"none", "host"} {
		for _, seccomp := range []string{"default", "off"} {
			rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none", "--net", net, "--seccomp", seccomp}, "served:"+name)
			got := rep.Checks["served:"+name]
			if got == "ok:served" && (net == "none" || scoped) {
				t.Errorf("--net %s --seccomp %s: a sandboxed worker reached the host's abstract socket %s", net, seccomp, name)
			}
			if got != "ok:served" && net == "host" && !scoped {
				t.Errorf("--net host without Landlock scopes (ABI %d): %q; the limit docs/security.md states is gone: update it", landlock.ABI(), got)
			}
		}
	}
	// The same launch unsandboxed is served: the socket answers, so the check above is not vacuous.
	rep, _ := e.report([]string{"-p", "b", "--scope", "none"}, "served:"+name)
	if got := rep.Checks["served:"+name]; got != "ok:served" {
		t.Fatalf("an unsandboxed worker was not served by %s: %q", name, got)
	}
	r := e.run("exec", "-p", "b", "--sandbox", "--scope", "none", "--detach", "--", "true")
	var rc struct {
		ID       string `json:"id"`
		Landlock string `json:"landlock"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rc); err != nil {
		t.Fatalf("detached receipt: %v (exit %d %s)", err, r.Code, r.Stderr)
	}
	e.run("wait", "--timeout", "20s", rc.ID)
	want := "scoped"
	if !scoped {
		want = "unavailable"
	}
	if rc.Landlock != want {
		t.Errorf("a sandboxed worker's receipt says landlock %q, want %q (kernel's Landlock ABI %d)", rc.Landlock, want, landlock.ABI())
	}
}
