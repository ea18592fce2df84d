package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitLeaderGone waits until a worker's leader PID has exited (its tree may live on).
func waitLeaderGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("leader %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A signal for the leader of a worker whose leader exited while its tree lives has one documented answer:
// exit 1 / leader_exited / 409 from the CLI and the sidecar (before: 125 internal, 500); --all reaches the
// tree.
func TestSignalToLeaderExitedWorker(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, "sh", "-c", "sleep 60 & exit 0")
	waitLeaderGone(t, rc.PID)
	if st, _ := e.record(rc.ID); st.State != "running" {
		t.Fatalf("state %q with the tree alive, want running", st.State)
	}
	r := e.run("signal", rc.ID)
	if r.Code != 1 || !strings.Contains(r.Stderr, "--all") {
		t.Errorf("signal: exit %d %q, want 1 naming --all", r.Code, r.Stderr)
	}
	if r := e.run("--json", "signal", rc.ID); r.Code != 1 || scErrCode([]byte(r.Stdout)) != "leader_exited" {
		t.Errorf("signal --json: exit %d %q, want 1 leader_exited", r.Code, r.Stdout)
	}
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	if st, b := p.do("POST", "/v1/workers/"+rc.ID+"/signal", `{"signal":"TERM"}`); st != 409 || scErrCode(b) != "leader_exited" {
		t.Errorf("sidecar signal: %d %s, want 409 leader_exited", st, b)
	}
	if r := e.run("signal", "--all", "-s", "KILL", rc.ID); r.Code != 0 {
		t.Fatalf("signal --all: exit %d %s", r.Code, r.Stderr)
	}
	if r := e.run("wait", "--timeout", "60s", rc.ID); r.Code != 0 {
		t.Fatalf("wait after --all KILL: %d %s", r.Code, r.Stderr)
	}
}

// stop is idempotent: an ended worker is stopped, exit 0 with its final record, from the CLI (twice) and
// the sidecar (before: exit 1 with no record).
func TestStopEndedWorkerIsIdempotent(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, selfBin, "child", "exit", "3")
	if r := e.run("wait", "--timeout", "60s", rc.ID); r.Code != 0 {
		t.Fatalf("wait: %d %s", r.Code, r.Stderr)
	}
	for i := 0; i < 2; i++ {
		r := e.run("stop", "--json", rc.ID)
		var rec receipt
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rec) != nil || rec.State != "exited" || rec.ExitCode == nil || *rec.ExitCode != 3 {
			t.Fatalf("stop #%d of an ended worker: exit %d %q %q, want 0 with its final record", i+1, r.Code, r.Stdout, r.Stderr)
		}
	}
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	var rec receipt
	p.mustDo("POST", "/v1/workers/"+rc.ID+"/stop", `{}`, 200, &rec)
	if rec.State != "exited" {
		t.Errorf("sidecar stop: state %q", rec.State)
	}
}

// No manager under --scope systemd --require-scope is degraded everywhere: exit 75 and "degraded" from the
// CLI (before: 125 internal), 503 from the sidecar, whose health says what it cannot do (before: "ok").
func TestRequireScopeWithoutManagerIsDegraded(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	// A private runtime directory with no bus in it: no user manager answers, on any host.
	rt := t.TempDir()
	must(t, os.Chmod(rt, 0o700))
	e.Launcher = append(e.Launcher, "XDG_RUNTIME_DIR="+rt)
	r := e.run("--json", "exec", "-p", "b", "--scope", "systemd", "--user", "--require-scope", "--", "true")
	if r.Code != 75 || scErrCode([]byte(r.Stdout)) != "degraded" {
		t.Fatalf("exec: exit %d %q %q, want 75 degraded", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.run("exec", "-p", "b", "--detach", "--scope", "systemd", "--user", "--require-scope", "--", "true"); r.Code != 75 {
		t.Fatalf("exec --detach: exit %d %q, want 75", r.Code, r.Stderr)
	}
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--scope", "systemd", "--user", "--require-scope")
	if st, b := p.do("POST", "/v1/workers", scSpec("b", "true")); st != 503 || scErrCode(b) != "degraded" {
		t.Fatalf("sidecar spawn: %d %s, want 503 degraded", st, b)
	}
	var h struct {
		Status     string `json:"status"`
		SpawnError string `json:"spawn_error"`
	}
	p.mustDo("GET", "/v1/health", "", 200, &h)
	if h.Status != "degraded" || h.SpawnError == "" {
		t.Errorf("health: %+v, want degraded with the spawn error", h)
	}
}

// A foreground deadline exits 124 (as timeout(1)) and says so on stderr and in --json (before: 143, no
// word); an OOM kill says so.
func TestForegroundTimeoutAndOOMSaySo(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--timeout", "300ms", "--grace", "300ms", "--", "sleep", "30")
	if r.Code != 124 || !strings.Contains(r.Stderr, "--timeout") {
		t.Errorf("timeout: exit %d %q, want 124 naming --timeout", r.Code, r.Stderr)
	}
	r = e.run("--json", "exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--timeout", "300ms", "--", "sleep", "30")
	if r.Code != 124 || scErrCode([]byte(r.Stdout)) != "timeout" {
		t.Errorf("timeout --json: exit %d %q, want 124 timeout", r.Code, r.Stdout)
	}
	r = e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--memory", "64M", "--", selfBin, "child", "memhog", "256")
	if r.Code != 137 || !strings.Contains(r.Stderr, "OOM") {
		t.Errorf("OOM: exit %d %q, want 137 naming the OOM killer", r.Code, r.Stderr)
	}
}

// A sidecar's default --net none no longer refuses unsandboxed spawns with a flag the client never sent.
func TestSidecarDefaultNetNoneAllowsUnsandboxed(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--net", "none")
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "true"), 201, &rc)
}

