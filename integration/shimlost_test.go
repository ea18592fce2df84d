package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"

	"golang.org/x/sys/unix"
)

// lostRecord is the part of a worker's record the lost-shim tests read.
type lostRecord struct {
	receipt
	Reason    string `json:"reason"`
	ShimLost  bool   `json:"shim_lost"`
	Deadline  int64  `json:"deadline_boottime_ns"`
	Grace     int64  `json:"grace_ns"`
	ShimStart uint64 `json:"shim_start"`
}

// shimKillerArgv is the red team's worker: it writes its PID to dir/pid, waits for dir/go when
// afterReceipt (the test writes it once it holds the receipt, so the kill comes after the receipt by
// construction), SIGKILLs its parent - its shim, of the launcher's uid - and runs on far past any deadline.
func shimKillerArgv(dir string, afterReceipt bool) []string {
	wait := ""
	if afterReceipt {
		wait = `while [ ! -e "$1/go" ]; do sleep 0.02; done; `
	}
	return []string{"sh", "-c", `echo $$ > "$1/pid"; ` + wait + `kill -9 $PPID; exec sleep 120`, "sh", dir}
}

// boottimeNS is CLOCK_BOOTTIME now, the clock a record's deadline is on.
func boottimeNS(t *testing.T) int64 {
	var ts unix.Timespec
	must(t, unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts))
	return ts.Nano()
}

// waitPIDGone waits, up to 30 s (far past every deadline here), for pid to be gone, asking nothing of
// hlaunch meanwhile: what ends it must be what runs on its own (a sidecar, the manager).
func waitPIDGone(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the worker (pid %d) killed its shim and outlived its deadline by 30 s", what, pid)
		}
	}
}

// shimKilled is the setup of every case whose worker kills its shim after the receipt: launch starts argv
// (shimKillerArgv(dir, true)) and returns its receipt; the worker is then let kill its shim, and once the
// shim is gone shimKilled returns the receipt and the worker's PID. Each case asserts its own end.
func shimKilled(t *testing.T, launch func(argv []string) lostRecord) (lostRecord, int) {
	t.Helper()
	dir := t.TempDir()
	rc := launch(shimKillerArgv(dir, true))
	if rc.ShimPID <= 0 || rc.Deadline <= 0 || rc.Grace <= 0 {
		t.Errorf("receipt: shim_pid %d deadline_boottime_ns %d grace_ns %d: want the shim and the deadline recorded", rc.ShimPID, rc.Deadline, rc.Grace)
	}
	must(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	pid := readPID(t, filepath.Join(dir, "pid"))
	for deadline := time.Now().Add(15 * time.Second); alive(rc.ShimPID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not kill its shim %d", rc.ShimPID)
		}
	}
	return rc, pid
}

// cliLaunch is a launch for shimKilled through the CLI: `hlaunch <args> -- argv` by run (e.run, or a
// manager's e.sd), which must succeed; it returns the receipt.
func cliLaunch(t *testing.T, run func(args ...string) result, args ...string) func(argv []string) lostRecord {
	return func(argv []string) lostRecord {
		t.Helper()
		r := run(append(append(slices.Clone(args), "--"), argv...)...)
		if r.Code != 0 {
			t.Fatalf("exec: exit %d %s", r.Code, r.Stderr)
		}
		var rc lostRecord
		must(t, json.Unmarshal([]byte(r.Stdout), &rc))
		return rc
	}
}

// sidecarLaunch is a launch for shimKilled through the sidecar p, with a 5 s deadline and 500 ms grace.
// Every case's worker must kill (or stop) its shim before its deadline, once the test has said go: under
// TCG (the guest lane) that start, the go and the kill take seconds, and a deadline that comes first is
// enforced by the shim itself, which the case does not test (TestRedteam2ForeignReaderOfLostShim's 1 s
// deadline failed so).
func sidecarLaunch(p *scProc) func(argv []string) lostRecord {
	return func(argv []string) lostRecord {
		spec, _ := json.Marshal(map[string]any{"profile": "b", "argv": argv, "timeout": "5s", "grace": "500ms"})
		var rc lostRecord
		p.mustDo("POST", "/v1/workers", string(spec), 201, &rc)
		return rc
	}
}

// checkLostEnd checks the final record of a worker that killed its shim: exited, the end recorded by
// hlaunch with reason shim-lost, and nothing of it left running.
// finalRecord is worker id's record once its end has settled, as the sidecar's wait answers it. The
// worker's PID reads as gone (waitPIDGone) while it is a zombie whose parent, the shim it stopped or
// killed, is still being ended: its cgroup has members for that moment, and a plain read says running.
func (p *scProc) finalRecord(id string) lostRecord {
	p.t.Helper()
	var rec lostRecord
	p.mustDo("GET", "/v1/workers/"+id+"/wait?timeout=30s", "", 200, &rec)
	return rec
}

