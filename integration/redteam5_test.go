package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fourth round (docs/security.md, "The red team's guards"): the privilege drop ("Privilege follows
// the profile") and the bounds, attacked from real children.

// A root launcher whose session keyring holds a key (`child session`: root's own, as a login's
// pam_keyinit gives it) runs B's UNSANDBOXED worker as B's owner. Possessing a keyring grants the
// possessor's permissions on every key in it whatever the uid, and a child keeps its parent's session
// keyring: before, the dropped worker read root's key (keyctl read). Each start path of a dropped worker
// is tried: the direct fork (`--scope none`), the fork held at its traced exec (`--pids`: a v1 join on a
// hybrid host, a cgroup v2 one elsewhere), and a detached worker's root shim. The worker holds no
// capability in any set either. Root's worker (a root-owned home: the launcher's own uid) keeps the
// session as an argv prefix does, which shows the key is there to read.
func TestRedteam5DroppedWorkerKeyring(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	prefix := []string{selfBin, "child", "session", "--"}
	key := "keyread:" + sessionKey
	uid := strconv.Itoa(profileUID("b"))
	check := func(t *testing.T, how string, rep childReport) {
		t.Helper()
		if rep.Status["Uid"] != uid+"\t"+uid+"\t"+uid+"\t"+uid {
			t.Fatalf("%s: worker Uid %q, want B's owner %s: the check proves nothing", how, rep.Status["Uid"], uid)
		}
		if got := rep.Checks[key]; got != "required key not available" {
			t.Errorf("%s: B's owner's worker reads root's session key: %q, want ENOKEY (a fresh session keyring)", how, got)
		}
		for _, c := range []string{"CapEff", "CapPrm", "CapAmb", "CapInh"} {
			if rep.Status[c] != "0000000000000000" {
				t.Errorf("%s: %s %q, want none", how, c, rep.Status[c])
			}
		}
	}
	for _, args := range [][]string{
		{"-p", "b", "--scope", "none"},
		{"-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "64"},
	} {
		check(t, "foreground "+args[3], e.reportIn("", prefix, args, key))
	}

	check(t, "detached", e.detachedReport(prefix, []string{"-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent}, key))

	rep := rootHomeEnv(t).reportIn("", prefix, []string{"-p", "b", "--scope", "none"}, key)
	if got := rep.Checks[key]; got != "ok:launcher-secret" {
		t.Fatalf("root's own worker (a root-owned home) reads %q: the session holds no key, the check proves nothing", got)
	}
}

// B's owner plants, in /tmp (root's, sticky: a place anyone may add a name), a link to a directory of its
// own, and a root worker is given TMPDIR=/tmp/<link>/.. (a path composed from a link, as "$X/.." is).
// The kernel resolves the link first: the directory is B's. A check that cleaned the path lexically first
// ("/tmp") would pass it, and root's worker would get B's directory as its TMPDIR (its `cd -P "$TMPDIR";
// pwd -P`, a name resolved as the kernel does, would print B's directory). ".." is walked as the kernel
// does: refused, exit 125, one line naming TMPDIR, nothing started.
func TestRedteam5DotDotThroughLink(t *testing.T) {
	requireRoot(t)
	e := rootHomeEnv(t)
	uid, gid := throwawayUser(t)
	bdir, err := os.MkdirTemp("/tmp", "hl-rt4-b-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(bdir) })
	must(t, os.Mkdir(filepath.Join(bdir, "sub"), 0o700))
	lnk := bdir + "-link"
	must(t, os.Symlink(filepath.Join(bdir, "sub"), lnk))
	t.Cleanup(func() { os.Remove(lnk) })
	for _, p := range []string{bdir, filepath.Join(bdir, "sub"), lnk} {
		must(t, os.Lchown(p, uid, gid))
	}
	tmpdir := lnk + "/.."
	pwd := `sh:cd -P "$TMPDIR" && pwd -P`
	r := e.run("exec", "-p", "b", "--scope", "none", "--env", "TMPDIR="+tmpdir, "--", selfBin, "child", "report", pwd)
	if r.Code == 0 {
		t.Fatalf("root's worker ran with TMPDIR %s (%s): B's owner's directory", tmpdir, decodeReport(t, r.Stdout).Checks[pwd])
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, "TMPDIR "+tmpdir) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || r.Stdout != "" {
		t.Errorf("TMPDIR through B's link and ..: exit %d, stdout %q, stderr %q; want 125 and one line naming TMPDIR", r.Code, r.Stdout, r.Stderr)
	}
	// B's own link in a path without "..": refused as before (the link's owner is not root's).
	if r := e.run("exec", "-p", "b", "--scope", "none", "--env", "TMPDIR="+lnk, "--", "true"); r.Code != 125 {
		t.Errorf("TMPDIR %s (B's link): exit %d %s, want 125", lnk, r.Code, r.Stderr)
	}
}

// B's unsandboxed worker of a root launcher (B's owner now) goes for the root process above it: the
// foreground CLI launcher, a detached worker's shim (root: it supervises and records), a root sidecar's
// shim. It cannot trace it, open its memory, read its environ (the caller's environment, the profile's
// credentials) or its descriptors (the state directory, the log), and starts with stdio only. Root's own
// worker can: the checks can succeed.
func TestRedteam5DroppedWorkerVersusItsRootParent(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	uid := strconv.Itoa(profileUID("b"))
	// The reporter (a Go test binary) opens a few descriptors of its own at start-up: started directly with
	// only stdio, it shows what "nothing inherited" looks like.
	// The Go runtime's cgroup quota files are left out in both (stableFDs).
	ref := exec.Command(selfBin, "child", "report")
	ref.Env = append(os.Environ(), stableFDs)
	out, err := ref.Output()
	must(t, err)
	stdioOnly := fmt.Sprint(decodeReport(t, string(out)).FDs)
	checks := []string{"ptrace:{ppid}", "memopen:{ppid}", "open:/proc/{ppid}/environ", "ls:/proc/{ppid}/fd", "ls:/proc/{ppid}/cwd", "fdlinks", "sh:grep ^Uid: /proc/{ppid}/status"}
	wantHeld := func(t *testing.T, how string, rep childReport) {
		t.Helper()
		if rep.Status["Uid"] != uid+"\t"+uid+"\t"+uid+"\t"+uid || rep.PPID <= 1 {
			t.Fatalf("%s: worker Uid %q, parent %d; want B's owner %s under its root parent: the checks prove nothing", how, rep.Status["Uid"], rep.PPID, uid)
		}
		if got := rep.Checks[checks[6]]; got != "ok:Uid:\t0\t0\t0\t0" {
			t.Fatalf("%s: the worker's parent %d: %q, not root's: the checks prove nothing", how, rep.PPID, got)
		}
		for _, c := range checks[:5] {
			if got := rep.Checks[c]; strings.HasPrefix(got, "ok") || got == "" {
				t.Errorf("%s: %s of its root parent: %q, want a refusal", how, c, got)
			}
		}
		if fmt.Sprint(rep.FDs) != stdioOnly || strings.Contains(rep.Checks["fdlinks"], "socket:") {
			t.Errorf("%s: the worker's descriptors %v (%s), want %s (stdio and the reporter's own)", how, rep.FDs, rep.Checks["fdlinks"], stdioOnly)
		}
	}
	// Root's own worker (a root-owned home) opens its parent's environ and memory: the checks can succeed.
	ctl := rootHomeEnv(t).reportIn("", nil, []string{"-p", "b", "--scope", "none"}, checks[1], checks[2])
	if ctl.Checks[checks[1]] != "ok" || ctl.Checks[checks[2]] != "ok" {
		t.Fatalf("root's own worker: %s %q, %s %q; want ok: the checks prove nothing", checks[1], ctl.Checks[checks[1]], checks[2], ctl.Checks[checks[2]])
	}
	// The parent is still there while the worker reports: the CLI waits for it, the shim supervises it.
	wantHeld(t, "foreground", e.reportIn("", nil, []string{"-p", "b", "--scope", "none", "--env", stableFDs}, checks...))

	wantHeld(t, "detached", e.detachedReport(nil, []string{"-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--env", stableFDs}, checks...))

	t.Run("sidecar", func(t *testing.T) {
		requireCgroup2(t)
		p := startSidecarProc(t, e.with(t), filepath.Join(scSocketDir(t), "s.sock"))
		wantHeld(t, "sidecar", p.report(map[string]any{"env": map[string]string{"GODEBUG": strings.TrimPrefix(stableFDs, "GODEBUG=")}}, checks...))
	})
}

// Root runs B's unsandboxed worker from an interactive shell: a worker, B's owner, in root's session with
// root's terminal as its controlling terminal could TIOCSTI into root's shell's input (a line that root's
// shell runs, as root, once hlaunch ends: the su/sudo pty-pushback), and read what is typed there; its
// TIOCSTI must leave no bytes in root's terminal. A worker that runs as another uid than the launcher's
// gets a pty of its own that hlaunch relays, as a sandbox does: the
// leader of its own session, nothing is left in the caller's terminal. Root's own worker (a root-owned
// home, the launcher's uid) still types into it: the check is not vacuous. A detached worker of another
// uid given the caller's terminal (--stdio inherit) has no relay: refused, exit 125, one line.
func TestRedteam5DroppedWorkerTypesIntoRootsTerminal(t *testing.T) {
	requireRoot(t)
	legacy, _ := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	uid := strconv.Itoa(profileUID("b"))
	run := func(e *env, args ...string) ptyRun {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hlaunchBin, append([]string{"--root", e.Root, "--state-dir", e.State}, args...)...)
		cmd.Env = e.Launcher
		return onPTY(t, cmd, 0, 0, func(string, *os.File) string { return "" })
	}
	e := newEnv(t)
	for _, flags := range [][]string{{"--scope", "none"}, {"--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "64"}} {
		r := run(e, append(append([]string{"exec", "-p", "b"}, flags...), "--", selfBin, "child", "report", "tiocsti:0", "ctty:0")...)
		if r.err != nil {
			t.Fatalf("%v: %v: %s", flags, r.err, r.shown)
		}
		rep := r.report(t)
		if rep.Status["Uid"] != uid+"\t"+uid+"\t"+uid+"\t"+uid {
			t.Fatalf("%v: worker Uid %q, want B's owner %s", flags, rep.Status["Uid"], uid)
		}
		if r.pending != 0 {
			t.Errorf("%v: B's owner's worker typed %d bytes into root's terminal: TIOCSTI %q, TIOCSCTTY+TIOCSTI %q", flags, r.pending, rep.Checks["tiocsti:0"], rep.Checks["ctty:0"])
		}
		if rep.SID != rep.PID {
			t.Errorf("%v: the worker (pid %d) is in session %d, want a session of its own", flags, rep.PID, rep.SID)
		}
	}
	if strings.TrimSpace(string(legacy)) != "0" {
		r := run(rootHomeEnv(t), "exec", "-p", "b", "--scope", "none", "--", selfBin, "child", "report", "tiocsti:0")
		if c := r.report(t).Checks["tiocsti:0"]; c != "ok" || r.pending == 0 {
			t.Fatalf("root's own worker cannot type into its terminal (%s, %d bytes left): the check proves nothing", c, r.pending)
		}
	}
	must(t, os.MkdirAll(e.State, 0o700))
	r := run(e, "exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--stdio", "inherit", "--", selfBin, "child", "report", "tiocsti:0")
	var ee *exec.ExitError
	if !errors.As(r.err, &ee) || ee.ExitCode() != 125 || !strings.Contains(r.shown, "terminal") || strings.Count(strings.TrimSpace(r.shown), "\n") != 0 {
		t.Errorf("detached --stdio inherit of root's terminal for B's owner's worker: %v %q; want exit 125 and one line", r.err, r.shown)
	}
	if r.pending != 0 {
		t.Errorf("the detached worker typed %d bytes into root's terminal", r.pending)
	}
}

// A root worker is given a TMPDIR in /tmp that does not exist yet (a tool makes it with `mkdir -p` when
// it first needs it). A check that judged a missing name by the directory above it, root's sticky /tmp,
// would pass it; B's owner would then create the name, a directory of its own, and root's worker write its
// temporary files where B swaps them. A missing name in a directory others may write is refused: exit
// 125, one line naming TMPDIR, nothing started.
func TestRedteam5MissingTMPDIRInSticky(t *testing.T) {
	requireRoot(t)
	e := rootHomeEnv(t)
	uid, gid := throwawayUser(t)
	dir, err := os.MkdirTemp("/tmp", "hl-rt4-") // root's sticky /tmp, as on every host
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	started := filepath.Join(dir, "started")
	tmpdir := dir + "-tmp" // in /tmp, not there yet
	t.Cleanup(func() { os.RemoveAll(tmpdir) })
	// B's owner takes the name as soon as the worker runs (past the check); bounded by the launch.
	claimed := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				claimed <- nil
				return
			case <-time.After(10 * time.Millisecond):
			}
			if _, err := os.Stat(started); err == nil {
				claimed <- asUser(exec.Command("mkdir", tmpdir), uid, gid).Run()
				return
			}
		}
	}()
	owner := `sh:touch ` + started + `; i=0; while [ ! -d "$TMPDIR" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; stat -c %u "$TMPDIR"`
	r := e.run("exec", "-p", "b", "--scope", "none", "--env", "TMPDIR="+tmpdir, "--", selfBin, "child", "report", owner)
	close(done)
	if err := <-claimed; err != nil {
		t.Fatalf("B's owner creating %s: %v", tmpdir, err)
	}
	if r.Code == 0 {
		t.Fatalf("root's worker ran with TMPDIR %s that anyone could create: its owner once the worker used it: %s", tmpdir, decodeReport(t, r.Stdout).Checks[owner])
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, "TMPDIR "+tmpdir) || !strings.Contains(r.Stderr, "does not exist") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("a missing TMPDIR in /tmp: exit %d %q; want 125, one line naming TMPDIR", r.Code, r.Stderr)
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("the worker ran")
	}
}

// B's owner writes the policy file a root launcher is given (`--policy`, a file it can write: here in B's
// home) and lists HOME in its "foreign_allow", so that root's worker (--as 0:0) would take HOME from
// B's .env, and with it whatever B planted there to run (a Python .pth, a git pager: "Privilege follows
// the profile"). The launch must not run with B's HOME: the policy file, like every path a root launcher
// trusts, must be root's or the launcher's own and writable by nobody else on every component
// from /: refused, exit 125... one line naming --policy. The same file in a directory of root's is used.
func TestRedteam5PolicyFileOfTheOwner(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	uid, gid, home := hermesHome(t, e)
	write := func(p, data string) {
		t.Helper()
		c := asUser(exec.Command("sh", "-c", "cat > "+p), uid, gid)
		c.Stdin = strings.NewReader(data)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("B's owner writing %s: %v %s", p, err, out)
		}
	}
	write(filepath.Join(home, ".env"), "HOME="+home+"\n")
	pol := filepath.Join(home, "policy.json")
	write(pol, `{"foreign_allow": ["HOME"]}`)
	args := []string{"exec", "-p", "b", "--scope", "none", "--as", "0:0", "--env", "TMPDIR=/tmp", "--env", "TMP=/tmp", "--env", "TEMP=/tmp", "--", selfBin, "child", "report"}
	r := e.run(append([]string{"--policy", pol}, args...)...)
	if r.Code == 0 {
		t.Fatalf("root's worker ran under B's owner's policy file: HOME %q", decodeReport(t, r.Stdout).Env["HOME"])
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, "--policy "+pol) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("B's owner's policy file: exit %d %q; want 125 and one line naming --policy", r.Code, r.Stderr)
	}
	// Root's copy of the same file is the operator's: used (the foreign HOME passes).
	rootPol := filepath.Join(t.TempDir(), "policy.json")
	must(t, os.WriteFile(rootPol, []byte(`{"foreign_allow": ["HOME"]}`), 0o644))
	r = e.run(append([]string{"--policy", rootPol}, args...)...)
	if r.Code != 0 {
		t.Fatalf("root's policy file: exit %d %s", r.Code, r.Stderr)
	}
	if got := decodeReport(t, r.Stdout).Env["HOME"]; got != home {
		t.Errorf("root's policy file: HOME %q, want the foreign_allow'd %s", got, home)
	}
}

