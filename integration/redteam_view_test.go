package integration

import (
	"encoding/json"
	"os"
	"os/exec"
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
	dir, err := os.MkdirTemp(hostBase, "hl-rt-gid0-")
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

// An unprivileged launcher's sandboxed worker is the launcher's own uid on the host (mapped to 0 in its
// user namespace), and the host is in its view read-only: it read every file of the launching user
// outside the hermes root - its SSH key, other tools' credentials. The view covers the users' homes
// (/root, /home, the launcher's $HOME) with an empty read-only tmpfs.
func TestRedteamUnprivSandboxReadsLaunchersHome(t *testing.T) {
	requireRoot(t)
	w := nobodyEnv(t)
	home, err := os.MkdirTemp(hostBase, "hl-rt-lhome-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(home) })
	key := filepath.Join(home, ".ssh", "id_ed25519")
	must(t, os.MkdirAll(filepath.Dir(key), 0o700))
	must(t, os.WriteFile(key, []byte("PRIVATE KEY of the launching user"), 0o600))
	must(t, exec.Command("chown", "-R", "65534:65534", home).Run())
	must(t, os.Chmod(home, 0o700))
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", w.bin, "--root", w.Root,
		"--state-dir", w.State, "exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report", "read:"+key, "ls:"+home)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	r := runResult(t, cmd)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	rep := decodeReport(t, r.Stdout)
	if got := rep.Checks["read:"+key]; strings.Contains(got, "PRIVATE KEY") {
		t.Errorf("an unprivileged launcher's sandboxed worker read the launching user's %s: %q", key, got)
	}
	if got := rep.Checks["ls:"+home]; got != "ok:" {
		t.Errorf("the launcher's $HOME %s in the view: %q, want an empty directory", home, got)
	}
}

// A hermes root inside a covered home (~/.hermes, the usual layout) is re-made in the cover: the worker
// has its own home, writable, and nothing else of the user's home - neither the user's files nor the
// other profiles. A root launcher whose $HOME holds the root, and /root.
func TestSandboxCoversHomes(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	userHome, err := os.MkdirTemp(hostBase, "hl-fv-home-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(userHome) })
	must(t, os.Chmod(userHome, 0o755))
	secret := filepath.Join(userHome, "notes.txt")
	must(t, os.WriteFile(secret, []byte("the user's own"), 0o644))
	root := filepath.Join(userHome, ".hermes")
	must(t, exec.Command("cp", "-a", e.Root, root).Run())
	e.Root = root
	for i, kv := range e.Launcher {
		if strings.HasPrefix(kv, "HOME=") {
			e.Launcher[i] = "HOME=" + userHome
		}
	}
	bHome := filepath.Join(root, "profiles", "b")
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none"},
		"read:"+secret, "ls:"+userHome, "read:"+filepath.Join(bHome, ".env"), "write:"+bHome,
		"read:"+filepath.Join(root, "profiles", "a", ".env"), "ls:/root", "write:"+userHome)
	want := map[string]string{
		"ls:" + userHome: "ok:.hermes",
		"ls:/root":       "ok:",
		"write:" + bHome: "ok",
	}
	for c, w := range want {
		if got := rep.Checks[c]; got != w {
			t.Errorf("%s: %q, want %q", c, got, w)
		}
	}
	if got := rep.Checks["read:"+filepath.Join(bHome, ".env")]; !strings.Contains(got, "B_MARKER=b") {
		t.Errorf("B's own .env inside the covered home: %q", got)
	}
	for _, c := range []string{"read:" + secret, "read:" + filepath.Join(root, "profiles", "a", ".env"), "write:" + userHome} {
		if got := rep.Checks[c]; strings.HasPrefix(got, "ok") {
			t.Errorf("%s: %q, want refused", c, got)
		}
	}
}

// A sandboxed worker must not reach another profile through a second path to the hermes root. The view
// covered the root at the one path the launcher names; a host where the same directory is mounted a
// second time (a bind mount, the same file system at two places: common with containers and
// /var/home-style layouts) showed it there in full, read-only, and in a single-user hermes deployment
// every profile's home has the one owner the worker runs as, so A's .env was readable. The view now
// covers every mount of the root's device that shows the root's files (sandbox.rootAliases). The launcher
// runs in a private mount namespace of the test's own, where the alias is made.
func TestRedteamSandboxReachesRootThroughAlias(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	aHome := filepath.Join(e.Root, "profiles", "a")
	// One user's hermes: the root, profiles/ and every home belong to it (~/.hermes).
	owner := strconv.Itoa(profileUID("b"))
	must(t, exec.Command("chown", "-R", owner+":"+owner, e.Root).Run())
	alias, err := os.MkdirTemp(hostBase, "hl-rt-alias-")
	must(t, err)
	t.Cleanup(func() { os.Remove(alias) })
	aliasA, err := os.MkdirTemp(hostBase, "hl-rt-alias-a-")
	must(t, err)
	t.Cleanup(func() { os.Remove(aliasA) })
	// Two aliases: the whole root, and A's home alone.
	prefix := []string{"unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" "$2" && mount --bind "$3" "$4" && shift 4 && exec "$@"`, "sh", e.Root, alias, aHome, aliasA}
	target := "read:" + filepath.Join(alias, "profiles", "a", ".env")
	targetA := "read:" + filepath.Join(aliasA, ".env")
	own := "read:" + filepath.Join(e.Root, "profiles", "b", ".env")
	rep := e.reportIn("", prefix, []string{"-p", "b", "--sandbox", "--scope", "none"}, target, targetA, own, "read:"+filepath.Join(aHome, ".env"))
	if got := rep.Checks[target]; strings.Contains(got, "A_MARKER=a") {
		t.Errorf("B's sandboxed worker read A's .env through a second mount of the hermes root (%s): %q", alias, got)
	}
	if got := rep.Checks[targetA]; strings.Contains(got, "A_MARKER=a") {
		t.Errorf("B's sandboxed worker read A's .env through a bind mount of A's home (%s): %q", aliasA, got)
	}
	if got := rep.Checks["read:"+filepath.Join(aHome, ".env")]; strings.HasPrefix(got, "ok:") {
		t.Errorf("A's .env at its own path: %q", got)
	}
	if got := rep.Checks[own]; !strings.Contains(got, "B_MARKER=b") {
		t.Errorf("B's own .env at the root's path: %q", got)
	}
}

// Beyond the directories the view hides, a sandboxed worker reached every Unix socket of its host uid:
// the host is in its view read-only, and connect(2) needs no write access to the mount. Such sockets are
// the user's sessions: a screen or tmux server (commands typed outside the sandbox), an editor's remote
// server, an agent. Here: a server that serves only B's owner, with its socket in a 0700 directory of
// the owner's, where such servers keep them: /run/screen/S-<user>/ (hidden), the user's home (covered),
// /tmp/tmux-<uid>/ (the view's /tmp is private). The launcher runs in a private mount namespace with a
// /run of the test's own. What stays reachable (a socket in /var/tmp or anywhere else of the host
// outside these) is in docs/security.md's limits.
func TestRedteamSandboxReachesOwnersSessionSockets(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	uid := profileUID("b")
	base, err := os.MkdirTemp(hostBase, "hl-rt-owner-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	screenSock := runtimeDir(t, filepath.Join(base, "screen", "S-owner"), uid)
	must(t, os.Chmod(filepath.Join(base, "screen"), 0o755))
	homeSock := runtimeDir(t, filepath.Join(base, "home", ".tmux"), uid)
	must(t, os.Chmod(filepath.Join(base, "home"), 0o755))
	tmpDir, err := os.MkdirTemp("/tmp", "tmux-")
	must(t, err)
	tmpSock := runtimeDir(t, tmpDir, uid)
	for i, kv := range e.Launcher {
		if strings.HasPrefix(kv, "HOME=") {
			e.Launcher[i] = "HOME=" + filepath.Join(base, "home")
		}
	}
	prefix := []string{"unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs tmpfs /run && mkdir /run/screen && mount --bind "$1" /run/screen && shift && exec "$@"`, "sh", filepath.Join(base, "screen")}
	inRun := "/run/screen/S-owner/systemd/private"
	checks := []string{"served:" + inRun, "served:" + homeSock, "served:" + tmpSock}
	rep := e.reportIn("", prefix, []string{"-p", "b", "--sandbox", "--scope", "none"}, checks...)
	for _, c := range checks {
		if got := rep.Checks[c]; got == "ok:served" {
			t.Errorf("a sandboxed worker of B (uid %d) was served by a session socket of its owner's (%s)", uid, c)
		}
	}
	// Unsandboxed, as B's owner, the same sockets answer: the checks above are not vacuous.
	u := strconv.Itoa(uid)
	cmd := exec.Command("setpriv", "--reuid="+u, "--regid="+u, "--clear-groups", "--", selfBin, "child", "report", "served:"+screenSock, "served:"+homeSock, "served:"+tmpSock)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the owner's own reporter: %v", err)
	}
	for c, got := range decodeReport(t, string(out)).Checks {
		if got != "ok:served" {
			t.Fatalf("the owner outside the sandbox was not served by %s: %q", c, got)
		}
	}
}
