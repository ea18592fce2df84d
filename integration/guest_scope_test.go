//go:build guest

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The scoped worker on a production-shaped host: the guest lane's root runs these against the
// guest's own system manager, where --scope auto picks a systemd scope. A scope is a cgroup systemd made,
// not hlaunch; the worker's whole-tree deadline, its OOM record and its figures must hold there as they do
// for a raw cgroup.

// scoped starts argv detached in a system scope and stops the unit when the test ends, whatever happened.
func (e *env) scoped(flags []string, argv ...string) receipt {
	e.t.Helper()
	rc := e.detach(append([]string{"--scope", "systemd"}, flags...), argv...)
	if rc.Mode != "scoped" || rc.Unit == "" || rc.Cgroup == "" {
		e.t.Fatalf("not a scope: %+v", rc)
	}
	e.t.Cleanup(func() { _ = exec.Command("systemctl", "stop", rc.Unit).Run() })
	return rc
}

// sysScopeProcs lists the PIDs in a system scope's cgroup ("" when it is gone).
func sysScopeProcs(rc receipt) string {
	b, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup", rc.Cgroup, "cgroup.procs"))
	return strings.TrimSpace(string(b))
}

// waitFinal waits (bounded) for the worker's record to say it ended.
func (e *env) waitFinal(rc receipt) receipt {
	e.t.Helper()
	r := e.run("wait", "--json", "--timeout", "60s", rc.ID)
	var rec receipt
	if err := json.Unmarshal([]byte(r.Stdout), &rec); err != nil {
		e.t.Fatalf("wait %s: exit %d: %v: %q %q", rc.ID, r.Code, err, r.Stdout, r.Stderr)
	}
	return rec
}

// At the deadline the whole tree goes, not just the leader: the sh -c 'sleep 612 & exec sleep 63'
// left sleep 612 in the scope.
func TestGuestScopeDeadlineEndsTree(t *testing.T) {
	e := newEnv(t)
	rc := e.scoped([]string{"--timeout", "3s", "--grace", "1s"}, "sh", "-c", "sleep 612 & exec sleep 63")
	// The shim, the leader and what it leaves behind are all in the scope before the deadline.
	var members []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		members = strings.Fields(sysScopeProcs(rc))
		if len(members) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scope never held shim, leader and leftover: %q", members)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rec := e.waitFinal(rc)
	if !rec.TimedOut || rec.EndedAt == "" {
		t.Errorf("record after the deadline: timed_out %v ended_at %q (state %s)", rec.TimedOut, rec.EndedAt, rec.State)
	}
	if left := sysScopeProcs(rc); left != "" {
		t.Errorf("processes left in the scope after the worker's end: %s", left)
	}
	for _, m := range members {
		pid, _ := strconv.Atoi(m)
		if alive(pid) {
			t.Errorf("member %d of the timed-out worker still runs", pid)
		}
	}
}

// A scoped worker killed by the OOM killer is recorded as such, with its peak memory.
func TestGuestScopeOOMRecorded(t *testing.T) {
	e := newEnv(t)
	rc := e.scoped([]string{"--memory", "64M"}, selfBin, "child", "memhog", "256")
	rec := e.waitFinal(rc)
	if !rec.OOMKilled || rec.MemPeak == 0 {
		t.Fatalf("record of an OOM-killed scoped worker: oom_killed %v memory_peak %d signal %q (state %s)",
			rec.OOMKilled, rec.MemPeak, rec.Signal, rec.State)
	}
}

// status and ps show a running scoped worker's memory and task figures.
func TestGuestScopeStats(t *testing.T) {
	e := newEnv(t)
	rc := e.scoped(nil, "sh", "-c", "sleep 300 & exec sleep 300")
	deadline := time.Now().Add(30 * time.Second)
	for len(strings.Fields(sysScopeProcs(rc))) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the scope never held both processes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rec, r := e.record(rc.ID)
	if r.Code != 0 || rec.State != "running" || rec.MemCur == 0 || rec.Pids < 2 {
		t.Errorf("status of a scoped worker: exit %d state %s memory_current %d pids_current %d", r.Code, rec.State, rec.MemCur, rec.Pids)
	}
	var list []receipt
	out := e.run("ps", "--json")
	if err := json.Unmarshal([]byte(out.Stdout), &list); err != nil {
		t.Fatalf("ps --json: %v: %q", err, out.Stdout)
	}
	found := false
	for _, w := range list {
		if w.ID == rc.ID {
			found = true
			if w.MemCur == 0 || w.Pids < 2 {
				t.Errorf("ps of a scoped worker: memory_current %d pids_current %d", w.MemCur, w.Pids)
			}
		}
	}
	if !found {
		t.Errorf("ps does not list %s: %s", rc.ID, out.Stdout)
	}
}

// --scope cgroup where systemd owns the tree: with no parent named, hlaunch makes its cgroups
// only inside the caller's delegated subtree. From a unit without Delegate= (the lane's own service) the
// launch is refused in one line and nothing is made at the root of systemd's tree; from a unit with
// Delegate=yes the worker's cgroup is <the unit's cgroup>/hlaunch/w-....
func TestGuestCgroupModeUnderSystemd(t *testing.T) {
	e := newEnv(t)
	own, err := os.ReadFile("/proc/self/cgroup")
	must(t, err)
	r := e.run("exec", "-p", "b", "--scope", "cgroup", "--", "true")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 125 || len(lines) != 1 || !strings.Contains(r.Stderr, "delegated") || !strings.Contains(r.Stderr, "--cgroup-parent") {
		t.Errorf("--scope cgroup from %s: exit %d stderr %q; want 125 and one line naming delegation and --cgroup-parent",
			strings.TrimSpace(string(own)), r.Code, r.Stderr)
	}
	if _, err := os.Stat("/sys/fs/cgroup/hlaunch"); err == nil {
		t.Errorf("/sys/fs/cgroup/hlaunch exists: a cgroup at the root of systemd's tree")
	}

	unit := "hlaunch-test-delegate-" + randHex(4) + ".service"
	t.Cleanup(func() { _ = exec.Command("systemctl", "stop", unit).Run() })
	args := []string{"--wait", "--pipe", "--quiet", "--collect", "--unit", unit, "-p", "Delegate=yes",
		"--setenv=HLAUNCH_STATE_DIR=" + e.State, "--", hlaunchBin, "--root", e.Root, "--state-dir", e.State,
		"exec", "-p", "b", "--scope", "cgroup", "--", selfBin, "child", "report"}
	res := runResult(t, exec.Command("systemd-run", args...))
	if res.Code != 0 {
		t.Fatalf("--scope cgroup in a delegated unit: exit %d: %s", res.Code, res.Stderr)
	}
	var rep childReport
	must(t, json.Unmarshal([]byte(res.Stdout), &rep))
	want := "0::/system.slice/" + unit + "/hlaunch/w-"
	if len(rep.Cgroup) != 1 || !strings.HasPrefix(rep.Cgroup[0], want) {
		t.Fatalf("first cgroup read in a delegated unit: %q, want %s...", rep.Cgroup, want)
	}
}