// finalRecord is worker id's record once its end has settled, as `hlaunch wait --json` answers it (the
// sidecar's finalRecord says why a plain read is not).
func (e *env) finalRecord(t *testing.T, id string) lostRecord {
	t.Helper()
	var rec lostRecord
	s := e.run("wait", "--json", "--timeout", "30s", id)
	if err := json.Unmarshal([]byte(s.Stdout), &rec); err != nil {
		t.Fatalf("wait %s: exit %d, %v: %q %s", id, s.Code, err, s.Stdout, s.Stderr)
	}
	return rec
}

func checkLostEnd(t *testing.T, rec lostRecord, pid int) {
	t.Helper()
	if rec.State != "exited" || !rec.ShimLost || !strings.HasPrefix(rec.Reason, "shim-lost") || rec.EndedAt == "" {
		t.Errorf("final record: state %q shim_lost %v reason %q ended_at %q, want exited, shim_lost, reason shim-lost..., its end",
			rec.State, rec.ShimLost, rec.Reason, rec.EndedAt)
	}
	if alive(pid) {
		t.Errorf("worker %d still runs after its final record", pid)
	}
}

// A detached, unsandboxed worker kills its shim (its parent, of the launcher's uid: every unsandboxed
// worker of the shim's uid can, here root's worker of a root-owned home) and runs on past its --timeout. What holds (docs/security.md, "Known limits";
// docs/identity.md, "A worker whose shim is gone"): the record holds the deadline, and whatever of
// hlaunch's reads it enforces it - a CLI call (status before the deadline says running with shim_lost;
// past it, it ends the tree), the sidecar's watcher with nothing asked of it, and in systemd mode the
// manager (RuntimeMaxSec=) with nothing of hlaunch's running at all. Killed before the receipt, the
// launch fails and the cgroup is killed, or the launch answered first and the same holds: either order
// ends the worker. Without a recorded and enforced deadline every "after receipt" case would run on for
// the whole 120 s with status saying running.
func TestRedteamWorkerKillsItsShim(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	// cgroupExec is a detached launch into a raw cgroup of e's parent with a 5 s deadline (sidecarLaunch
	// says why), 500 ms grace.
	cgroupExec := func(e *env, more ...string) []string {
		return append([]string{"exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--timeout", "5s", "--grace", "500ms"}, more...)
	}
	t.Run("cli cgroup at once", func(t *testing.T) {
		e := rootHomeEnv(t)
		dir := t.TempDir()
		r := e.run(append(append(cgroupExec(e), "--"), shimKillerArgv(dir, false)...)...)
		pid := readPID(t, filepath.Join(dir, "pid"))
		if r.Code == 0 {
			// The receipt won the race: the worker is recorded, and the next hlaunch call ends it.
			var rc lostRecord
			must(t, json.Unmarshal([]byte(r.Stdout), &rc))
			if w := e.run("wait", "--timeout", "30s", "--json", rc.ID); w.Code == 124 {
				t.Fatalf("wait: the worker outlived its deadline by 30 s: %s", w.Stdout)
			}
		}
		waitPIDGone(t, pid, fmt.Sprintf("launch exit %d %s", r.Code, r.Stderr))
	})
	t.Run("cli cgroup after receipt", func(t *testing.T) {
		e := rootHomeEnv(t)
		v2 := requireCgroup2(t)
		rc, pid := shimKilled(t, cliLaunch(t, e.run, cgroupExec(e)...))
		// Nothing of hlaunch's runs now: each status call is the reader. Before the deadline it says
		// running, shim lost; the first one past it ends the tree.
		var rec lostRecord
		sawRunning := false
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			before := boottimeNS(t) < rc.Deadline
			if rec = e.statusOf(t, rc.ID); rec.State != "running" {
				break
			}
			if !rec.ShimLost || !strings.HasPrefix(rec.Reason, "shim-lost") {
				t.Fatalf("status of a running worker whose shim is gone: shim_lost %v reason %q", rec.ShimLost, rec.Reason)
			}
			if !before {
				t.Fatalf("status past the deadline says running: %+v", rec)
			}
			sawRunning = true
			if time.Now().After(deadline) {
				t.Fatal("still running 30 s on")
			}
		}
		checkLostEnd(t, rec, pid)
		if !sawRunning || !rec.TimedOut || rec.Signal == "" {
			t.Errorf("saw running %v, timed_out %v signal %q: want status running before the deadline, then timed out by a signal", sawRunning, rec.TimedOut, rec.Signal)
		}
		if _, err := os.Stat(filepath.Join(v2, rc.Cgroup)); !os.IsNotExist(err) {
			t.Errorf("worker cgroup %s left behind (%v)", rc.Cgroup, err)
		}
	})
	t.Run("cli cgroup wait", func(t *testing.T) {
		e := rootHomeEnv(t)
		rc, pid := shimKilled(t, cliLaunch(t, e.run, cgroupExec(e)...))
		// wait is the reader that outlives the deadline: it enforces it itself.
		w := e.run("wait", "--timeout", "30s", "--json", rc.ID)
		var rec lostRecord
		must(t, json.Unmarshal([]byte(w.Stdout), &rec))
		checkLostEnd(t, rec, pid)
		if !rec.TimedOut {
			t.Errorf("wait's record: timed_out false")
		}
	})
	t.Run("sidecar cgroup", func(t *testing.T) {
		e := rootHomeEnv(t)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
		sidecarShimKill(t, p)
	})
	t.Run("sandboxed worker cannot reach its shim", func(t *testing.T) {
		e := rootHomeEnv(t)
		// uid 0 without capabilities inside needs the home searchable and a directory it may write.
		home := filepath.Join(e.Root, "profiles", "b")
		must(t, os.Chmod(home, 0o755))
		xchg := filepath.Join(home, "xchg")
		must(t, os.Mkdir(xchg, 0o777))
		must(t, os.Chmod(xchg, 0o777))
		// Host uid 0 inside (--as 0:0), so that only the sandbox (its pid namespace) stands between the
		// worker and the shim: it is handed the shim's host PID and kills it.
		rc := cliLaunch(t, e.run, cgroupExec(e, "--sandbox", "--as", "0:0")...)([]string{
			"sh", "-c", `while [ ! -e "$1/go" ]; do sleep 0.02; done; kill -9 "$(cat "$1/go")"; echo $? > "$1/killed"; exec sleep 120`, "sh", xchg})
		must(t, os.WriteFile(filepath.Join(xchg, "go"), []byte(strconv.Itoa(rc.ShimPID)), 0o644))
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(xchg, "killed")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sandboxed worker never tried")
			}
		}
		if b, _ := os.ReadFile(filepath.Join(xchg, "killed")); strings.TrimSpace(string(b)) == "0" || !alive(rc.ShimPID) {
			t.Fatalf("the sandboxed worker killed its shim %d (kill said %q)", rc.ShimPID, b)
		}
		w := e.run("wait", "--timeout", "30s", "--json", rc.ID)
		var rec lostRecord
		must(t, json.Unmarshal([]byte(w.Stdout), &rec))
		if rec.State != "exited" || !rec.TimedOut || rec.ShimLost {
			t.Errorf("final record: state %q timed_out %v shim_lost %v: want ended at its deadline by its own shim", rec.State, rec.TimedOut, rec.ShimLost)
		}
	})
}