// B's owner puts names that choose the code a program runs, none of them credential-shaped, in B's
// .env; root's worker of B (--as 0:0) is refused each, naming it, before anything starts (the foreign
// .env's allow list: "Privilege follows the profile"). A row in the red team's table that held.
func TestRedteam5ForeignEnvChoosesCode(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	uid, gid, home := hermesHome(t, e)
	pwned := filepath.Join(home, "pwned")
	for _, name := range []string{"GIT_SSH_COMMAND", "GIT_SSH", "SSH_ASKPASS", "GIT_ASKPASS", "GIT_EXEC_PATH", "GIT_PAGER",
		"EDITOR", "LD_PRELOAD", "LD_AUDIT", "BASH_ENV", "ENV", "PROMPT_COMMAND", "PYTHONSTARTUP", "PYTHONPATH",
		"PYTHONWARNINGS", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "XDG_CONFIG_HOME", "OPENSSL_CONF", "CURL_HOME",
		"NPM_CONFIG_USERCONFIG", "LESSOPEN", "http_proxy", "SSL_CERT_FILE"} {
		c := asUser(exec.Command("sh", "-c", "cat > "+filepath.Join(home, ".env")), uid, gid)
		c.Stdin = strings.NewReader(name + "=touch " + pwned + "\nFIRECRAWL_API_KEY=b\n")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("B's owner writing its .env: %v %s", err, out)
		}
		r := e.run("exec", "-p", "b", "--scope", "none", "--as", "0:0", "--env", "TMPDIR=/tmp", "--env", "TMP=/tmp", "--env", "TEMP=/tmp", "--", "/bin/sh", "-c", "git --version >/dev/null 2>&1; true")
		if r.Code != 125 || !strings.Contains(r.Stderr, name) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%s from B's owner's .env for root's worker: exit %d %q; want 125, one line naming it", name, r.Code, r.Stderr)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a name from B's owner's .env ran as root")
	}
}

