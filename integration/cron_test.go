package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
)

// ledgerRecord is the part of a ledger record the tests read.
type ledgerRecord struct {
	ID        string   `json:"id"`
	Key       string   `json:"key"`
	Profile   string   `json:"profile"`
	Argv      []string `json:"argv"`
	StartedAt string   `json:"started_at"`
	EndedAt   string   `json:"ended_at"`
	ExitCode  *int     `json:"exit_code"`
	Signal    string   `json:"signal"`
	TimedOut  bool     `json:"timed_out"`
	OOMKilled bool     `json:"oom_killed"`
	Mode      string   `json:"mode"`
	State     string   `json:"state"`
}

func (e *env) ledger(args ...string) []ledgerRecord {
	e.t.Helper()
	r := e.run(append([]string{"ledger", "--json"}, args...)...)
	if r.Code != 0 {
		e.t.Fatalf("ledger: %d %s", r.Code, r.Stderr)
	}
	var recs []ledgerRecord
	if err := json.Unmarshal([]byte(r.Stdout), &recs); err != nil {
		e.t.Fatalf("ledger: %v %q", err, r.Stdout)
	}
	return recs
}

// waitLedger polls the ledger until every id has ended.
func (e *env) waitLedger(ids []string, timeout time.Duration) map[string]ledgerRecord {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]ledgerRecord{}
		for _, r := range e.ledger() {
			if r.EndedAt != "" {
				got[r.ID] = r
			}
		}
		done := true
		for _, id := range ids {
			if _, ok := got[id]; !ok {
				done = false
			}
		}
		if done {
			return got
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("ledger: not all of %v ended within %v (have %v)", ids, timeout, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Without systemd: SIGKILL of the caller's whole process group leaves the workers running, and the ledger
// records each one's real exit code.
func TestCronWorkersOutliveCallerProcessGroup(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	// The "gateway": a shell in its own process group that starts 5 workers and then waits forever.
	script := `for i in 1 2 3 4 5; do "$1" --root "$2" --state-dir "$3" exec -p b --detach --scope cgroup --cgroup-parent "$4" -- "$5" child sleep-exit 1s "1$i" >/dev/null || exit 9; done; echo started; exec sleep 300`
	gw := exec.Command("sh", "-c", script, "sh", hlaunchBin, e.Root, e.State, e.Parent, selfBin)
	gw.Env = e.Launcher
	gw.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := gw.StdoutPipe()
	must(t, err)
	must(t, gw.Start())
	t.Cleanup(func() { _ = syscall.Kill(-gw.Process.Pid, syscall.SIGKILL); _ = gw.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("gateway did not start its workers: %q %v", line, err)
	}
	// Kill the caller's whole process group, as a supervisor restart would.
	must(t, syscall.Kill(-gw.Process.Pid, syscall.SIGKILL))
	_ = gw.Wait()
	var ids []string
	for _, r := range e.ledger() {
		ids = append(ids, r.ID)
	}
	if len(ids) != 5 {
		t.Fatalf("ledger has %d records, want 5", len(ids))
	}
	recs := e.waitLedger(ids, 20*time.Second)
	codes := map[int]bool{}
	for _, r := range recs {
		if r.ExitCode == nil {
			t.Fatalf("worker %s: no exit code (signal %q): it died with its caller", r.ID, r.Signal)
		}
		codes[*r.ExitCode] = true
	}
	for i := 1; i <= 5; i++ {
		if !codes[10+i] {
			t.Errorf("exit code %d missing from the ledger: %v", 10+i, codes)
		}
	}
}

// One worker at a time per key: a second start is refused while the holder runs; after it ends, the key
// starts again.
func TestCronKeyIsExclusive(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	flags := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--key", "cron-job-7"}
	first := e.detach(flags, selfBin, "child", "sleep", "1s")
	args := append([]string{"exec", "-p", "b", "--detach"}, flags...)
	r := e.run(append(args, "--", "true")...)
	if r.Code != 73 || !strings.Contains(r.Stderr, first.ID) {
		t.Fatalf("second start: exit %d %q, want 73 naming %s", r.Code, r.Stderr, first.ID)
	}
	rj := e.run(append([]string{"--json"}, append(args, "--", "true")...)...)
	if rj.Code != 73 || !strings.Contains(rj.Stdout, `"key_held"`) {
		t.Fatalf("--json refusal: exit %d %q", rj.Code, rj.Stdout)
	}
	e.run("wait", "--timeout", "60s", first.ID)
	second := e.detach(flags, "true")
	if second.Key != "cron-job-7" {
		t.Fatalf("second receipt key %q", second.Key)
	}
	if got := e.ledger("--key", "cron-job-7"); len(got) != 2 {
		t.Fatalf("ledger --key: %d records", len(got))
	}
}

// An overrunning worker is stopped at its timeout, its double-forked children with it, and the ledger
// says timed out; a memory hog is recorded as OOM-killed.
func TestCronTimeoutAndOOMAreRecorded(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--timeout", "500ms", "--grace", "300ms"},
		selfBin, "child", "spawn-tree", "300")
	hog := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--memory", "64M"}, selfBin, "child", "memhog", "256")
	recs := e.waitLedger([]string{rc.ID, hog.ID}, 20*time.Second)
	if r := recs[rc.ID]; !r.TimedOut || r.Signal == "" {
		t.Errorf("overrun: %+v", r)
	}
	// The whole tree went, grandchild included.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(v2, rc.Cgroup, "cgroup.procs"))
		if err != nil || strings.TrimSpace(string(b)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("members left after the timeout: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := recs[hog.ID]; !r.OOMKilled {
		t.Errorf("memory hog: %+v", r)
	}
	// Credentials in argv never reach the ledger.
	secret := e.detach([]string{"--scope", "none"}, "true", "--api-key=sk-live-123", "--token", "tok-456", "OPENAI_API_KEY=sk-x")
	e.waitLedger([]string{secret.ID}, 10*time.Second)
	out := e.run("ledger", "--json").Stdout
	for _, s := range []string{"sk-live-123", "tok-456", "sk-x"} {
		if strings.Contains(out, s) {
			t.Errorf("ledger holds credential %q", s)
		}
	}
}

// A ledger record written before a reboot (another boot id, never ended) is shown as such, never as running.
func TestCronLedgerAcrossReboot(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	ledger := filepath.Join(t.TempDir(), "ledger")
	e.Launcher = append(e.Launcher, "HLAUNCH_LEDGER_DIR="+ledger)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, selfBin, "child", "trap")
	path := filepath.Join(ledger, rc.ID+".json")
	var rec map[string]any
	b, err := os.ReadFile(path)
	must(t, err)
	must(t, json.Unmarshal(b, &rec))
	if rec["state"] != "running" {
		t.Fatalf("ledger start record: %v", rec)
	}
	// As the ledger would hold it after a reboot: the same record, another boot.
	rec["token"] = forged(t, rc.Token, func(i *fingerprint.Identity) { i.BootID = "11111111-1111-1111-1111-111111111111" })
	b, err = json.Marshal(rec)
	must(t, err)
	must(t, os.WriteFile(path, b, 0o600))
	got := e.ledger()
	if len(got) != 1 || got[0].State != "foreign-boot" {
		t.Fatalf("ledger after a reboot: %+v", got)
	}
	e.run("stop", "--grace", "1s", rc.ID)
}

// --detach --stdio inherit: the worker speaks over the caller's own pipes, after hlaunch has returned.
func TestDetachedStdioInherit(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	inR, inW, err := os.Pipe()
	must(t, err)
	outR, outW, err := os.Pipe()
	must(t, err)
	defer inW.Close()
	defer outR.Close()
	cmd := exec.Command(hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--detach", "--stdio", "inherit",
		"--scope", "cgroup", "--cgroup-parent", e.Parent, "--", "/bin/sh", "-c", "read x; echo got:$x")
	cmd.Env = e.Launcher
	cmd.Stdin, cmd.Stdout = inR, outW
	// stderr is a file, not a pipe copied by a goroutine: the worker keeps it, so Wait would wait for it.
	errf, err := os.CreateTemp(t.TempDir(), "stderr")
	must(t, err)
	defer errf.Close()
	cmd.Stderr = errf
	errb := func() string { b, _ := os.ReadFile(errf.Name()); return string(b) }
	must(t, cmd.Start())
	inR.Close()
	outW.Close()
	// The receipt comes first on the shared stdout, then, once fed, the worker's own line.
	rd := bufio.NewReader(outR)
	dec := json.NewDecoder(rd)
	var rc receipt
	if err := dec.Decode(&rc); err != nil {
		t.Fatalf("receipt: %v (stderr %s)", err, errb())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("hlaunch: %v %s", err, errb())
	}
	_, _ = inW.WriteString("hello\n")
	inW.Close()
	rest, _ := io.ReadAll(io.MultiReader(dec.Buffered(), rd))
	if !strings.Contains(string(rest), "got:hello") {
		t.Fatalf("worker output over the inherited stdout: %q", rest)
	}
	if r := e.run("exec", "-p", "b", "--stdio", "inherit", "--", "true"); r.Code != 125 || !strings.Contains(r.Stderr, "--detach") {
		t.Fatalf("foreground --stdio inherit: %d %q", r.Code, r.Stderr)
	}
}

// --log rotates at --log-max when a launch opens it, keeping one old file.
func TestLogRotation(t *testing.T) {
	e := newEnv(t)
	log := filepath.Join(t.TempDir(), "logs", "task-7.log")
	must(t, os.MkdirAll(filepath.Dir(log), 0o700))
	must(t, os.WriteFile(log, []byte(strings.Repeat("x", 2048)), 0o600))
	r := e.run("exec", "-p", "b", "--scope", "none", "--log", log, "--log-max", "1K", "--", "echo", "fresh")
	if r.Code != 0 {
		t.Fatalf("exec: %d %s", r.Code, r.Stderr)
	}
	cur, _ := os.ReadFile(log)
	old, _ := os.ReadFile(log + ".1")
	if string(cur) != "fresh\n" || len(old) != 2048 {
		t.Fatalf("after rotation: log %q, old %d bytes", cur, len(old))
	}
	r = e.run("exec", "-p", "b", "--scope", "none", "--log", log, "--", "echo", "again")
	if cur, _ := os.ReadFile(log); r.Code != 0 || string(cur) != "fresh\nagain\n" {
		t.Fatalf("append below the limit: %q", cur)
	}
}
