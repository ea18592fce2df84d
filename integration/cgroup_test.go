package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// receipt is the part of a receipt/record the tests read.
type receipt struct {
	ID        string `json:"id"`
	Token     string `json:"token"`
	PID       int    `json:"pid"`
	Mode      string `json:"mode"`
	Cgroup    string `json:"cgroup"`
	CgroupID  uint64 `json:"cgroup_id"`
	State     string `json:"state"`
	ExitCode  *int   `json:"exit_code"`
	Signal    string `json:"signal"`
	OOMKilled bool   `json:"oom_killed"`
	TimedOut  bool   `json:"timed_out"`
	Unit      string `json:"unit"`
	Key       string `json:"key"`
	Verif     string `json:"verification"`
	Finger    string `json:"fingerprint"`
	StartTime uint64 `json:"start_time"`
	BootID    string `json:"boot_id"`
	CPU       uint64 `json:"cpu_usage_ns"`
	Pids      uint64 `json:"pids_current"`
	EndedAt   string `json:"ended_at"`
	MemCur    uint64 `json:"memory_current"`
	MemPeak   uint64 `json:"memory_peak"`
	Sandbox   bool   `json:"sandbox"`
	Seccomp   string `json:"seccomp"`
	Log       string `json:"log"`
	ShimPID   int    `json:"shim_pid"`
}

// detach starts argv detached and returns its receipt.
func (e *env) detach(flags []string, argv ...string) receipt {
	e.t.Helper()
	args := append([]string{"exec", "-p", "b", "--detach"}, flags...)
	args = append(append(args, "--"), argv...)
	r := e.run(args...)
	if r.Code != 0 {
		e.t.Fatalf("hlaunch %v: exit %d: %s", args, r.Code, r.Stderr)
	}
	var rc receipt
	if err := json.Unmarshal([]byte(r.Stdout), &rc); err != nil {
		e.t.Fatalf("receipt: %v: %q", err, r.Stdout)
	}
	return rc
}

// record reads a worker's record with `hlaunch status --json`.
func (e *env) record(ref string) (receipt, result) {
	e.t.Helper()
	r := e.run("status", "--json", ref)
	var rc receipt
	if err := json.Unmarshal([]byte(r.Stdout), &rc); err != nil {
		e.t.Fatalf("status %s: %v: %q %q", ref, err, r.Stdout, r.Stderr)
	}
	return rc, r
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// treeGrandchild waits for the setsid grandchild of a "child spawn-tree 300" (its sleep) to run in the
// cgroup directory dir, and returns its PID.
func treeGrandchild(t *testing.T, dir string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cmd), "sleep\x00300") {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("spawn-tree's grandchild never appeared in %s (members %q)", dir, b)
		}
	}
}