// B's unsandboxed worker (B's owner) of a root launcher writes into the state directory's filesystem
// through hlaunch's own directories: the state directory, its logs/ and workers' records, the ledger.
// Each is root's 0700: refused, so only the shim's bounded log takes the worker's output there. A row in
// the red team's table that held.
func TestRedteam5DroppedWorkerWritesState(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	must(t, os.MkdirAll(e.State, 0o700))
	log := filepath.Join(e.State, "w.log")
	// A first detached launch makes the state's directories (records, logs, the ledger).
	r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--log", log, "--", "true")
	if r.Code != 0 {
		t.Fatalf("detached: exit %d %s", r.Code, r.Stderr)
	}
	ents, err := os.ReadDir(e.State)
	must(t, err)
	checks := []string{"write:" + e.State, "ls:" + e.State, "openw:" + log}
	for _, d := range ents {
		if d.IsDir() {
			checks = append(checks, "write:"+filepath.Join(e.State, d.Name()))
		}
	}
	if len(checks) < 5 {
		t.Fatalf("state directory %s holds %v: no directories to attack", e.State, ents)
	}
	rep, _ := e.report([]string{"-p", "b", "--scope", "none"}, checks...)
	if rep.UID != profileUID("b") {
		t.Fatalf("worker uid %d, want B's owner %d", rep.UID, profileUID("b"))
	}
	for _, c := range checks {
		if got := rep.Checks[c]; strings.HasPrefix(got, "ok") || got == "" {
			t.Errorf("B's owner's worker: %s: %q, want a refusal", c, got)
		}
	}
	// Root's own worker writes there: the checks can succeed.
	ctl, _ := rootHomeEnv(t).report([]string{"-p", "b", "--scope", "none"}, checks[0])
	if ctl.Checks[checks[0]] != "ok" {
		t.Fatalf("root's worker: %s %q: the check proves nothing", checks[0], ctl.Checks[checks[0]])
	}
}

