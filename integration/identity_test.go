package integration

import (
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

	"github.com/hlaunch/hlaunch/internal/fingerprint"
)

// startStranger starts an unrelated process that must never be signalled by hlaunch.
func startStranger(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// forged re-encodes a real worker's token with one fact changed, as a token from another boot, another
// machine, or a failed capture would carry.
func forged(t *testing.T, token string, change func(*fingerprint.Identity)) string {
	t.Helper()
	id, err := fingerprint.ParseToken(token)
	must(t, err)
	change(&id)
	return id.Token()
}

// The same PID, start time and cgroup under another boot id or machine id is foreign; an unverified
// identity is never signalled. Zero signals reach the worker in every case.
func TestIdentityRefusesForeignAndUnverified(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, selfBin, "child", "trap")
	cases := []struct {
		name  string
		token string
		state string
		code  int
	}{
		{"other boot", forged(t, rc.Token, func(i *fingerprint.Identity) { i.BootID = "00000000-0000-0000-0000-000000000000" }), "foreign-boot", 3},
		{"other machine", forged(t, rc.Token, func(i *fingerprint.Identity) { i.MachineID = strings.Repeat("0", 32) }), "foreign-machine", 3},
		{"unverified", forged(t, rc.Token, func(i *fingerprint.Identity) { i.Unverified, i.Reason = true, "boot id unreadable" }), "unverified", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			rec, r := e.record(c.token)
			if rec.State != c.state || r.Code != c.code {
				t.Fatalf("status: state %q exit %d, want %q %d", rec.State, r.Code, c.state, c.code)
			}
			for _, args := range [][]string{{"stop", "--grace", "100ms", c.token}, {"signal", "-s", "KILL", c.token}, {"signal", "--all", "-s", "KILL", c.token}} {
				r := e.run(args...)
				if r.Code != c.code || len(strings.Split(strings.TrimSpace(r.Stderr), "\n")) != 1 {
					t.Errorf("%v: exit %d stderr %q, want %d and one line", args, r.Code, r.Stderr, c.code)
				}
			}
			if !alive(rc.PID) {
				t.Fatal("a refused command reached the worker")
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		tampered := rc.Token[:len(rc.Token)-3] + "AAA"
		if r := e.with(t).run("status", tampered); r.Code != 125 {
			t.Fatalf("tampered token: exit %d", r.Code)
		}
	})
	// With the real identity the signal is delivered and wait reports the real exit status.
	if r := e.run("signal", "-s", "TERM", rc.ID); r.Code != 0 {
		t.Fatalf("signal: %d %s", r.Code, r.Stderr)
	}
	r := e.run("wait", "--json", "--timeout", "60s", rc.ID)
	var rec receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rec))
	if rec.ExitCode == nil || *rec.ExitCode != 42 {
		t.Fatalf("wait: %s", r.Stdout)
	}
}

// A worker cgroup removed and re-created at the same path is another cgroup: recycled, never signalled.
func TestIdentityRecreatedCgroupIsRecycled(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, selfBin, "child", "exit", "3")
	e.run("wait", "--timeout", "60s", rc.ID)
	dir := filepath.Join(v2, rc.Cgroup)
	for i := 0; i < 100; i++ {
		if err := syscall.Rmdir(dir); err == nil || os.IsNotExist(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, os.Mkdir(dir, 0o755))
	stranger := startStranger(t)
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(stranger.Process.Pid)), 0))
	rec, r := e.record(rc.ID)
	if rec.State != "recycled" || r.Code != 3 {
		t.Fatalf("status: %q exit %d (%s)", rec.State, r.Code, r.Stderr)
	}
	if r := e.run("stop", "--grace", "100ms", rc.ID); r.Code != 3 {
		t.Fatalf("stop: exit %d %s", r.Code, r.Stderr)
	}
	if r := e.run("signal", "--all", "-s", "KILL", rc.ID); r.Code != 3 {
		t.Fatalf("signal --all: exit %d %s", r.Code, r.Stderr)
	}
	if !alive(stranger.Process.Pid) {
		t.Fatal("the stranger in the re-created cgroup was signalled")
	}
	_ = stranger.Process.Kill()
	_ = stranger.Wait()
}

// A real recycled PID: in a fresh PID namespace, the worker dies and an unrelated process is forced onto
// its PID with ns_last_pid. status says recycled, stop refuses, the stranger lives.
func TestIdentityRealRecycledPID(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", selfBin, "child", "recycle", hlaunchBin, e.Root, e.State, e.Parent, selfBin)
	cmd.Env = e.Launcher
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("recycle scenario: %v\n%s\n%s", err, out, stderr)
	}
	var res recycleResult
	must(t, json.Unmarshal(out, &res))
	if res.StrangerPID != res.WorkerPID {
		t.Fatalf("could not force the PID: worker %d, stranger %d", res.WorkerPID, res.StrangerPID)
	}
	if res.State != "recycled" || res.StatusCode != 3 {
		t.Errorf("status: %q exit %d", res.State, res.StatusCode)
	}
	if res.StopCode != 3 || res.SignalCode != 3 {
		t.Errorf("stop exit %d, signal exit %d, want 3", res.StopCode, res.SignalCode)
	}
	if !res.StrangerAlive {
		t.Error("the stranger with the recycled PID was signalled")
	}
}

