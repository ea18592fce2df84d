package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The red team's third round (issue 15): the boundaries landed last session attacked as a hostile worker
// would (docs/security.md, "The red team's guards"). Each test passes while the boundary holds.

// An unprivileged launcher with a supplementary group gives its sandboxed workers that group (the user
// namespace denies setgroups: TestRedteamUnprivSandboxUsesLauncherGroups). doctor says so before any
// launch: its kept_groups check is not OK and names the group, in --json and in the text; a launcher
// without supplementary groups is told none is kept. On the old code doctor said nothing of it.
func TestRedteam3DoctorWarnsKeptGroups(t *testing.T) {
	requireRoot(t)
	w := nobodyEnv(t)
	_, gid := throwawayUser(t)
	g := strconv.Itoa(gid)
	doctor := func(groups string, args ...string) result {
		full := append([]string{"--reuid=65534", "--regid=65534", groups, "--", w.bin, "--root", w.Root, "--state-dir", w.State, "doctor"}, args...)
		cmd := exec.Command("setpriv", full...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_RUNTIME_DIR=/nonexistent/run"}
		return runResult(t, cmd)
	}
	var d struct {
		KeptGroups *Check `json:"kept_groups"`
	}
	r := doctor("--groups="+g, "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || d.KeptGroups == nil {
		t.Fatalf("doctor --json of a launcher in group %s: %v, no kept_groups: %q %q", g, err, r.Stdout, r.Stderr)
	}
	if d.KeptGroups.OK || !strings.Contains(d.KeptGroups.Detail, g) || strings.Contains(d.KeptGroups.Detail, "\n") {
		t.Errorf("doctor --json of a launcher in group %s: kept_groups %+v, want not OK, one line naming %s", g, *d.KeptGroups, g)
	}
	r = doctor("--groups=" + g)
	if line := lineStarting(r.Stdout, "kept groups"); !strings.Contains(line, "no: ") || !strings.Contains(line, g) {
		t.Errorf("doctor of a launcher in group %s: kept groups line %q, want \"no: ...\" naming %s:\n%s", g, line, g, r.Stdout)
	}
	d.KeptGroups = nil
	r = doctor("--clear-groups", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || d.KeptGroups == nil || !d.KeptGroups.OK {
		t.Errorf("doctor --json of a launcher without supplementary groups: kept_groups %+v (%v), want OK: %q", d.KeptGroups, err, r.Stderr)
	}
}

// lineStarting is the first line of out that starts with prefix ("" if none).
func lineStarting(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// A worker that kills its shim then forks until a process of its own gets the shim's PID, so that a
// reader pinning the shim by its PID alone takes the impostor for the live shim and never enforces the
// deadline. The launch runs in a pid namespace of the test's with a pid_max of its own (per namespace since
// Linux 6.14), so the adversary's bounded loop wraps the PIDs in a few hundred forks. hlaunch's reader
// pins the shim by its PID and start time (ShimAlive): status says shim_lost while the impostor holds
// the PID, and the first read past the deadline ends the tree, impostor included. With ShimAlive reading
// the PID alone, status said running, not shim_lost, and nothing ended the worker.
func TestRedteam3ShimPIDTakenByWorker(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	probe := exec.Command("unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "sh", "-c", "echo 400 > /proc/sys/kernel/pid_max")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Fatalf("this kernel has no pid_max per pid namespace (Linux 6.14): %v %s; scripts/guest/vm/hostkinds.sh must leave this test out here", err, out)
	}
	hostMax, err := os.ReadFile("/proc/sys/kernel/pid_max")
	must(t, err)
	e := newEnv(t)
	// The namespace's init reaps what is reparented to it (the shim the worker kills, the adversary's tries).
	holder := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "python3", "-c",
		"import os,time\nwhile True:\n  try: os.wait()\n  except ChildProcessError: time.sleep(0.05)\n")
	must(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	var init int
	for deadline := time.Now().Add(10 * time.Second); init == 0; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", holder.Process.Pid, holder.Process.Pid))
		init, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if init == 0 && time.Now().After(deadline) {
			t.Fatalf("the pid namespace's init did not start")
		}
	}
	in := []string{"nsenter", "-t", strconv.Itoa(init), "-p", "-m", "--"}
	nsproc := fmt.Sprintf("/proc/%d/root/proc", init)
	// PIDs below 300 are never reused after a wrap: burn past them, then bound the namespace's PIDs.
	prep := exec.Command(in[0], append(in[1:], "sh", "-c", `i=0; while [ $i -lt 320 ]; do /bin/true; i=$((i+1)); done; echo 700 > /proc/sys/kernel/pid_max`)...)
	if out, err := prep.CombinedOutput(); err != nil {
		t.Fatalf("preparing the pid namespace: %v %s", err, out)
	}
	if b, _ := os.ReadFile("/proc/sys/kernel/pid_max"); !bytes.Equal(b, hostMax) {
		t.Fatalf("the host's pid_max changed to %q (was %q)", b, hostMax)
	}
	dir := t.TempDir()
	worker := []string{"sh", "-c", `echo $$ > "$1/pid"; while [ ! -e "$1/go" ]; do sleep 0.02; done
shim=$PPID; kill -9 $shim
while [ -e /proc/$shim ]; do sleep 0.01; done
i=0
while [ $i -lt 5000 ]; do
	sleep 600 & p=$!
	if [ "$p" = "$shim" ]; then echo $p > "$1/impostor"; exec sleep 120; fi
	kill $p; wait $p 2>/dev/null; i=$((i+1))
done
echo none > "$1/impostor"; exec sleep 120`, "sh", dir}
	r := e.runIn("", in, append([]string{"exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent,
		"--timeout", "20s", "--grace", "300ms", "--"}, worker...)...)
	if r.Code != 0 {
		t.Fatalf("exec: exit %d %s", r.Code, r.Stderr)
	}
	var rc lostRecord
	must(t, json.Unmarshal([]byte(r.Stdout), &rc))
	if rc.ShimPID <= 0 || rc.Deadline <= 0 {
		t.Fatalf("receipt: shim_pid %d deadline %d", rc.ShimPID, rc.Deadline)
	}
	must(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	pid := readPID(t, filepath.Join(dir, "pid"))
	var impostor string
	for deadline := time.Now().Add(60 * time.Second); impostor == ""; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "impostor"))
		if strings.HasSuffix(string(b), "\n") {
			impostor = strings.TrimSpace(string(b))
		}
		if impostor == "" && time.Now().After(deadline) {
			t.Fatalf("the adversary found nothing in 60 s")
		}
	}
	if impostor != strconv.Itoa(rc.ShimPID) {
		t.Fatalf("the adversary did not get the shim's PID %d in 5000 forks (%q)", rc.ShimPID, impostor)
	}
	nsAlive := func(p string) bool {
		b, err := os.ReadFile(filepath.Join(nsproc, p, "stat"))
		i := bytes.LastIndexByte(b, ')')
		return err == nil && i > 0 && i+2 < len(b) && b[i+2] != 'Z'
	}
	status := func() lostRecord {
		t.Helper()
		s := e.runIn("", in, "status", "--json", rc.ID)
		var rec lostRecord
		if err := json.Unmarshal([]byte(s.Stdout), &rec); err != nil {
			t.Fatalf("status: exit %d %v %q %q", s.Code, err, s.Stdout, s.Stderr)
		}
		return rec
	}
	if rec := status(); boottimeNS(t) < rc.Deadline && (!rec.ShimLost || rec.State != "running") {
		t.Errorf("status while the worker's own process %s holds the shim's PID: state %q shim_lost %v reason %q; want running, shim_lost",
			impostor, rec.State, rec.ShimLost, rec.Reason)
	}
	for boottimeNS(t) < rc.Deadline+rc.Grace {
		time.Sleep(100 * time.Millisecond)
	}
	rec := status()
	for _, p := range []string{strconv.Itoa(pid), impostor} {
		if nsAlive(p) {
			t.Errorf("process %s of the worker lives after a status past its deadline (record: state %q shim_lost %v reason %q)", p, rec.State, rec.ShimLost, rec.Reason)
		}
	}
	if rec = status(); rec.State != "exited" || !rec.ShimLost || rec.EndedAt == "" {
		t.Errorf("final record: state %q shim_lost %v ended_at %q reason %q; want exited, shim_lost, ended", rec.State, rec.ShimLost, rec.EndedAt, rec.Reason)
	}
}
