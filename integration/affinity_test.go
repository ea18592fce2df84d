package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/affinity"
)

// A launch keeps hlaunch's own threads on one CPU (internal/affinity, ADR 0006), but every child starts
// with the CPUs hlaunch was started with: the target started directly, held at its exec (v1 joins), through
// the init stub (sandbox) and through the shim (detached), and a set narrower than the machine's stays as
// narrow.
func TestExecChildStartsWithLaunchersCPUs(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	own, err := affinity.Current()
	must(t, err)
	all := own.String()
	// launch runs hlaunch from a thread whose CPU set is cpus, the way a caller's set reaches it.
	launch := func(cpus string, args ...string) []byte {
		t.Helper()
		set, err := affinity.Parse(cpus)
		must(t, err)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		must(t, set.ApplyToThread())
		defer func() { must(t, own.ApplyToThread()) }()
		cmd := exec.Command(hlaunchBin, append([]string{"--root", e.Root, "--state-dir", e.State}, args...)...)
		cmd.Env = e.Launcher
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hlaunch %v: %v", args, err)
		}
		return out
	}
	report := func(cpus string, flags ...string) childReport {
		t.Helper()
		args := append(append([]string{"exec", "-p", "b"}, flags...), "--", selfBin, "child", "report", "cpus:ppid")
		var rep childReport
		must(t, json.Unmarshal(launch(cpus, args...), &rep))
		return rep
	}
	cg := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent}
	held := append([]string{"--pids", "100"}, cg...) // held at its exec until the v1 join
	for _, flags := range [][]string{{"--scope", "none"}, cg, held, append([]string{"--sandbox"}, cg...), {"--sandbox", "--scope", "none"}} {
		rep := report(all, flags...)
		if got := rep.Status["Cpus_allowed_list"]; got != all {
			t.Errorf("%v: child allowed CPUs %q, want hlaunch's own %q", flags, got, all)
		}
		if flags[0] == "--sandbox" || own.Count() < 2 {
			continue // the parent is the sandbox's init; one CPU cannot show a pin
		}
		// The parent is hlaunch: every thread but the one that forked is on one CPU.
		threads := strings.Fields(strings.TrimPrefix(rep.Checks["cpus:ppid"], "ok:"))
		pinned := 0
		for _, l := range threads {
			if !strings.ContainsAny(l, ",-") {
				pinned++
			}
		}
		if len(threads) < 2 || pinned < len(threads)-1 {
			t.Errorf("%v: hlaunch's threads are allowed %v, want all but the forking one on one CPU", flags, threads)
		}
	}
	// A narrower set than the machine's (the last CPU of ours) is what the child gets, not widened.
	narrow := all[strings.LastIndexAny(all, ",-")+1:]
	for _, flags := range [][]string{cg, held, append([]string{"--sandbox"}, cg...)} {
		if got := report(narrow, flags...).Status["Cpus_allowed_list"]; got != narrow {
			t.Errorf("%v under CPU set %s: child allowed CPUs %q", flags, narrow, got)
		}
	}
	// Detached: the shim starts the worker, which reports into its log.
	log := filepath.Join(t.TempDir(), "w.log")
	var rc receipt
	must(t, json.Unmarshal(launch(all, append(append([]string{"exec", "-p", "b", "--detach", "--log", log}, cg...),
		"--", selfBin, "child", "report")...), &rc))
	e.run("wait", "--timeout", "60s", rc.ID)
	b, err := os.ReadFile(log)
	must(t, err)
	var rep childReport
	must(t, json.Unmarshal(b, &rep))
	if got := rep.Status["Cpus_allowed_list"]; got != all {
		t.Errorf("detached worker allowed CPUs %q, want %q", got, all)
	}
}

// Through the sidecar, which is not pinned, each worker's shim starts on one CPU (a Go start is cheaper
// there) and the worker, sandboxed or not, gets the sidecar's CPUs; once the worker runs, the shim, which
// lives as long as the worker, is back on the sidecar's CPUs too, and the sidecar's own threads never
// left them.
func TestSidecarWorkersGetTheSidecarsCPUs(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	own, err := affinity.Current()
	must(t, err)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	for _, sandbox := range []bool{false, true} {
		spec, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": sandbox,
			"argv": []string{selfBin, "child", "report"}})
		var rc receipt
		p.mustDo("POST", "/v1/workers", string(spec), 201, &rc)
		rep := reportOf(t, p, rc)
		if got := rep.Status["Cpus_allowed_list"]; got != own.String() {
			t.Errorf("sandbox %v: worker allowed CPUs %q, want the sidecar's %q", sandbox, got, own)
		}
	}
	// Workers that keep running: their shim, and a sandbox's init (the leader), end up on the sidecar's
	// CPUs, every thread of them.
	var rc, sb receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", selfBin, "child", "sleep", "30s"), 201, &rc)
	t.Cleanup(func() { p.do("POST", "/v1/workers/"+rc.ID+"/stop", `{"grace":"0s"}`) })
	p.mustDo("POST", "/v1/workers", `{"profile":"b","sandbox":true,"argv":["sleep","30"]}`, 201, &sb)
	t.Cleanup(func() { p.do("POST", "/v1/workers/"+sb.ID+"/stop", `{"grace":"0s"}`) })
	for what, pid := range map[string]int{"shim": rc.ShimPID, "sandbox init": sb.PID} {
		deadline := time.Now().Add(30 * time.Second) // the guest lane's whole test took 4 s under TCG
		for {
			lists := threadCPUs(pid)
			if allEqual(lists, own.String()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the %s's threads are allowed %v, want %q each once the worker runs", what, lists, own)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if lists := threadCPUs(p.cmd.Process.Pid); !allEqual(lists, own.String()) {
		t.Errorf("the sidecar's threads are allowed %v, want %q each", lists, own)
	}
}

func allEqual(lists []string, want string) bool {
	for _, l := range lists {
		if l != want {
			return false
		}
	}
	return len(lists) > 0
}