type recycleResult struct {
	WorkerPID, StrangerPID           int
	State                            string
	StatusCode, StopCode, SignalCode int
	StrangerAlive                    bool
	Log                              string
}

// recycleMain runs inside the fresh PID namespace (as `child recycle HLAUNCH ROOT STATE PARENT SELF`).
func recycleMain(args []string) int {
	hl, root, stateDir, parent, self := args[0], args[1], args[2], args[3], args[4]
	var res recycleResult
	run := func(a ...string) (string, int) {
		cmd := exec.Command(hl, append([]string{"--root", root, "--state-dir", stateDir}, a...)...)
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
			res.Log += string(ee.Stderr)
		}
		return string(out), code
	}
	out, code := run("exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", parent, "--", self, "child", "exit", "0")
	var rc receipt
	if code != 0 || json.Unmarshal([]byte(out), &rc) != nil {
		fmt.Fprintf(os.Stderr, "detach: %d %s %s\n", code, out, res.Log)
		return 1
	}
	res.WorkerPID = rc.PID
	run("wait", "--timeout", "60s", rc.ID)
	// Force the next PID in this namespace to be the dead worker's.
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(rc.PID-1)), 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stranger := exec.Command("sleep", "300")
	if err := stranger.Start(); err != nil {
		return 1
	}
	defer func() { _ = stranger.Process.Kill(); _ = stranger.Wait() }()
	res.StrangerPID = stranger.Process.Pid
	out, res.StatusCode = run("status", "--json", rc.ID)
	var rec receipt
	_ = json.Unmarshal([]byte(out), &rec)
	res.State = rec.State
	_, res.StopCode = run("stop", "--grace", "100ms", rc.ID)
	_, res.SignalCode = run("signal", "-s", "KILL", rc.ID)
	res.StrangerAlive = alive(stranger.Process.Pid)
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// The gateway's old rows: a PID and its hermes fingerprint get the same rules.
func TestIdentityLegacyHermesRows(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, selfBin, "child", "trap")
	pid := strconv.Itoa(rc.PID)
	otherBoot := "00000000-0000-0000-0000-000000000000:1|" + strconv.FormatUint(rc.StartTime, 10)
	for _, c := range []struct {
		fp   string
		code int
	}{
		{rc.Finger, 0}, {otherBoot, 3}, {"unverified", 4}, {"", 4},
	} {
		if r := e.run("status", "--pid", pid, "--fingerprint", c.fp); r.Code != c.code {
			t.Errorf("status --fingerprint %q: exit %d, want %d (%s)", c.fp, r.Code, c.code, r.Stderr)
		}
		if c.code != 0 {
			if r := e.run("signal", "--pid", pid, "--fingerprint", c.fp, "-s", "KILL"); r.Code != c.code {
				t.Errorf("signal --fingerprint %q: exit %d, want %d", c.fp, r.Code, c.code)
			}
			if r := e.run("stop", "--grace", "100ms", "--pid", pid, "--fingerprint", c.fp); r.Code != c.code {
				t.Errorf("stop --fingerprint %q: exit %d, want %d", c.fp, r.Code, c.code)
			}
		}
	}
	if !alive(rc.PID) {
		t.Fatal("a refused legacy row was signalled")
	}
	if r := e.run("signal", "--pid", pid, "--fingerprint", rc.Finger, "-s", "USR1"); r.Code != 0 {
		t.Fatalf("matching legacy row: exit %d %s", r.Code, r.Stderr)
	}
	if r := e.run("stop", "--grace", "2s", "--pid", pid, "--fingerprint", rc.Finger); r.Code != 0 || alive(rc.PID) {
		t.Fatalf("legacy stop: exit %d %s (alive %v)", r.Code, r.Stderr, alive(rc.PID))
	}
}

// A detached worker gets default signal dispositions: a plain SIGTERM ends a plain sleep, and the record
// says so (nothing of the shim's own handling leaks into the worker).
func TestDetachedWorkerHearsSIGTERM(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	for _, scope := range []string{"none", "cgroup"} {
		rc := e.detach([]string{"--scope", scope, "--cgroup-parent", e.Parent}, "sleep", "300")
		if r := e.run("signal", "-s", "TERM", rc.ID); r.Code != 0 {
			t.Fatalf("%s: signal: %d %s", scope, r.Code, r.Stderr)
		}
		r := e.run("wait", "--json", "--timeout", "60s", rc.ID)
		var rec receipt
		must(t, json.Unmarshal([]byte(r.Stdout), &rec))
		if rec.Signal != "SIGTERM" {
			t.Fatalf("%s: after SIGTERM the record says signal %q exit %v (stdout %s)", scope, rec.Signal, rec.ExitCode, r.Stdout)
		}
	}
}
