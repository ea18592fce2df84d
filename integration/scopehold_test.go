package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// scopeProcs lists the PIDs in a scope's cgroup (as the manager names it), read on the host.
func scopeProcs(t *testing.T, m *systemdtest.Manager, cg string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.HostCgroup(cg), "cgroup.procs"))
	if os.IsNotExist(err) {
		return nil // the manager collected the empty scope
	}
	must(t, err)
	return strings.Fields(string(b))
}

// A scope is a worker cgroup hlaunch did not mark. Its worker is still held whole: status reports the
// scope's task count, and the shim's deadline reaches what the leader left behind. A shim or status that
// loaded the scope as a raw cgroup would find no ownership mark and fall back, silently, to the leader
// alone. The deadline is 10 s: the status below must read the worker running, and
// under TCG (the guest lane) the leftover's start and that status take seconds, not the milliseconds here.
func TestScopedWorkerHeldWhole(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	log := filepath.Join(t.TempDir(), "tree.log")
	r := e.sd(m, "exec", "-p", "b", "--detach", "--scope", "systemd", "--user", "--log", log,
		"--timeout", "10s", "--grace", "500ms", "--", "sh", "-c", "sleep 612 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 63")
	if r.Code != 0 {
		t.Fatalf("detach: %d %s\n%s", r.Code, r.Stderr, m.Log())
	}
	var rc receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rc))
	if rc.Mode != "scoped" || !strings.HasSuffix(rc.Cgroup, ".scope") {
		t.Fatalf("receipt: mode %q cgroup %q", rc.Mode, rc.Cgroup)
	}
	// What the leader leaves behind has its PID in the log.
	var leftover int
	for deadline := time.Now().Add(20 * time.Second); leftover == 0; {
		b, _ := os.ReadFile(log)
		leftover, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("the worker never printed its leftover's PID")
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := e.sd(m, "--json", "status", rc.ID)
	var rec receipt
	must(t, json.Unmarshal([]byte(st.Stdout), &rec))
	if st.Code != 0 || rec.State != "running" {
		t.Fatalf("status: %d %s %s", st.Code, st.Stdout, st.Stderr)
	}
	// Shim, leader and leftover: the scope's own count, which only a held cgroup gives.
	if rec.Pids < 3 {
		t.Errorf("status of a scoped worker: pids_current %d, want the scope's task count (>= 3)", rec.Pids)
	}

	w := e.sd(m, "--json", "wait", "--timeout", "60s", rc.ID)
	var end receipt
	must(t, json.Unmarshal([]byte(w.Stdout), &end))
	if !end.TimedOut {
		t.Fatalf("wait: %d %s %s: want a timed-out record", w.Code, w.Stdout, w.Stderr)
	}
	// The shim writes the exit record once the whole tree is gone (or it gave up after the grace).
	procs := scopeProcs(t, m, rc.Cgroup)
	for _, p := range procs {
		if p == strconv.Itoa(leftover) {
			t.Errorf("the deadline left the leftover %d in the scope (members %v)", leftover, procs)
		}
	}
	if alive(leftover) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(leftover) + "/cgroup")
		if strings.Contains(string(b), rc.Cgroup) {
			t.Errorf("leftover %d outlived its worker's deadline in %s", leftover, rc.Cgroup)
		}
	}
}
