package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// sd runs hlaunch inside the test manager's world (its cgroup subtree and namespaces), as the gateway
// would on a host with a user manager.
func (e *env) sd(m *systemdtest.Manager, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := append([]string{"--root", e.Root, "--state-dir", e.State}, args...)
	cmd := m.Command(ctx, hlaunchBin, full...)
	cmd.Env = append(e.Launcher, m.Env()...)
	return runResult(e.t, cmd)
}

// A worker started with --scope systemd is in its named scope from its first instruction; the scope is
// listed by the manager, carries an InvocationID, and is gone after stop.
func TestSystemdScopeFromFirstInstruction(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	unit := "hermes-worker-proc_" + randHex(6)
	r := e.sd(m, "exec", "-p", "b", "--scope", "systemd", "--user", "--unit", unit, "--", selfBin, "child", "report")
	if r.Code != 0 {
		t.Fatalf("exec: %d %s\n%s", r.Code, r.Stderr, m.Log())
	}
	var rep childReport
	must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	var v2 string
	for _, l := range rep.Cgroup {
		if strings.HasPrefix(l, "0::") {
			v2 = strings.TrimPrefix(l, "0::")
		}
	}
	if !strings.HasSuffix(v2, "/"+unit+".scope") {
		t.Fatalf("child's first cgroup read: %q, want .../%s.scope", v2, unit)
	}
	if _, ok := rep.Env["DBUS_SESSION_BUS_ADDRESS"]; ok {
		t.Error("the launcher's bus address leaked into the child")
	}
	if rep.Status["TracerPid"] != "0" {
		t.Errorf("TracerPid %q: the target runs traced (a held launch must detach first)", rep.Status["TracerPid"])
	}
	// The held path's exit codes: the target's own, 128+N, 127 not found, 126 cannot run.
	notExec := filepath.Join(t.TempDir(), "script")
	must(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600))
	for _, c := range []struct {
		argv []string
		want int
	}{
		{[]string{selfBin, "child", "exit", "7"}, 7},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"no-such-command-hlaunch"}, 127},
		{[]string{notExec}, 126},
	} {
		if r := e.sd(m, append([]string{"exec", "-p", "b", "--scope", "systemd", "--user", "--"}, c.argv...)...); r.Code != c.want {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.argv, r.Code, c.want, r.Stderr)
		}
	}

	// Detached: listed by the manager, stopped through hlaunch, gone afterwards.
	unit2 := "hermes-worker-kanban-7-run-" + randHex(2)
	r = e.sd(m, "exec", "-p", "b", "--detach", "--scope", "systemd", "--user", "--unit", unit2, "--", selfBin, "child", "spawn-tree", "300")
	if r.Code != 0 {
		t.Fatalf("detach: %d %s", r.Code, r.Stderr)
	}
	var rc receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rc))
	var full struct {
		InvocationID string `json:"invocation_id"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &full))
	if rc.Mode != "scoped" || rc.Unit != unit2+".scope" || len(full.InvocationID) != 32 {
		t.Fatalf("receipt: mode %q unit %q invocation %q", rc.Mode, rc.Unit, full.InvocationID)
	}
	inv, err := m.Show(context.Background(), unit2+".scope", "InvocationID")
	if err != nil || inv != full.InvocationID {
		t.Fatalf("manager's InvocationID %q (%v), receipt's %q", inv, err, full.InvocationID)
	}
	list, _ := m.Systemctl(context.Background(), "list-units", "--type=scope", "--no-legend")
	if !strings.Contains(list, unit2+".scope") {
		t.Fatalf("systemctl --user list-units does not show the scope:\n%s", list)
	}
	grandchild := treeGrandchild(t, filepath.Join(m.CgroupV2, "app.slice", rc.Unit)) // the tree is whole before the stop
	if r := e.sd(m, "stop", "--grace", "500ms", rc.ID); r.Code != 0 {
		t.Fatalf("stop: %d %s", r.Code, r.Stderr)
	}
	if alive(rc.PID) {
		t.Fatal("leader alive after stop")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, _ = m.Systemctl(context.Background(), "list-units", "--type=scope", "--all", "--no-legend")
		if !strings.Contains(list, unit2+".scope") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("scope still listed after stop:\n%s", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if alive(grandchild) {
		t.Fatalf("spawn-tree's setsid grandchild %d outlived its stopped scope", grandchild)
	}
}

// A leftover failed unit of the same name does not block a new launch.
func TestSystemdFailedLeftoverDoesNotBlock(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	unit := "hermes-worker-cron-9-exec-" + randHex(2)
	ctx := context.Background()
	// A scope whose process ignores SIGTERM, stopped with a short timeout: it ends "failed" (timeout).
	left := m.Command(ctx, "systemd-run", "--user", "--scope", "--quiet", "--unit", unit, "-p", "TimeoutStopSec=300ms",
		"--", "sh", "-c", `trap "" TERM; sleep 300`)
	must(t, left.Start())
	t.Cleanup(func() { _ = left.Process.Kill(); _ = left.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if s, _ := m.Show(ctx, unit+".scope", "ActiveState"); s == "active" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("leftover scope never became active")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, _ = m.Systemctl(ctx, "stop", unit+".scope")
	if s, _ := m.Show(ctx, unit+".scope", "ActiveState"); s != "failed" {
		t.Fatalf("leftover is %q, want failed", s)
	}
	r := e.sd(m, "exec", "-p", "b", "--scope", "systemd", "--user", "--unit", unit, "--", selfBin, "child", "exit", "0")
	if r.Code != 0 {
		t.Fatalf("launch over a failed leftover: %d %s", r.Code, r.Stderr)
	}
}

// A gateway service with KillMode=mixed starts workers through hlaunch and plain children; restarting it
// kills the plain children (the control) and leaves every hlaunch worker running in its scope, each of
// which then finishes, once released, with its own exit code in the ledger.
func TestSystemdWorkersSurviveGatewayRestart(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	dir := t.TempDir()
	script := fmt.Sprintf(`
if [ ! -e %[1]s/launched ]; then
  for i in 0 1 2 3 4 5 6 7 8 9; do
    %[2]s --root %[3]s --state-dir %[4]s exec -p b --detach --scope systemd --user -- %[5]s child exit-when %[1]s/release 2$i >/dev/null || exit 9
    sh -c "while [ ! -e %[1]s/release ]; do sleep 0.05; done; touch %[1]s/control-$i" &
    echo $! > %[1]s/control-$i.pid
  done
  touch %[1]s/launched
fi
exec sleep 300`, dir, hlaunchBin, e.Root, e.State, selfBin)
	gw := "gw-" + randHex(3)
	if err := m.StartService(context.Background(), gw, []string{"KillMode=mixed"}, "/bin/sh", "-c", script); err != nil {
		t.Fatal(err)
	}
	// Ten launches take seconds each on the guest lane under TCG: the bound is for a hung gateway only.
	deadline := time.Now().Add(180 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "launched")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			st, _ := m.Systemctl(context.Background(), "status", gw)
			t.Fatalf("the gateway never launched its workers:\n%s", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := m.Systemctl(context.Background(), "restart", gw); err != nil {
		t.Fatal(err)
	}
	ps := e.sd(m, "ps", "--json")
	var recs []receipt
	must(t, json.Unmarshal([]byte(ps.Stdout), &recs))
	running := 0
	for _, r := range recs {
		if r.State == "running" && r.Mode == "scoped" {
			running++
		}
	}
	if len(recs) != 10 || running != 10 {
		t.Fatalf("after the gateway's restart: %d records, %d running scoped, want 10 and 10", len(recs), running)
	}
	// The control: plain children of the gateway die with its restart (KillMode=mixed kills the rest of
	// its cgroup). Each is seen gone before the release, so none can touch its file after it.
	for i := 0; i < 10; i++ {
		pid := readPID(t, filepath.Join(dir, fmt.Sprintf("control-%d.pid", i)))
		for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("control child %d (pid %d) survived the gateway's restart", i, pid)
			}
		}
	}
	// The workers and the control children end when the test says, not after a time that a slow host
	// (the guest lane under TCG) can spend on the ten launches alone.
	must(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	got := e.waitLedger(ids, 30*time.Second)
	codes := map[int]bool{}
	for _, r := range got {
		if r.ExitCode != nil {
			codes[*r.ExitCode] = true
		}
	}
	for i := 0; i < 10; i++ {
		if !codes[20+i] {
			t.Errorf("ledger lacks exit code %d: %v", 20+i, codes)
		}
	}
	// And none touched its file before its end.
	for i := 0; i < 10; i++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("control-%d", i))); err == nil {
			t.Errorf("control child %d survived the gateway's restart", i)
		}
	}
	_, _ = m.Systemctl(context.Background(), "stop", gw)
}

// Without any bus or writable cgroup: auto degrades with exactly one warning; --require-scope exits 75 and
// starts nothing. Run as an unprivileged user, for whom neither exists here.
func TestSystemdAutoDegradesHonestly(t *testing.T) {
	requireRoot(t)
	e := nobodyEnv(t)
	marker := filepath.Join(e.State, "ran")
	r := e.asNobody("exec", "-p", "b", "--", "/bin/sh", "-c", "touch "+marker)
	if r.Code != 0 {
		t.Fatalf("degraded run: %d %s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "degraded") || !strings.Contains(lines[0], "enable-linger") {
		t.Fatalf("want exactly one warning naming the reason and the remedy, got %q", r.Stderr)
	}
	must(t, os.Remove(marker))
	r = e.asNobody("exec", "-p", "b", "--require-scope", "--", "/bin/sh", "-c", "touch "+marker)
	if r.Code != 75 || len(strings.Split(strings.TrimSpace(r.Stderr), "\n")) != 1 {
		t.Fatalf("--require-scope: exit %d %q, want 75 and one line", r.Code, r.Stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("--require-scope started the command")
	}
	r = e.asNobody("exec", "-p", "b", "--detach", "--", "true")
	var rc receipt
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rc) != nil || rc.Mode != "degraded" || rc.ShimPID == 0 {
		t.Fatalf("degraded receipt: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	// The worker's shim writes its exit records after `true` ends: wait for it, so that nothing of this
	// test runs (or writes into its removed directory) after it.
	deadline := time.Now().Add(10 * time.Second)
	for alive(rc.ShimPID) {
		if time.Now().After(deadline) {
			t.Fatalf("the degraded worker's shim %d still runs 10 s after its `true`", rc.ShimPID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The same placement as a non-root user, with that user's own manager.
func TestSystemdNonRootUserManager(t *testing.T) {
	requireRoot(t)
	m := systemdtest.StartWith(t, systemdtest.Options{UID: 65534, GID: 65534})
	e := nobodyEnv(t)
	unit := "hermes-worker-proc_" + randHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := m.Command(ctx, e.bin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--scope", "systemd",
		"--unit", unit, "--", "cat", "/proc/self/cgroup")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, m.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("exec as uid 65534: %v\n%s\n%s", err, out, m.Log())
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	found := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "0::") && strings.HasSuffix(sc.Text(), "/"+unit+".scope") {
			found = true
		}
	}
	if !found {
		t.Fatalf("child of a non-root launch is not in %s.scope:\n%s", unit, out)
	}
}

// nobodyWorld is a hermes world that uid 65534 can read, with a copy of hlaunch it can execute.
type nobodyWorld struct {
	*env
	bin string
}

func nobodyEnv(t *testing.T) *nobodyWorld {
	t.Helper()
	base, err := os.MkdirTemp(tmpBase, "hlaunch-nobody-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	e := &env{t: t, Root: filepath.Join(base, "hermes"), State: filepath.Join(base, "state"), Parent: ownedParent(t)}
	e.profile("b", "B_MARKER=b\n")
	must(t, os.MkdirAll(e.State, 0o700))
	bin := filepath.Join(base, "hlaunch")
	data, err := os.ReadFile(hlaunchBin)
	must(t, err)
	must(t, os.WriteFile(bin, data, 0o755))
	must(t, exec.Command("chown", "-R", "65534:65534", base).Run())
	must(t, os.Chmod(base, 0o755))
	t.Cleanup(func() { cleanupCgroups(t, e.Parent) })
	return &nobodyWorld{env: e, bin: bin}
}

func (w *nobodyWorld) asNobody(args ...string) result {
	w.t.Helper()
	return w.asNobodyIn("", args...)
}

// asNobodyIn is asNobody from working directory dir (empty: the test's).
func (w *nobodyWorld) asNobodyIn(dir string, args ...string) result {
	w.t.Helper()
	full := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", w.bin, "--root", w.Root, "--state-dir", w.State}, args...)
	cmd := exec.Command("setpriv", full...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_RUNTIME_DIR=/nonexistent/run"}
	return runResult(w.t, cmd)
}

// A scope never runs its worker under weaker limits than asked. A user manager on a hybrid host (this
// machine) accepts MemoryMax= and TasksMax= but cannot apply them (memory and pids are v1 controllers it
// does not manage): the launch is refused, naming the flags, and the target never runs. Where the manager
// does apply them (a pure v2 host, the guest lane), the worker runs under them, foreground and detached.
// Either way the two launches agree, and a launch that ran shows the limit from inside its own cgroup.
func TestSystemdScopeLimitsNeverSilentlyDropped(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	dir := workerDir(t) // the markers: the worker runs as its home's owner
	logs := t.TempDir() // the logs: root's, written by the shim (a --log directory others may write is refused)
	// The worker's memory.max, read from its own cgroup on whichever tree carries the memory controller;
	// the trailing true keeps the exit status the launch's, not cat's.
	script := func(marker string) string {
		return `touch ` + marker + `; u=$(grep ^0:: /proc/self/cgroup | cut -d: -f3); ` +
			`cat /sys/fs/cgroup/unified$u/memory.max /sys/fs/cgroup$u/memory.max 2>/dev/null; true`
	}
	applied := map[bool]bool{}
	for _, detach := range []bool{false, true} {
		marker := filepath.Join(dir, fmt.Sprintf("ran-%v", detach))
		log := filepath.Join(logs, fmt.Sprintf("log-%v", detach))
		args := []string{"exec", "-p", "b", "--scope", "systemd", "--user", "--memory", "64M", "--pids", "32"}
		if detach {
			args = append(args, "--detach", "--log", log)
		}
		r := e.sd(m, append(args, "--", "sh", "-c", script(marker))...)
		if r.Code == 0 {
			out := r.Stdout
			if detach {
				var rc receipt
				must(t, json.Unmarshal([]byte(r.Stdout), &rc))
				if w := e.sd(m, "wait", "--timeout", "60s", rc.ID); w.Code != 0 && w.Code != 1 {
					t.Fatalf("wait %s: exit %d: %s", rc.ID, w.Code, w.Stderr)
				}
				b, err := os.ReadFile(log)
				must(t, err)
				out = string(b)
			}
			if strings.TrimSpace(out) != "67108864" {
				t.Fatalf("detach=%v: the scope ran its worker without --memory: memory.max %q", detach, out)
			}
			applied[detach] = true
			continue
		}
		lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
		if r.Code != 125 || len(lines) != 1 || !strings.Contains(r.Stderr, "--memory") || !strings.Contains(r.Stderr, "--pids") ||
			!strings.Contains(r.Stderr, "did not apply") {
			t.Fatalf("detach=%v: exit %d, stderr %q: want 125 and one line naming --memory and --pids", detach, r.Code, r.Stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("detach=%v: the target ran although its limits were not applied", detach)
		}
	}
	if applied[false] != applied[true] {
		t.Fatalf("the manager applied the limits to one launch and not the other: %v", applied)
	}
	// Nothing is left in the manager: the refused scopes are collected.
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, _ := m.Systemctl(context.Background(), "list-units", "--type=scope", "--all", "--no-legend")
		if !strings.Contains(list, "hlaunch-b-") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refused scopes still listed:\n%s", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
