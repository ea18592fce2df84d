package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The red team's findings on the profile environ, hlaunch's own processes, worker logs and deadlines,
// each kept here as the test that guards the boundary it found open.

// A root launcher's --log in /tmp, as the README's own example logs to /tmp/cron-42.log: in a sticky,
// world-writable directory anyone can create that name before the launch, mode 0666, and an existing
// regular file is opened without O_CREAT, so fs.protected_regular does not apply. Opened for appending
// whoever owns it, the worker's output - B's credentials, if it prints them - would land in a file the
// local user owns and reads: the launch is refused (exit 125 naming --log), foreground and detached.
func TestRedteamLocalUserOwnsTheLog(t *testing.T) {
	requireRoot(t)
	uid, gid := throwawayUser(t)
	e := newEnv(t)
	sticky, err := os.MkdirTemp(hostBase, "hl-rt-sticky-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(sticky) })
	must(t, os.Chmod(sticky, 0o1777))
	for _, detach := range []bool{false, true} {
		log := filepath.Join(sticky, "cron-42-"+strconv.FormatBool(detach)+".log")
		// The local user's file, made before the launch.
		pre := asUser(exec.Command("sh", "-c", "umask 0; : > "+log), uid, gid)
		if out, err := pre.CombinedOutput(); err != nil {
			t.Fatalf("the local user could not create %s: %v %s", log, err, out)
		}
		args := []string{"exec", "-p", "b", "--scope", "none", "--log", log}
		if detach {
			args = append(args, "--detach")
		}
		r := e.run(append(args, "--", "sh", "-c", "echo key=$FIRECRAWL_API_KEY")...)
		if detach && r.Code == 0 {
			var rc receipt
			if json.Unmarshal([]byte(r.Stdout), &rc) == nil {
				e.run("wait", "--timeout", "60s", rc.ID)
			}
		}
		if r.Code != 125 || !strings.Contains(r.Stderr, "--log") {
			t.Errorf("detach=%v: a log file the local user owns: exit %d %q, want 125 naming --log", detach, r.Code, r.Stderr)
		}
		// What the local user reads from the file it owns.
		got, _ := asUser(exec.Command("cat", log), uid, gid).Output()
		if strings.Contains(string(got), "key=b-fc") {
			t.Errorf("detach=%v: the local user (uid %d) reads B's worker log from the file it made first (%s): %q; want the launch refused (exit 125, was %d)",
				detach, uid, log, strings.TrimSpace(string(got)), r.Code)
		}
	}
}

// A detached worker must not escape its supervision by killing its shim. The shim (its parent, of the
// launcher's uid) records the worker's end and enforces --timeout: a worker of the same uid (every
// unsandboxed worker: root's under a root launcher, the user's under an unprivileged one) SIGKILLs it
// once the launch has answered, and runs on past its deadline in a cgroup nothing supervises; `status`
// still says running. (Killed before the receipt, the launch fails and its cgroup is killed: that
// environment. hlaunch builds the child's environ from B alone (the profile boundary), but the launcher
// process - hlaunch itself in the foreground, the sidecar for its spawns - still holds the environment it
// was started with (the gateway's: A's keys), and /proc/<pid>/environ shows it to any process of the same
// uid (or root): the worker's own parent for a foreground exec, the sidecar found in /proc. Unprivileged
// and root launchers, the CLI and a real sidecar.
func TestRedteamUnsandboxedReadsLauncherEnviron(t *testing.T) {
	requireRoot(t)
	const secret = "FIRECRAWL_API_KEY=a-fc"
	leaked := func(t *testing.T, how, got string) {
		t.Helper()
		if strings.Contains(got, secret) {
			t.Errorf("%s: an unsandboxed worker of B read A's %s from its launcher's environ", how, secret)
		}
	}
	t.Run("root launcher", func(t *testing.T) {
		e := newEnv(t)
		r := e.run("exec", "-p", "b", "--scope", "none", "--", "sh", "-c", `tr '\0' '\n' < /proc/$PPID/environ`)
		// The worker runs as B's home's owner, not the launcher's uid: the read may fail outright.
		if r.Code != 0 && !strings.Contains(r.Stderr, "environ") {
			t.Fatalf("exit %d: %s (want the launch to run, and the read to fail or show nothing)", r.Code, r.Stderr)
		}
		leaked(t, "exec", r.Stdout)
	})
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", w.bin, "--root", w.Root,
			"--state-dir", w.State, "exec", "-p", "b", "--scope", "none", "--", "sh", "-c", `tr '\0' '\n' < /proc/$PPID/environ`)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", secret}
		r := runResult(t, cmd)
		if r.Code != 0 && !strings.Contains(r.Stderr, "environ") {
			t.Fatalf("exit %d: %s (want the launch to run, and the read to fail or show nothing)", r.Code, r.Stderr)
		}
		leaked(t, "exec", r.Stdout)
	})
	t.Run("sidecar", func(t *testing.T) {
		requireCgroup2(t)
		e := newEnv(t)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
		rep := p.report(map[string]any{}, "read:/proc/"+strconv.Itoa(p.cmd.Process.Pid)+"/environ")
		leaked(t, "sidecar spawn", rep.Checks["read:/proc/"+strconv.Itoa(p.cmd.Process.Pid)+"/environ"])
	})
}

// A sandboxed worker's writes to its own home must not turn into code that a later launch of the same
// profile runs as host root. The home is writable in the view, its .env too; the environ of every later
// launch of B is composed from that .env (PATH, LD_PRELOAD, BASH_ENV ... pass), and the target is looked
// up in the child's PATH. So a sandboxed worker (the home's owner, uid != 0) that plants a "true" in its
// workspace and puts the workspace first in .env's PATH has it run as uid 0 by a root launcher's next
// unsandboxed `exec -p b -- true`.
func TestRedteamSandboxPlantsRootCommand(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	bHome := filepath.Join(e.Root, "profiles", "b")
	ws := filepath.Join(bHome, "workspace")
	pwned := filepath.Join(bHome, "pwned")
	tool := filepath.Join(ws, "true")
	dotenv := filepath.Join(bHome, ".env")
	plantTool := "plant:" + tool + "=#!/bin/sh\nid -u > " + pwned + "\n"
	plantEnv := "plant:" + dotenv + "=B_MARKER=b\nPATH=" + ws + ":/usr/bin:/bin\n"
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none"}, plantTool, plantEnv)
	t.Logf("inside B's sandbox: plant tool %q, rewrite .env %q", rep.Checks[plantTool], rep.Checks[plantEnv])
	r := e.run("exec", "-p", "b", "--scope", "none", "--", "true")
	t.Logf("B's next launch: exit %d %s", r.Code, r.Stderr)
	if b, err := os.ReadFile(pwned); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Errorf("B's sandboxed worker (uid %d) had its planted %s run as host uid 0 by B's next launch (its .env's PATH)", profileUID("b"), tool)
	}
}

// TestRedteamWorkerKillsItsShim is in shimlost_test.go.

// A sandboxed worker must not reach another profile through a second path to the hermes root. The view
// covers the root at the one path the launcher names; a host where the same directory is mounted a
// second time (a bind mount, the same file system at two places: common with containers and
// /var/home-style layouts) shows it there in full, read-only, and in a single-user hermes deployment
// every profile's home has the one owner the worker runs as, so A's .env is readable. The launcher runs
