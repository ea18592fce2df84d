package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
	"github.com/hlaunch/hlaunch/internal/testutil"
)

// idleShims returns the children of pid that are hlaunch shims (children are listed per thread: a Go
// process forks from whichever thread runs the goroutine).
func idleShims(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var all []string
	for _, tf := range tasks {
		b, _ := os.ReadFile(tf)
		all = append(all, strings.Fields(string(b))...)
	}
	var out []int
	for _, f := range all {
		c, _ := strconv.Atoi(f)
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
		if strings.Contains(string(argv), "__shim") {
			out = append(out, c)
		}
	}
	return out
}

// waitWarm waits until the sidecar reports n warm slots ready.
func waitWarm(t *testing.T, p *scProc, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var h struct {
			Warm *int `json:"warm"`
		}
		p.mustDo("GET", "/v1/health", "", 200, &h)
		if h.Warm == nil {
			t.Fatal("/v1/health of a --warm sidecar has no warm count")
		}
		if *h.Warm == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d warm slots ready, want %d", *h.Warm, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitShims waits until pid has n shim children, and returns them.
func waitShims(t *testing.T, pid, n int) []int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := idleShims(pid)
		if len(s) == n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("sidecar %d has shims %v, want %d warm slots", pid, s, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until none of pids is alive (reaped, or a zombie).
func waitGone(t *testing.T, what string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: PID %d still alive", what, p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// reportOf waits for a sidecar worker and reads the childReport it wrote to its log.
func reportOf(t *testing.T, p *scProc, rc receipt) childReport {
	t.Helper()
	var rec receipt
	p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, &rec)
	if rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Fatalf("worker %s ended with %v / %q", rc.ID, rec.ExitCode, rec.Signal)
	}
	b, err := os.ReadFile(filepath.Join(p.e.State, "logs", rc.ID+".log"))
	must(t, err)
	var rep childReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("worker %s log: %v: %q", rc.ID, err, b)
	}
	return rep
}

func v2Line(rep childReport) string {
	for _, l := range rep.Cgroup {
		if rest, ok := strings.CutPrefix(l, "0::"); ok {
			return rest
		}
	}
	return ""
}