// A failed detached start leaks no descriptor in the sidecar (before: one pipe end per failure).
func TestSidecarFailedStartsLeakNothing(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	fds := func() int {
		ents, err := os.ReadDir(filepathJoinProc(p.cmd.Process.Pid))
		must(t, err)
		return len(ents)
	}
	bad := scSpec("b", "no-such-command-hlaunch")
	if st, b := p.do("POST", "/v1/workers", bad); st != 422 {
		t.Fatalf("bad spawn: %d %s", st, b)
	}
	before := fds()
	for i := 0; i < 20; i++ {
		if st, b := p.do("POST", "/v1/workers", bad); st != 422 {
			t.Fatalf("bad spawn: %d %s", st, b)
		}
	}
	if after := fds(); after > before+2 {
		t.Errorf("sidecar descriptors %d -> %d after 20 failed starts: they leak", before, after)
	}
}

func filepathJoinProc(pid int) string { return filepath.Join("/proc", itoa(pid), "fd") }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The shim's tasks count against a detached worker's --pids: a limit the shim alone would fill is refused,
// naming --pids and what is charged (before: the worker started and its first fork failed, blaming the
// command).
func TestDetachedPidsChargeSaid(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	r := e.run("exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "6", "--", "sh", "-c", "true | true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "--pids") || !strings.Contains(r.Stderr, "shim") {
		t.Fatalf("--pids 6 detached: exit %d %q, want 125 naming --pids and the shim", r.Code, r.Stderr)
	}
}

// With --stdio inherit the receipt is on stdout before any output of the worker: a worker that writes at
// once still comes second (before, the shim started it before the launcher printed the receipt, so its
// output usually came first). A bounded loop of launches.
func TestDetachedInheritReceiptFirst(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	for i := 0; i < 20; i++ {
		out := filepath.Join(t.TempDir(), "out")
		f, err := os.Create(out)
		must(t, err)
		cmd := exec.Command(hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--detach", "--stdio", "inherit",
			"--scope", "cgroup", "--cgroup-parent", e.Parent, "--", "/bin/sh", "-c", "echo worker-output")
		cmd.Env = e.Launcher
		cmd.Stdout, cmd.Stderr = f, f
		err = cmd.Run()
		f.Close()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		var rc receipt
		deadline := time.Now().Add(60 * time.Second) // a lost output only: under TCG a run takes seconds
		for {
			b, _ := os.ReadFile(out)
			if strings.Contains(string(b), "worker-output") {
				if !strings.HasPrefix(string(b), "{") || json.NewDecoder(strings.NewReader(string(b))).Decode(&rc) != nil {
					t.Fatalf("run %d: the worker's output came before the receipt: %q", i, b)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: no worker output: %q", i, b)
			}
			time.Sleep(5 * time.Millisecond)
		}
		e.run("wait", "--timeout", "60s", rc.ID)
	}
}

// A signal without a name (a real-time one) is written one way in every answer: "SIG34" from the CLI's
// --json signal, the sidecar's signal answer and the record of the worker it ended (before: the sidecar
// answered "34", the CLI and the record "SIG34"). Both answers' names are taken back as input.
func TestSignalNameOneForm(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	flags := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent}

	viaCLI := e.detach(flags, "sleep", "60")
	r := e.run("--json", "signal", "-s", "34", viaCLI.ID)
	var cli struct {
		Signal string `json:"signal"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &cli) != nil || cli.Signal != "SIG34" {
		t.Errorf("CLI signal -s 34: exit %d %q %q, want signal SIG34", r.Code, r.Stdout, r.Stderr)
	}

	viaSidecar := e.detach(flags, "sleep", "60")
	var sc struct {
		Signal string `json:"signal"`
	}
	p.mustDo("POST", "/v1/workers/"+viaSidecar.ID+"/signal", `{"signal":"34"}`, 200, &sc)
	if sc.Signal != "SIG34" {
		t.Errorf("sidecar signal 34: answered %q, want SIG34", sc.Signal)
	}

	for _, rc := range []receipt{viaCLI, viaSidecar} {
		if r := e.run("wait", "--timeout", "60s", rc.ID); r.Code != 0 {
			t.Fatalf("wait %s: %d %s", rc.ID, r.Code, r.Stderr)
		}
		if rec, _ := e.record(rc.ID); rec.Signal != "SIG34" {
			t.Errorf("record of %s after signal 34: signal %q, want SIG34", rc.ID, rec.Signal)
		}
	}

	// The form the answers give is accepted back, by both.
	again := e.detach(flags, "sleep", "60")
	if r := e.run("signal", "-s", "SIG35", again.ID); r.Code != 0 {
		t.Errorf("CLI signal -s SIG35: exit %d %s", r.Code, r.Stderr)
	}
	last := e.detach(flags, "sleep", "60")
	if st, b := p.do("POST", "/v1/workers/"+last.ID+"/signal", `{"signal":"SIG35"}`); st != 200 {
		t.Errorf("sidecar signal SIG35: %d %s", st, b)
	}
}