// sidecarShimKill spawns the shim killer through p and waits, asking the sidecar nothing, for its watcher
// to end the worker at the deadline; the record then says shim-lost.
func sidecarShimKill(t *testing.T, p *scProc) {
	t.Helper()
	rc, pid := shimKilled(t, sidecarLaunch(p))
	waitPIDGone(t, pid, "sidecar")
	checkLostEnd(t, p.finalRecord(rc.ID), pid)
}

// In systemd mode the manager is the backstop: with nothing of hlaunch's running after the launch (the
// CLI), the scope's RuntimeMaxSec= ends the worker whose shim it killed; the next read records the end.
// Through a sidecar on the same manager, the sidecar's watcher or the manager, whichever comes first.
func TestRedteamWorkerKillsItsShimSystemd(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := rootHomeEnv(t)
	launch := func(args ...string) result {
		r := e.sd(m, args...)
		if r.Code != 0 {
			t.Logf("the manager's log:\n%s", m.Log())
		}
		return r
	}
	rc, pid := shimKilled(t, cliLaunch(t, launch, "exec", "-p", "b", "--detach", "--scope", "systemd", "--user", "--timeout", "5s", "--grace", "500ms"))
	waitPIDGone(t, pid, "systemd, nothing of hlaunch's running")
	var rec lostRecord
	must(t, json.Unmarshal([]byte(e.sd(m, "status", "--json", rc.ID).Stdout), &rec))
	checkLostEnd(t, rec, pid)
	t.Run("sidecar", func(t *testing.T) {
		p := startScopeSidecar(t, m, e.with(t))
		p.waitReady()
		sidecarShimKill(t, p)
	})
}