// The target program's first read of /proc/self/cgroup already shows the worker's cgroup in the v2 tree
// and in each v1 hierarchy its limits use.
func TestCgroupPlacedBeforeFirstInstruction(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	cases := map[string][]string{
		"v2 only (clone3 fast path)":   {"--memory", "max", "--pids", "max", "--cpu-weight", "max"},
		"v1 limits (held at its exec)": {"--memory", "256M", "--pids", "100", "--cpu-weight", "50", "--cpus", "1.5"},
		"the default limits":           nil,
	}
	for name, limits := range cases {
		t.Run(name, func(t *testing.T) {
			flags := append([]string{"-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent}, limits...)
			rep, _ := e.with(t).report(flags)
			if rep.Status["TracerPid"] != "0" {
				t.Errorf("TracerPid %q: the target runs traced (a held launch must detach first)", rep.Status["TracerPid"])
			}
			want := map[string]bool{"0:": true}
			if name != "v2 only (clone3 fast path)" {
				for _, h := range []string{"memory", "pids", "cpu"} {
					want[h] = true
				}
			}
			var worker string
			for _, line := range rep.Cgroup {
				parts := strings.SplitN(line, ":", 3)
				if parts[1] == "" {
					worker = parts[2]
				}
			}
			if !strings.HasPrefix(worker, "/"+e.Parent+"/w-") {
				t.Fatalf("v2 cgroup %q is not a worker cgroup under %s; lines %v", worker, e.Parent, rep.Cgroup)
			}
			for _, line := range rep.Cgroup {
				parts := strings.SplitN(line, ":", 3)
				for _, ctrl := range strings.Split(parts[1], ",") {
					if want[ctrl] && parts[2] != worker {
						t.Errorf("hierarchy %s: %s, want %s", ctrl, parts[2], worker)
					}
				}
			}
			// A foreground worker's cgroup is removed when it ends.
			for _, root := range cgroupRoots() {
				if _, err := os.Stat(filepath.Join(root, worker)); err == nil {
					t.Errorf("worker cgroup %s left behind in %s", worker, root)
				}
			}
		})
	}
}

// A worker that double-forks and calls setsid is killed whole by one stop, verified empty.
func TestCgroupStopKillsWholeTree(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, selfBin, "child", "spawn-tree", "300")
	if rc.Mode != "cgroup" || rc.CgroupID == 0 || rc.Token == "" {
		t.Fatalf("receipt %+v", rc)
	}
	var grandchild int
	deadline := time.Now().Add(30 * time.Second)
	for grandchild == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(v2, rc.Cgroup, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cmd), "sleep\x00300") {
				grandchild = pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if grandchild == 0 {
		t.Fatal("the double-forked grandchild never appeared in the worker cgroup")
	}
	leaderSid, _ := getsidOf(rc.PID)
	if sid, _ := getsidOf(grandchild); sid == leaderSid {
		t.Fatalf("grandchild %d shares the leader's session %d: the test tree is wrong", grandchild, sid)
	}
	if rec, r := e.record(rc.ID); r.Code != 0 || rec.State != "running" || rec.CPU == 0 || rec.Pids < 3 {
		t.Fatalf("status of the running tree: exit %d, state %q, cpu %d ns, %d tasks", r.Code, rec.State, rec.CPU, rec.Pids)
	}
	if r := e.run("stop", "--grace", "1s", rc.ID); r.Code != 0 {
		t.Fatalf("stop: exit %d: %s", r.Code, r.Stderr)
	}
	if alive(grandchild) || alive(rc.PID) {
		t.Fatal("a member survived stop")
	}
	if _, err := os.Stat(filepath.Join(v2, rc.Cgroup)); err == nil {
		if b, _ := os.ReadFile(filepath.Join(v2, rc.Cgroup, "cgroup.procs")); len(strings.TrimSpace(string(b))) != 0 {
			t.Fatalf("cgroup not empty after stop: %s", b)
		}
	}
	rec, r := e.record(rc.ID)
	if rec.State != "exited" || r.Code != 1 {
		t.Fatalf("after stop: state %q exit %d", rec.State, r.Code)
	}
}

// A fork bomb stops at --pids; a memory hog past --memory is OOM-killed and its record says so.
func TestCgroupLimitsHold(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	t.Run("pids", func(t *testing.T) {
		r := e.with(t).run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "16", "--", selfBin, "child", "forkbomb")
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		n, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
		if err != nil || n >= 16 || n < 1 {
			t.Fatalf("fork bomb forked %q times under --pids 16", r.Stdout)
		}
	})
	t.Run("memory", func(t *testing.T) {
		e := e.with(t)
		rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--memory", "64M"}, selfBin, "child", "memhog", "256")
		r := e.run("wait", "--json", "--timeout", "30s", rc.ID)
		var rec receipt
		if err := json.Unmarshal([]byte(r.Stdout), &rec); err != nil {
			t.Fatalf("wait: %v %q %q", err, r.Stdout, r.Stderr)
		}
		if !rec.OOMKilled || rec.Signal != "SIGKILL" {
			t.Fatalf("memory hog record: oom_killed=%v signal=%q exit=%v", rec.OOMKilled, rec.Signal, rec.ExitCode)
		}
		ps := e.run("ps", "--json")
		if !strings.Contains(ps.Stdout, `"oom_killed": true`) && !strings.Contains(ps.Stdout, `"oom_killed":true`) {
			t.Errorf("ps does not say oom_killed: %s", ps.Stdout)
		}
	})
}

