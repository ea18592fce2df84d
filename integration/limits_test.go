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

// defaultPids is worker.DefaultPids, the tasks limit of a worker that sets none.
const defaultPids = 2048

// receiptLimits is the "limits" object of a receipt.
type receiptLimits struct {
	Memory    int64 `json:"memory"`
	Pids      int64 `json:"pids"`
	CPUWeight int64 `json:"cpu_weight"`
}

// limitsOf decodes a receipt's limits.
func limitsOf(t *testing.T, receiptJSON []byte) receiptLimits {
	t.Helper()
	var r struct {
		Limits *receiptLimits `json:"limits"`
	}
	if err := json.Unmarshal(receiptJSON, &r); err != nil || r.Limits == nil {
		t.Fatalf("receipt without limits: %v: %s", err, receiptJSON)
	}
	return *r.Limits
}

// memTotal is this host's MemTotal in bytes.
func memTotal(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			must(t, err)
			return kb << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// controllerDir is the directory of worker cgroup cg (a receipt's "cgroup") that holds file: the v1
// hierarchy of its controller on a hybrid host, the v2 tree on a pure one; "" when no hierarchy has it.
func controllerDir(cg, file string) string {
	for _, root := range cgroupRoots() {
		d := filepath.Join(root, cg)
		if _, err := os.Stat(filepath.Join(d, file)); err == nil {
			return d
		}
	}
	return ""
}

// readCount reads a cgroup file holding one number ("max" is -1).
func readCount(t *testing.T, file string) int64 {
	t.Helper()
	b, err := os.ReadFile(file)
	must(t, err)
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 64)
	must(t, err)
	return n
}

// forkFailures is the "max" count of a pids.events file: forks the limit refused.
func forkFailures(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pids.events"))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// forkBomb is a bounded fork bomb for bash: it forks subshells that block in `read` (no exec, so each
// costs a copy-on-write fork) as fast as it can, until a fork fails for good (bash retries for about 15 s,
// then exits), 90 s have passed or 3000 were forked; each subshell ends after 90 s. The bound on the count
// keeps even a launcher without a tasks limit from taking more than 3000 of the host's PIDs; the bound on
// the time is generous, because the bomb must reach the limit on a loaded host too.
const forkBomb = `exec 9<>"$1"; n=0
while [ $SECONDS -lt 90 ] && [ $n -lt 3000 ]; do read -t 90 -u 9 & n=$((n+1)); done`

// bombFIFO is a FIFO nobody writes to, for forkBomb's subshells to block on.
func bombFIFO(t *testing.T) string {
	t.Helper()
	p := filepath.Join(workerDir(t), "fifo")
	must(t, syscall.Mkfifo(p, 0o600))
	must(t, os.Chmod(p, 0o666)) // the worker runs as its home's owner
	return p
}

// holdsUnderBomb watches worker cgroup cg while a fork bomb runs in it: its tasks stay at most pids.max,
// which is defaultPids, until the bomb has been refused a fork; meanwhile another profile's launch
// (launchOther) and a plain `sh -c true` still complete.
func holdsUnderBomb(t *testing.T, cg string, launchOther func() error) {
	t.Helper()
	dir := controllerDir(cg, "pids.max")
	if dir == "" {
		t.Fatalf("worker cgroup %s has no pids controller in any hierarchy: no tasks limit holds it", cg)
	}
	if max := readCount(t, filepath.Join(dir, "pids.max")); max != defaultPids {
		t.Fatalf("%s/pids.max = %d, want the default %d", dir, max, defaultPids)
	}
	deadline := time.Now().Add(120 * time.Second)
	var peak int64
	for forkFailures(t, dir) == 0 {
		cur := readCount(t, filepath.Join(dir, "pids.current"))
		peak = max(peak, cur)
		if cur > defaultPids {
			t.Fatalf("%d tasks in the worker cgroup, above the default %d", cur, defaultPids)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fork bomb was not refused a fork within 120 s (%d tasks at most)", peak)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if cur := readCount(t, filepath.Join(dir, "pids.current")); cur > defaultPids {
		t.Fatalf("%d tasks in the worker cgroup, above the default %d", cur, defaultPids)
	}
	// The bomb is at its limit and retrying: the rest of the host still forks.
	done := make(chan error, 2)
	go func() { done <- launchOther() }()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- exec.CommandContext(ctx, "sh", "-c", "true").Run()
	}()
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Errorf("beside the fork bomb: %v", err)
		}
	}
	if cur := readCount(t, filepath.Join(dir, "pids.current")); cur > defaultPids {
		t.Fatalf("%d tasks in the worker cgroup, above the default %d", cur, defaultPids)
	}
}