// A sidecar with --warm keeps slots ready: a worker cgroup with a shim already started in it. A spawn takes
// one: the worker's shim is a shim that existed before the request, yet the worker is in its own cgroup
// from its first instruction, with its own profile's environment; the pool refills. A spec with limits
// takes the ordinary path. Shutting the sidecar down, or killing it, ends the unused shims, and no process
// is left in any cgroup.
func TestSidecarWarmSlots(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--warm", "2")
	pid := p.cmd.Process.Pid
	waitWarm(t, p, 2)
	warm := waitShims(t, pid, 2)

	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", selfBin, "child", "report"), 201, &rc)
	firstID := rc.ID
	if !slices.Contains(warm, rc.ShimPID) {
		t.Fatalf("worker's shim %d is not one of the warm slots %v", rc.ShimPID, warm)
	}
	rep := reportOf(t, p, rc)
	if got := v2Line(rep); got != "/"+e.Parent+"/"+rc.ID || rc.Cgroup != got {
		t.Fatalf("first cgroup read %q, receipt %q, want /%s/%s", got, rc.Cgroup, e.Parent, rc.ID)
	}
	if rep.Env["B_MARKER"] != "b" || rep.Env["A_MARKER"] != "" || rep.Env["OPENAI_API_KEY"] != "" {
		t.Fatalf("warm worker's environ is not profile b's alone: %v", rep.Env)
	}

	// A spec with limits does not fit a slot made without them: it takes the ordinary path, limits applied.
	waitWarm(t, p, 2)
	refilled := waitShims(t, pid, 2)
	spec := `{"profile":"b","argv":["sleep","30"],"limits":{"pids":16}}`
	p.mustDo("POST", "/v1/workers", spec, 201, &rc)
	if slices.Contains(refilled, rc.ShimPID) {
		t.Fatalf("a spec with limits took warm slot %d (made without them)", rc.ShimPID)
	}
	if got := pidsMax(t, rc.Cgroup); got != "16" {
		t.Fatalf("pids.max of the worker's cgroup = %q, want 16", got)
	}
	p.mustDo("POST", "/v1/workers/"+rc.ID+"/stop", `{"grace":"1s"}`, 200, nil)
	var third receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "true"), 201, &third)
	if !slices.Contains(refilled, third.ShimPID) {
		t.Fatalf("the next spawn's shim %d is not one of the refilled slots %v", third.ShimPID, refilled)
	}
	spawned := map[string]bool{firstID: true, third.ID: true}

	// SIGTERM: the unused slots end with the sidecar, and their cgroups go with them (the used ones stay
	// with their records until hlaunch gc; the stopped one was removed by stop).
	waitWarm(t, p, 2)
	unused := waitShims(t, pid, 2)
	p.stop()
	waitGone(t, "an unused slot after SIGTERM", unused)
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/unified", e.Parent, "w-*"))
	for _, d := range dirs {
		if !spawned[filepath.Base(d)] {
			t.Fatalf("cgroup %s left after SIGTERM: not a spawned worker's (%v)", d, spawned)
		}
	}

	// SIGKILL: the unused slots read EOF on their handshake and end by themselves.
	p = startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--warm", "2")
	waitWarm(t, p, 2)
	unused = waitShims(t, p.cmd.Process.Pid, 2)
	p.kill9()
	waitGone(t, "an unused slot after SIGKILL", unused)
	// A slot the sidecar was making when it was killed (a refill) ends the same way, by itself: nothing of
	// the sidecar's may be left running under the parent once it has had the time to.
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := scCgroupsWithProcs(t, "/sys/fs/cgroup/unified", e.Parent)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for cg, procs := range left {
				for _, pid := range procs {
					cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%s/cmdline", pid))
					t.Errorf("30 s after SIGKILL cgroup %s still holds %s (%q)", cg, pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
				}
			}
			t.FailNow()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pidsMax reads pids.max of a worker's cgroup (cgroup is its v2 path) from wherever the pids controller is.
func pidsMax(t *testing.T, cgroup string) string {
	t.Helper()
	for _, root := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if b, err := os.ReadFile(filepath.Join(root, cgroup, "pids.max")); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("no pids.max for %s", cgroup)
	return ""
}

var warmScopeRE = regexp.MustCompile(`hlaunch-[0-9a-f]{12}\.scope`)

// With --scope systemd a warm slot is a shim already in its own transient scope. A spawn that fits takes
// it: the worker is in that scope from its first instruction. A spec with limits does not fit a ready
// scope and takes the ordinary path (where, on this hybrid host, the user manager cannot apply them and the
// spawn is refused). Stopping the sidecar leaves no scope behind.
func TestSidecarWarmScopes(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	ctx := context.Background()
	p := startScopeSidecar(t, m, e, "--warm", "2")
	listWarm := func() []string {
		out, _ := m.Systemctl(ctx, "list-units", "--type=scope", "--state=active", "--no-legend")
		return warmScopeRE.FindAllString(out, -1)
	}
	deadline := time.Now().Add(60 * time.Second)
	var scopes []string
	for len(scopes) != 2 {
		if scopes = listWarm(); time.Now().After(deadline) {
			t.Fatalf("warm scopes %v, want 2\n%s", scopes, p.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	waitWarm(t, p, 2)
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", selfBin, "child", "report"), 201, &rc)
	if rc.Mode != "scoped" || !slices.Contains(scopes, rc.Unit) {
		t.Fatalf("spawn: mode %q unit %q, want one of the warm scopes %v", rc.Mode, rc.Unit, scopes)
	}
	rep := reportOf(t, p, rc)
	if got := v2Line(rep); !strings.HasSuffix(got, "/"+rc.Unit) {
		t.Fatalf("the worker's first cgroup read is %q, want its warm scope %s", got, rc.Unit)
	}

	st, b := p.do("POST", "/v1/workers", `{"profile":"b","argv":["true"],"limits":{"memory":67108864}}`)
	if st == 201 {
		var lim receipt
		must(t, json.Unmarshal(b, &lim))
		if slices.Contains(scopes, lim.Unit) {
			t.Fatalf("a spec with limits took a warm scope made without them: %s", b)
		}
	} else if scErrCode(b) != "invalid" || !strings.Contains(string(b), "limits.memory") || strings.Contains(string(b), "--memory") {
		t.Fatalf("spawn with limits the manager cannot apply: %d %s", st, b)
	}

	p.stop()
	deadline = time.Now().Add(30 * time.Second)
	for len(listWarm()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("warm scopes left after the sidecar stopped: %v", listWarm())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startScopeSidecar starts `hlaunch sidecar --scope systemd --user --require-scope` with extra flags under
// the test manager m; it is stopped (SIGTERM) when the test ends.
func startScopeSidecar(t *testing.T, m *systemdtest.Manager, e *env, extra ...string) *scProc {
	t.Helper()
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := &scProc{t: t, e: e, sock: sock, log: &testutil.Buffer{}, client: scUnixClient(sock), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"--root", e.Root, "--state-dir", e.State, "sidecar", "--socket", sock,
		"--scope", "systemd", "--user", "--require-scope", "--poll-interval", "20ms"}, extra...)
	p.cmd = m.Command(ctx, hlaunchBin, args...)
	p.cmd.Env = append(append([]string{}, e.Launcher...), m.Env()...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.Cancel = func() error { return p.cmd.Process.Signal(syscall.SIGTERM) }
	must(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		cancel()
		if t.Failed() {
			t.Logf("sidecar output:\n%s\nmanager log:\n%s", p.log.String(), m.Log())
		}
	})
	return p
}