// The same TMPDIR as a relative path: a program resolves it against its working directory, so a check
// that skipped every value that is not absolute would let root's worker starting in /tmp (its launcher's
// directory) with TMPDIR=<name of B's directory there> get B's directory (`cd -P "$TMPDIR"` landing in
// it). A relative value is checked as the worker resolves it, from its working directory: refused, exit
// 125, one line naming TMPDIR.
func TestRedteam5RelativeTMPDIR(t *testing.T) {
	requireRoot(t)
	e := rootHomeEnv(t)
	uid, gid := throwawayUser(t)
	bdir, err := os.MkdirTemp("/tmp", "hl-rt4-b-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(bdir) })
	must(t, os.Lchown(bdir, uid, gid))
	pwd := `sh:cd -P "$TMPDIR" && pwd -P`
	for _, rel := range []string{filepath.Base(bdir), "./" + filepath.Base(bdir) + "/."} {
		r := e.runIn("/tmp", nil, "exec", "-p", "b", "--scope", "none", "--env", "TMPDIR="+rel, "--", selfBin, "child", "report", pwd)
		if r.Code == 0 {
			t.Fatalf("root's worker in /tmp ran with TMPDIR %s: %s", rel, decodeReport(t, r.Stdout).Checks[pwd])
		}
		if r.Code != 125 || !strings.Contains(r.Stderr, "TMPDIR "+rel) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("relative TMPDIR %s: exit %d %q; want 125, one line naming TMPDIR", rel, r.Code, r.Stderr)
		}
	}
	// A relative TMPDIR in a directory of root's passes.
	if r := e.runIn("/", nil, "exec", "-p", "b", "--scope", "none", "--env", "TMPDIR=tmp", "--", "true"); r.Code != 0 {
		t.Errorf("TMPDIR=tmp from /: exit %d %s, want 0", r.Code, r.Stderr)
	}
}