// stopVerified stops worker id with `hlaunch stop` (exit 0 only when its cgroup is verified empty) and
// checks that cgroup cg has no member left in any hierarchy.
func stopVerified(t *testing.T, e *env, id, cg string) {
	t.Helper()
	if r := e.run("stop", "--grace", "1s", id); r.Code != 0 {
		t.Fatalf("stop: exit %d: %s", r.Code, r.Stderr)
	}
	for _, root := range cgroupRoots() {
		b, err := os.ReadFile(filepath.Join(root, cg, "cgroup.procs"))
		if err == nil && strings.TrimSpace(string(b)) != "" {
			t.Errorf("%s still has members after stop: %s", filepath.Join(root, cg), b)
		}
	}
}

// otherLaunch is `hlaunch exec -p c -- true` in the env's cgroup parent, as a launchOther.
func otherLaunch(e *env) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "c",
			"--scope", "cgroup", "--cgroup-parent", e.Parent, "--", "true")
		cmd.Env = e.Launcher
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("hlaunch exec -p c -- true: %w: %s", err, out)
		}
		return nil
	}
}

// A worker started with no limits of its own is bounded by the defaults: a fork bomb in it stops at 2048
// tasks, while another profile's launch and a plain fork on the host still complete. Without them its
// cgroup would have no pids controller at all, and the bomb would take PIDs until the host's pid_max.
func TestDefaultLimitsHoldForkBomb(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	e.profile("c", "C_MARKER=c\n")
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, "bash", "-c", forkBomb, "bomb", bombFIFO(t))
	t.Cleanup(func() { e.run("stop", "--grace", "0s", rc.ID) })
	holdsUnderBomb(t, rc.Cgroup, otherLaunch(e))
	stopVerified(t, e, rc.ID, rc.Cgroup)
}

// The same through the sidecar: a spawn that sets no limits gets the defaults, and the sidecar answers its
// health check and spawns for another profile meanwhile.
func TestSidecarDefaultLimitsHoldForkBomb(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	e.profile("c", "C_MARKER=c\n")
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "bash", "-c", forkBomb, "bomb", bombFIFO(t)), 201, &rc)
	t.Cleanup(func() { e.run("stop", "--grace", "0s", rc.ID) })
	other := func() error {
		if st, b := p.do("GET", "/v1/health", ""); st != 200 {
			return fmt.Errorf("sidecar health beside the fork bomb: %d %s", st, b)
		}
		if st, b := p.do("POST", "/v1/workers", scSpec("c", "true")); st != 201 {
			return fmt.Errorf("sidecar spawn for profile c: %d %s", st, b)
		}
		return otherLaunch(e)()
	}
	holdsUnderBomb(t, rc.Cgroup, other)
	stopVerified(t, e, rc.ID, rc.Cgroup)
}