// Parents that escape the hierarchy root, and existing cgroups hlaunch did not create, are refused.
func TestCgroupParentRefused(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	foreign := e.Parent + "-foreign"
	must(t, os.Mkdir(filepath.Join(v2, foreign), 0o755))
	t.Cleanup(func() { cleanupCgroups(t, foreign) })
	marker := filepath.Join(t.TempDir(), "ran")
	for _, parent := range []string{"..", "../x", "/../x", "a/../../x", foreign} {
		r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", parent, "--", "touch", marker)
		if r.Code != 125 || !strings.Contains(r.Stderr, "cgroup") {
			t.Errorf("parent %q: exit %d, stderr %q", parent, r.Code, r.Stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("parent %q: the command ran", parent)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(v2, foreign)); countDirs(ents) != 0 {
		t.Errorf("hlaunch created cgroups inside a foreign parent")
	}
}

func countDirs(ents []os.DirEntry) int {
	n := 0
	for _, e := range ents {
		if e.IsDir() {
			n++
		}
	}
	return n
}

func getsidOf(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

// pureV2 runs hlaunch with args inside a private mount + cgroup namespace whose /sys/fs/cgroup is a fresh
// cgroup2 mount rooted at a subtree the test made: a real pure-v2 host, as most production hosts are.
func (e *env) pureV2(args ...string) result {
	e.t.Helper()
	v2 := requireCgroup2(e.t)
	sub := e.Parent + "-v2ns"
	must(e.t, os.MkdirAll(filepath.Join(v2, sub), 0o755))
	e.t.Cleanup(func() { cleanupCgroups(e.t, sub) })
	script := `echo $$ > "$1/cgroup.procs" && shift && exec unshare --cgroup --mount --propagation private sh -c 'mount -t tmpfs hlaunch-test /sys/fs/cgroup && mount -t cgroup2 hlaunch-test-cgroup2 /sys/fs/cgroup && test -e /sys/fs/cgroup/cgroup.events && exec "$@"' sh "$@"`
	full := append([]string{"-c", script, "sh", filepath.Join(v2, sub), hlaunchBin, "--root", e.Root, "--state-dir", e.State}, args...)
	cmd := exec.Command("sh", full...)
	cmd.Env = e.Launcher
	return runResult(e.t, cmd)
}

// The same placement, kill and refusal rules on a pure cgroup v2 host.
func TestCgroupPureV2(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	r := e.pureV2("exec", "-p", "b", "--scope", "cgroup", "--", selfBin, "child", "report")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var rep childReport
	must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	if len(rep.Cgroup) == 0 || !strings.HasPrefix(rep.Cgroup[len(rep.Cgroup)-1], "0::/hlaunch/w-") {
		t.Fatalf("child's first cgroup read: %v", rep.Cgroup)
	}
	// Whole-tree kill on v2: a detached double-forking worker, stopped from the same namespace.
	r = e.pureV2("exec", "-p", "b", "--scope", "cgroup", "--detach", "--", selfBin, "child", "spawn-tree", "300")
	if r.Code != 0 {
		t.Fatalf("detach: %d %s", r.Code, r.Stderr)
	}
	var rc receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rc))
	if !strings.HasPrefix(rc.Cgroup, "/hlaunch/w-") {
		t.Fatalf("receipt cgroup %q", rc.Cgroup)
	}
	grandchild := treeGrandchild(t, filepath.Join(requireCgroup2(t), e.Parent+"-v2ns", rc.Cgroup)) // the tree is whole before the stop
	if r := e.pureV2("stop", "--grace", "500ms", rc.ID); r.Code != 0 {
		t.Fatalf("stop: %d %s", r.Code, r.Stderr)
	}
	if alive(rc.PID) || alive(grandchild) {
		t.Fatalf("a member survived stop: leader %d alive %v, setsid grandchild %d alive %v", rc.PID, alive(rc.PID), grandchild, alive(grandchild))
	}
	// This machine binds memory to v1, so a pure-v2 tree has no memory controller: the limit is refused,
	// never silently ignored, and nothing runs.
	r = e.pureV2("exec", "-p", "b", "--scope", "cgroup", "--memory", "64M", "--", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "memory") {
		t.Fatalf("unsupported limit: exit %d, %q", r.Code, r.Stderr)
	}
}

// A worker gets stdin, stdout and stderr and no other descriptor: not the handshake pipes, not the
// launcher's, not what the launcher's own caller leaked to it.
func TestWorkerInheritsOnlyStdio(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	leak, err := os.Open("/dev/null") // a descriptor the caller leaks into hlaunch (no close-on-exec)
	must(t, err)
	defer leak.Close()
	run := func(args ...string) childReport {
		cmd := exec.Command(hlaunchBin, append([]string{"--root", e.Root, "--state-dir", e.State}, args...)...)
		cmd.Env = e.Launcher
		cmd.ExtraFiles = []*os.File{leak, leak, leak}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var rep childReport
		must(t, json.Unmarshal(out, &rep))
		return rep
	}
	// The reporter (a Go test binary) opens a few descriptors of its own at start-up: started directly with
	// only stdio, it shows what "nothing inherited" looks like.
	refCmd := exec.Command(selfBin, "child", "report")
	refCmd.Env = append(os.Environ(), stableFDs)
	out, err := refCmd.Output()
	must(t, err)
	var base childReport
	must(t, json.Unmarshal(out, &base))
	want := fmt.Sprint(base.FDs)
	for _, flags := range [][]string{
		{"--scope", "none"},
		{"--scope", "cgroup", "--cgroup-parent", e.Parent},
		{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "50"},
		{"--scope", "none", "--sandbox"},
	} {
		args := append(append([]string{"exec", "-p", "b", "--env", stableFDs}, flags...), "--", selfBin, "child", "report")
		if rep := run(args...); fmt.Sprint(rep.FDs) != want {
			t.Errorf("%v: child has descriptors %v, want %s (stdio and the reporter's own)", flags, rep.FDs, want)
		}
	}
	// Detached: the worker's stdio is /dev/null (or the log); still nothing else.
	log := filepath.Join(t.TempDir(), "w.log")
	cmd := exec.Command(hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--detach", "--scope", "cgroup",
		"--cgroup-parent", e.Parent, "--log", log, "--env", stableFDs, "--", selfBin, "child", "report")
	cmd.Env = e.Launcher
	cmd.ExtraFiles = []*os.File{leak, leak, leak}
	out, err = cmd.Output()
	must(t, err)
	var rc receipt
	must(t, json.Unmarshal(out, &rc))
	e.run("wait", "--timeout", "60s", rc.ID)
	b, err := os.ReadFile(log)
	must(t, err)
	var rep childReport
	must(t, json.Unmarshal(b, &rep))
	if fmt.Sprint(rep.FDs) != want {
		t.Errorf("detached worker has descriptors %v, want %s", rep.FDs, want)
	}
}

// Under `strace -f` the kernel refuses to trace the held target a second time (PTRACE_TRACEME gives
// EPERM): the launch falls back to the init stub and the target is still placed before it runs.
func TestHeldLaunchUnderStrace(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (apt-get install strace)")
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"-f", "-o", "/dev/null", hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b",
		"--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "100", "--", selfBin, "child", "report"}
	cmd := exec.CommandContext(ctx, strace, args...)
	cmd.Env = e.Launcher
	r := runResult(t, cmd)
	if r.Code != 0 {
		t.Fatalf("strace -f hlaunch exec: exit %d\nstderr: %s", r.Code, r.Stderr)
	}
	var rep childReport
	must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	var v2, pids string
	for _, line := range rep.Cgroup {
		parts := strings.SplitN(line, ":", 3)
		switch parts[1] {
		case "":
			v2 = parts[2]
		case "pids":
			pids = parts[2]
		}
	}
	// --pids puts the worker into the v1 pids hierarchy where the host has one (hybrid), else the limit is
	// the v2 tree's own.
	wantPids := ""
	if _, err := os.Stat("/sys/fs/cgroup/pids/cgroup.procs"); err == nil {
		wantPids = v2
	}
	if !strings.HasPrefix(v2, "/"+e.Parent+"/w-") || pids != wantPids {
		t.Fatalf("first cgroup read: v2 %q, pids %q; want the same worker cgroup under %s", v2, pids, e.Parent)
	}
}

// waitCgroupEmpty waits until the cgroup rel (relative to the v2 mount v2) has no member in any hierarchy
// it has a directory in: cgroup.events says "populated 0" in v2, and every v1 directory's cgroup.procs
// is empty. A process whose leader has exited while its other threads are still exiting is a member yet.
func waitCgroupEmpty(t *testing.T, v2, rel string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", rel))
	dirs = append(dirs, filepath.Join(v2, rel))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		busy := ""
		for _, d := range dirs {
			if b, err := os.ReadFile(filepath.Join(d, "cgroup.events")); err == nil {
				if strings.Contains(string(b), "populated 1") {
					busy = d
				}
			} else if b, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				busy = d
			}
		}
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cgroup %s still has members after 10 s", busy)
		}
	}
}
