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

// treeRecord is the part of a worker's final record the lifetime tests read.
type treeRecord struct {
	receipt
	EndedAt       string `json:"ended_at"`
	LeaderEndedAt string `json:"leader_ended_at"`
}

// deadlineArgv is a leader that leaves a child behind and exits at once. The child
// writes its PID to pidFile so the test can look for it afterwards.
func deadlineArgv(pidFile string) []string {
	return []string{"sh", "-c", `sleep 25 & echo $! > "$0"; exit 0`, pidFile}
}

// readPID waits for the leftover child's PID file.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && n > 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s: %v %q", path, err, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkDeadlineRecord checks a worker's final record after its deadline: it timed out, the leader's own
// exit (0, long before the deadline) and the tree's end are recorded separately, and the child the leader
// left behind is gone.
func checkDeadlineRecord(t *testing.T, rec treeRecord, child int) {
	t.Helper()
	if rec.State != "exited" || !rec.TimedOut {
		t.Errorf("record after the deadline: state %q timed_out %v, want exited and timed out", rec.State, rec.TimedOut)
	}
	if rec.ExitCode == nil || *rec.ExitCode != 0 || rec.Signal != "" {
		t.Errorf("leader's status: exit %v signal %q, want its own exit 0", rec.ExitCode, rec.Signal)
	}
	if rec.LeaderEndedAt == "" || rec.EndedAt == "" || rec.LeaderEndedAt >= rec.EndedAt {
		t.Errorf("leader ended %q, worker ended %q: want both, the leader first", rec.LeaderEndedAt, rec.EndedAt)
	}
	if alive(child) {
		t.Errorf("the leader's child %d still runs after the deadline and the grace", child)
	}
}

// A detached worker is its whole tree: `--timeout 2s -- sh -c 'sleep 25 & exit 0'` ends the sleep at the
// deadline plus the grace, the record says so, and the worker's cgroup is removed (through the CLI, raw
// cgroups). The shim must not exit with the leader, which would leave the sleep running and status
// saying running.
func TestDeadlineEndsWholeTreeCLI(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := rootHomeEnv(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--timeout", "2s", "--grace", "500ms"}, deadlineArgv(pidFile)...)
	child := readPID(t, pidFile)
	if r := e.run("wait", "--timeout", "15s", "--json", rc.ID); r.Code != 0 {
		t.Fatalf("wait: exit %d %s %s (the tree outlived its deadline)", r.Code, r.Stdout, r.Stderr)
	}
	var rec treeRecord
	r := e.run("status", "--json", rc.ID)
	must(t, json.Unmarshal([]byte(r.Stdout), &rec))
	checkDeadlineRecord(t, rec, child)
	if r.Code != 1 {
		t.Errorf("status after the end: exit %d, want 1", r.Code)
	}
	// The shim removes the worker's cgroup once it has recorded the end.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(v2, rc.Cgroup)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker cgroup %s left behind", rc.Cgroup)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The same through the sidecar, whose every spawn is detached: a cron job's children end at its deadline.
func TestDeadlineEndsWholeTreeSidecar(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := rootHomeEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	sidecarDeadline(t, p)
}

func sidecarDeadline(t *testing.T, p *scProc) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	spec, _ := json.Marshal(map[string]any{"profile": "b", "argv": deadlineArgv(pidFile), "timeout": "2s", "grace": "500ms"})
	var rc receipt
	p.mustDo("POST", "/v1/workers", string(spec), 201, &rc)
	child := readPID(t, pidFile)
	var rec treeRecord
	p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=15s", "", 200, &rec)
	checkDeadlineRecord(t, rec, child)
}

// In systemd mode (the scope of a real user manager), through the CLI and the sidecar: the same, and the
// scope is collected once the shim has recorded the end.
func TestDeadlineEndsWholeTreeSystemd(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := rootHomeEnv(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	args := append([]string{"exec", "-p", "b", "--detach", "--scope", "systemd", "--user", "--timeout", "2s", "--grace", "500ms", "--"}, deadlineArgv(pidFile)...)
	r := e.sd(m, args...)
	if r.Code != 0 {
		t.Fatalf("exec: %d %s\n%s", r.Code, r.Stderr, m.Log())
	}
	var rc receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rc))
	child := readPID(t, pidFile)
	if r := e.sd(m, "wait", "--timeout", "15s", rc.ID); r.Code != 0 {
		t.Fatalf("wait: exit %d %s %s (the tree outlived its deadline)", r.Code, r.Stdout, r.Stderr)
	}
	var rec treeRecord
	must(t, json.Unmarshal([]byte(e.sd(m, "status", "--json", rc.ID).Stdout), &rec))
	checkDeadlineRecord(t, rec, child)
	t.Run("sidecar", func(t *testing.T) {
		p := startScopeSidecar(t, m, e.with(t))
		p.waitReady()
		sidecarDeadline(t, p)
	})
}