// The receipt shows the limits applied: the defaults where the launch sets none, none for a field given
// as max, the caller's own value over a default, and none at all without a cgroup (--scope none). Each
// limit shown is the one in the worker's cgroup.
func TestDefaultLimitsInReceipt(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	defMem := memTotal(t) / 2 &^ (1<<20 - 1)
	cases := []struct {
		name  string
		flags []string
		want  receiptLimits
	}{
		{"defaults", nil, receiptLimits{Memory: defMem, Pids: defaultPids, CPUWeight: 100}},
		{"--pids max", []string{"--pids", "max"}, receiptLimits{Memory: defMem, CPUWeight: 100}},
		{"all max", []string{"--pids", "max", "--memory", "max", "--cpu-weight", "max"}, receiptLimits{}},
		{"own values", []string{"--pids", "64", "--memory", "256M", "--cpu-weight", "300"}, receiptLimits{Memory: 256 << 20, Pids: 64, CPUWeight: 300}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			flags := append([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, c.flags...)
			args := append(append([]string{"exec", "-p", "b", "--detach"}, flags...), "--", "sleep", "30")
			r := e.run(args...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			var rc receipt
			must(t, json.Unmarshal([]byte(r.Stdout), &rc))
			t.Cleanup(func() { e.run("stop", "--grace", "0s", rc.ID) })
			if got := limitsOf(t, []byte(r.Stdout)); got != c.want {
				t.Errorf("receipt limits %+v, want %+v", got, c.want)
			}
			pids := controllerDir(rc.Cgroup, "pids.max")
			switch {
			case c.want.Pids == 0 && pids != "" && readCount(t, filepath.Join(pids, "pids.max")) != -1:
				t.Errorf("%s/pids.max is set; the receipt says no tasks limit", pids)
			case c.want.Pids != 0 && (pids == "" || readCount(t, filepath.Join(pids, "pids.max")) != c.want.Pids):
				t.Errorf("worker cgroup %s: pids.max is not %d (dir %q)", rc.Cgroup, c.want.Pids, pids)
			}
			if c.want.Memory != 0 {
				f := "memory.max"
				d := controllerDir(rc.Cgroup, f)
				if d == "" {
					f = "memory.limit_in_bytes"
					d = controllerDir(rc.Cgroup, f)
				}
				if d == "" || readCount(t, filepath.Join(d, f)) != c.want.Memory {
					t.Errorf("worker cgroup %s: %s is not %d (dir %q)", rc.Cgroup, f, c.want.Memory, d)
				}
			}
			if c.want.CPUWeight != 0 && controllerDir(rc.Cgroup, "cpu.weight") == "" && controllerDir(rc.Cgroup, "cpu.shares") == "" {
				t.Errorf("worker cgroup %s is no CPU group of its own (no cpu.weight or cpu.shares)", rc.Cgroup)
			}
		})
	}
	t.Run("--scope none", func(t *testing.T) {
		e := e.with(t)
		r := e.run("exec", "-p", "b", "--detach", "--scope", "none", "--", "true")
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		var rc receipt
		must(t, json.Unmarshal([]byte(r.Stdout), &rc))
		// Its shim records the end: wait for that, so that nothing writes to the state dir after the test.
		defer e.run("wait", "--timeout", "60s", rc.ID)
		if got := limitsOf(t, []byte(r.Stdout)); got != (receiptLimits{}) {
			t.Errorf("--scope none: receipt limits %+v, want none (no cgroup holds a limit)", got)
		}
		if r := e.run("exec", "-p", "b", "--scope", "none", "--pids", "64", "--", "true"); r.Code != 125 || !strings.Contains(r.Stderr, "--scope") {
			t.Errorf("--scope none --pids 64: exit %d, %q; want 125 naming --scope", r.Code, r.Stderr)
		}
	})
}

// The sidecar's --default-pids is the tasks limit of every spawn that sets none (and its max, none);
// a spawn's own limits.pids, and -1 for no limit, still win.
func TestSidecarDefaultPids(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	spawn := func(p *scProc, spec string) (receipt, receiptLimits) {
		t.Helper()
		st, b := p.do("POST", "/v1/workers", spec)
		if st != 201 {
			t.Fatalf("spawn %s: %d %s", spec, st, b)
		}
		var rc receipt
		must(t, json.Unmarshal(b, &rc))
		t.Cleanup(func() { e.run("stop", "--grace", "0s", rc.ID) })
		return rc, limitsOf(t, b)
	}
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--default-pids", "64")
	rc, l := spawn(p, scSpec("b", "sleep", "30"))
	if l.Pids != 64 || l.CPUWeight != 100 {
		t.Errorf("--default-pids 64: receipt limits %+v, want pids 64 and the other defaults", l)
	}
	if d := controllerDir(rc.Cgroup, "pids.max"); d == "" || readCount(t, filepath.Join(d, "pids.max")) != 64 {
		t.Errorf("--default-pids 64: worker cgroup %s pids.max is not 64 (dir %q)", rc.Cgroup, d)
	}
	if _, l := spawn(p, `{"profile":"b","argv":["sleep","30"],"limits":{"pids":100}}`); l.Pids != 100 {
		t.Errorf("limits.pids 100 beside --default-pids 64: receipt pids %d", l.Pids)
	}
	if _, l := spawn(p, `{"profile":"b","argv":["sleep","30"],"limits":{"pids":-1}}`); l.Pids != 0 {
		t.Errorf("limits.pids -1 beside --default-pids 64: receipt pids %d, want none", l.Pids)
	}
	p.stop()

	p = startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--default-pids", "max", "--default-memory", "max", "--default-cpu-weight", "0")
	if _, l := spawn(p, scSpec("b", "sleep", "30")); l != (receiptLimits{}) {
		t.Errorf("--default-pids max --default-memory max --default-cpu-weight 0: receipt limits %+v, want none", l)
	}
	p.stop()

	for _, bad := range [][]string{{"--default-pids", "-3"}, {"--default-pids", "4"}, {"--default-memory", "lots"}, {"--default-cpu-weight", "20000"}} {
		args := append([]string{"--root", e.Root, "--state-dir", e.State, "sidecar", "--socket", filepath.Join(scSocketDir(t), "s.sock"),
			"--scope", "cgroup", "--cgroup-parent", e.Parent}, bad...)
		cmd := exec.Command(hlaunchBin, args...)
		cmd.Env = e.Launcher
		r := runResult(t, cmd)
		if r.Code != 125 || !strings.Contains(r.Stderr, bad[0]) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("sidecar %v: exit %d, %q; want 125 and one line naming %s", bad, r.Code, r.Stderr, bad[0])
		}
	}
}
