package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/schematest"
	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// TestSidecarConcurrentSpawns: 100 spawns at once through the socket all succeed, every receipt and record
// validates against docs/schema, and all 100 appear in GET /v1/workers, running, each announced once.
func TestSidecarConcurrentSpawns(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	receiptSchema := scLoadSchema(t, "receipt.schema.json")
	specSchema := scLoadSchema(t, "spec.schema.json")
	record := map[string]any{"$ref": "#/$defs/record"}

	const n = 100
	spec := scSpec("b", selfBin, "child", "sleep", "120s")
	if errs := schematest.ValidateJSON(specSchema, specSchema, []byte(spec)); len(errs) > 0 {
		t.Fatalf("the test's own spec does not validate: %v", errs)
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, b := p.do("POST", "/v1/workers", spec)
			if st != 201 {
				t.Errorf("spawn %d: %d %s", i, st, b)
				return
			}
			if errs := schematest.ValidateJSON(receiptSchema, receiptSchema, b); len(errs) > 0 {
				t.Errorf("receipt does not validate: %v\n%s", errs, b)
			}
			var rc receipt
			if err := json.Unmarshal(b, &rc); err != nil {
				t.Error(err)
				return
			}
			ids[i] = rc.ID
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	st, raw := p.do("GET", "/v1/workers", "")
	if st != 200 {
		t.Fatalf("list: %d %s", st, raw)
	}
	var raws []json.RawMessage
	must(t, json.Unmarshal(raw, &raws))
	running := map[string]bool{}
	for _, r := range raws {
		if errs := schematest.ValidateJSON(receiptSchema, record, r); len(errs) > 0 {
			t.Errorf("record does not validate: %v\n%s", errs, r)
		}
		var rc receipt
		must(t, json.Unmarshal(r, &rc))
		if rc.State == "running" {
			running[rc.ID] = true
		}
	}
	for _, id := range ids {
		if !running[id] {
			t.Errorf("worker %s is not listed as running", id)
		}
	}
	if len(raws) != n {
		t.Errorf("%d records, want %d", len(raws), n)
	}
	started := map[string]int{}
	for _, ev := range p.events("?since=0", n, 10*time.Second) {
		if ev.Type != "started" {
			t.Fatalf("unexpected event %+v", ev)
		}
		started[ev.ID]++
	}
	for _, id := range ids {
		if started[id] != 1 {
			t.Errorf("worker %s announced %d times", id, started[id])
		}
	}
}

// TestSidecarRestartReadoption: SIGKILL the sidecar with 20 workers running; 5 exit while it is down. After
// a restart 15 are running and re-adopted, 5 are exited with their real exit codes, none was started twice
// or lost, and the re-adopted ones can still be stopped.
func TestSidecarRestartReadoption(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock)

	long := map[string]receipt{}
	short := map[string]receipt{}
	wantCode := map[string]int{}
	// The short ones end when the test says (after the crash), not after a time that a slow host (the
	// guest lane under TCG) can spend on the spawns alone.
	release := filepath.Join(t.TempDir(), "release")
	for i := range 20 {
		var rc receipt
		if i%4 == 0 { // 5 of them
			p.mustDo("POST", "/v1/workers", scSpec("b", selfBin, "child", "exit-when", release, fmt.Sprint(10+i/4)), 201, &rc)
			short[rc.ID] = rc
			wantCode[rc.ID] = 10 + i/4
		} else {
			p.mustDo("POST", "/v1/workers", scSpec("b", selfBin, "child", "sleep", "120s"), 201, &rc)
			long[rc.ID] = rc
		}
	}
	for _, r := range p.list() {
		if r.State != "running" {
			t.Fatalf("before the crash %s is %s", r.ID, r.State)
		}
	}
	sidecarPID := p.cmd.Process.Pid
	p.kill9()
	for id, rc := range long {
		if !alive(rc.PID) {
			t.Fatalf("worker %s (pid %d) died with the sidecar", id, rc.PID)
		}
		if sid, err := getsidOf(rc.PID); err != nil || sid == sidecarPID {
			t.Fatalf("worker %s is in the sidecar's session (%d, %v)", id, sid, err)
		}
	}
	// The 5 short workers end while no sidecar runs: each shim writes its worker's exit record and exits.
	// Until it has, the restarted sidecar holds the exit back (no code yet) and reports it after its
	// start-up, not as an initial event (the test waits for the event, not a fixed time a slow host misses).
	must(t, os.WriteFile(release, nil, 0o644))
	deadline := time.Now().Add(60 * time.Second)
	for id, rc := range short {
		if rc.ShimPID <= 0 {
			t.Fatalf("short worker %s: receipt without its shim's PID", id)
		}
		for alive(rc.PID) || alive(rc.ShimPID) {
			if time.Now().After(deadline) {
				t.Fatalf("short worker %s still runs (leader %d alive %v, shim %d alive %v)", id, rc.PID, alive(rc.PID), rc.ShimPID, alive(rc.ShimPID))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	p2 := startSidecarProc(t, e, sock)
	evs := p2.events("?since=0", 20, 10*time.Second)
	for _, ev := range evs {
		if !ev.Initial {
			t.Errorf("start-up event without initial: %+v", ev)
		}
		switch {
		case ev.Type == "adopted":
			if _, ok := long[ev.ID]; !ok {
				t.Errorf("adopted %s, which is not a long worker", ev.ID)
			}
		case ev.Type == "exited":
			if _, ok := short[ev.ID]; !ok {
				t.Errorf("exited %s, which is not a short worker", ev.ID)
			} else if ev.ExitCode == nil || *ev.ExitCode != wantCode[ev.ID] {
				t.Errorf("exited event for %s has exit code %v, want %d", ev.ID, ev.ExitCode, wantCode[ev.ID])
			}
		default:
			t.Errorf("unexpected start-up event %+v", ev)
		}
	}
	recs := p2.list()
	if len(recs) != 20 {
		t.Fatalf("%d records after restart, want 20 (none lost, none started twice)", len(recs))
	}
	for _, r := range recs {
		if rc, ok := long[r.ID]; ok {
			if r.State != "running" || r.PID != rc.PID || r.StartTime != rc.StartTime {
				t.Errorf("long worker %s after restart: %s pid %d, want the same running process %d", r.ID, r.State, r.PID, rc.PID)
			}
			continue
		}
		if r.State != "exited" || r.ExitCode == nil || *r.ExitCode != wantCode[r.ID] {
			t.Errorf("short worker %s after restart: %s code %v, want exited %d", r.ID, r.State, r.ExitCode, wantCode[r.ID])
		}
	}
	// wait on an exited one answers at once with its code; the adopted ones are fully controllable.
	for id, code := range wantCode {
		var r receipt
		p2.mustDo("GET", "/v1/workers/"+id+"/wait?timeout=60s", "", 200, &r)
		if r.ExitCode == nil || *r.ExitCode != code {
			t.Fatalf("wait %s: %v, want %d", id, r.ExitCode, code)
		}
		break
	}
	for id, rc := range long {
		var r receipt
		p2.mustDo("POST", "/v1/workers/"+id+"/stop", `{"grace":"1s"}`, 200, &r)
		if r.State != "exited" || alive(rc.PID) {
			t.Fatalf("stop of adopted %s: %s, alive=%v", id, r.State, alive(rc.PID))
		}
		ev := p2.events(fmt.Sprintf("?since=%d", evs[len(evs)-1].Seq), 1, 5*time.Second)[0]
		if ev.Type != "exited" || ev.ID != id {
			t.Fatalf("after stop: event %+v, want exited %s", ev, id)
		}
		break
	}
}

// TestSidecarCrashLoop kills the sidecar at random points during spawns, 50 times. After each restart every
// record parses (the list answers 200) and every process in a worker cgroup belongs to a recorded worker.
func TestSidecarCrashLoop(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	// The kill points span a few spawns' time on this host: 60 ms here, much more in a TCG guest, where a
	// fixed 60 ms would end every sidecar before its first spawn.
	window := 60 * time.Millisecond
	{
		p := startSidecarProc(t, e, sock)
		start := time.Now()
		p.mustDo("POST", "/v1/workers", scSpec("b", selfBin, "child", "sleep", "4s"), 201, nil)
		window = max(window, 3*time.Since(start))
		p.kill9()
	}
	spawned := 0
	for round := range 50 {
		p := startSidecarProc(t, e, sock)
		checkCrashInvariants(t, p, v2, e.Parent, round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 2 {
					st, _ := p.do("POST", "/v1/workers", scSpec("b", selfBin, "child", "sleep", "4s"))
					if st == 0 {
						return // the sidecar is gone
					}
					mu.Lock()
					if st == 201 {
						spawned++
					}
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(rng.Int64N(int64(window))))
		p.kill9()
		wg.Wait()
	}
	p := startSidecarProc(t, e, sock)
	checkCrashInvariants(t, p, v2, e.Parent, 50)
	if spawned == 0 {
		t.Fatal("no spawn ever completed: the kill points were all too early to test anything")
	}
	t.Logf("%d spawns answered 201 across 50 crashes", spawned)
}

func checkCrashInvariants(t *testing.T, p *scProc, v2, parent string, round int) {
	t.Helper()
	// A process caught half-started by the crash (an init stub whose launcher vanished) may take a moment
	// to notice and exit; it is not a running worker. Anything still there after 3 s is.
	deadline := time.Now().Add(3 * time.Second)
	for {
		st, b := p.do("GET", "/v1/workers", "")
		if st != 200 {
			t.Fatalf("round %d: list after restart: %d %s (a record does not parse?)", round, st, b)
		}
		var recs []receipt
		must(t, json.Unmarshal(b, &recs))
		orphan, procs := "", []string(nil)
		for cg, ps := range scCgroupsWithProcs(t, v2, parent) {
			rel := strings.Trim(cg, "/")
			owned := slices.ContainsFunc(recs, func(r receipt) bool {
				rc := strings.Trim(r.Cgroup, "/")
				return rc != "" && (rel == rc || strings.HasPrefix(rel, rc+"/"))
			})
			if !owned {
				orphan, procs = cg, ps
				break
			}
		}
		if orphan == "" {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, pid := range procs {
				cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
				stat, _ := os.ReadFile("/proc/" + pid + "/stat")
				desc = append(desc, fmt.Sprintf("%s: %q stat %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), stat))
			}
			var files []string
			_ = filepath.WalkDir(p.e.State, func(path string, d os.DirEntry, err error) error {
				if err == nil && strings.Contains(path, filepath.Base(orphan)) {
					files = append(files, path)
				}
				return nil
			})
			t.Fatalf("round %d: cgroup %s runs processes but no record owns it:\n%s\nstate files for it: %v",
				round, orphan, strings.Join(desc, "\n"), files)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSidecarRefusesOtherUID: a non-root uid that is not the owner cannot use the socket: the 0600 file
// keeps it out, and with the file opened up on purpose the SO_PEERCRED check answers 403 and reports it.
func TestSidecarRefusesOtherUID(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	dir := scSocketDir(t)
	must(t, os.Chmod(dir, 0o755))
	sock := filepath.Join(dir, "s.sock")
	p := startSidecarProc(t, e, sock)
	fi, err := os.Stat(sock)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	scClientDir(t, dir)
	script := `
import sys, hlaunch_client as hc
try:
    hc.Client(sys.argv[1]).spawn({"profile": "b", "argv": ["true"]})
    print("served")
except hc.HlaunchError as e:
    print(type(e).__name__, e.code, e.status)
`
	asNobody := func() string {
		cmd := exec.Command(scPython(t), "-c", script, sock)
		cmd.Env = []string{"PYTHONPATH=" + dir, "PATH=/usr/bin:/bin"}
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python as nobody: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := asNobody(); got != "SidecarUnavailable unavailable None" {
		t.Fatalf("through the 0600 socket: %q, want SidecarUnavailable", got)
	}
	must(t, os.Chmod(sock, 0o666))
	if got := asNobody(); got != "Forbidden forbidden 403" {
		t.Fatalf("through a world-writable socket: %q, want Forbidden 403", got)
	}
	found := false
	for _, ev := range p.events("?since=0", 1, 5*time.Second) {
		found = found || (ev.Type == "refused" && ev.UID != nil && *ev.UID == 65534)
	}
	if !found {
		t.Fatal("no refused event for uid 65534")
	}
	if recs := p.list(); len(recs) != 0 {
		t.Fatalf("a refused peer started %d workers", len(recs))
	}
}

// TestSidecarBadRequests: a malformed spec, an unknown field, an invalid or reserved profile name, a missing
// profile and an oversized body each get a JSON error and start nothing.
func TestSidecarBadRequests(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	big := `{"profile":"b","argv":["true","` + strings.Repeat("x", 2<<20) + `"]}`
	for _, c := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"malformed", `{"profile":"b","argv":["true"]`, 400, "invalid"},
		{"not an object", `["b","true"]`, 400, "invalid"},
		{"unknown field", `{"profile":"b","argv":["true"],"memory":"1G"}`, 400, "invalid"},
		{"traversal profile", scSpec("../a", "true"), 400, "invalid"},
		{"reserved profile", scSpec("root", "true"), 400, "invalid"},
		{"missing profile", scSpec("nosuch", "true"), 400, "invalid"},
		{"no argv", `{"profile":"b"}`, 400, "invalid"},
		{"bad limits", `{"profile":"b","argv":["true"],"limits":{"cpu_weight":20000}}`, 400, "invalid"},
		{"oversized", big, 413, "too_large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, b := p.do("POST", "/v1/workers", c.body)
			if st != c.status || scErrCode(b) != c.code {
				t.Fatalf("%d %s, want %d %s", st, b, c.status, c.code)
			}
		})
	}
	if recs := p.list(); len(recs) != 0 {
		t.Fatalf("bad requests created %d records", len(recs))
	}
	if cgs := scCgroupsWithProcs(t, v2, e.Parent); len(cgs) != 0 {
		t.Fatalf("bad requests started processes: %v", cgs)
	}
}

// TestSidecarPythonGateway uses the Python client as the gateway would: one sidecar serving two profiles,
// launched from an environment that mirrors launch profile A. Each child reports its own environment.
func TestSidecarPythonGateway(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	dir := scSocketDir(t)
	sock := filepath.Join(dir, "s.sock")
	startSidecarProc(t, e, sock)
	scClientDir(t, dir)
	script := `
import json, sys, hlaunch_client as hc
sock, child, logdir = sys.argv[1:4]
c = hc.Client(sock)
assert c.health()["status"] == "ok"
out = {}
for prof in ("a", "b"):
    rc = c.spawn({"profile": prof, "argv": [child, "child", "report"], "log": logdir + "/" + prof + ".log"})
    final = c.wait(rc["id"], timeout=30)
    out[prof] = {"receipt": rc, "final": final}
ids = {out[p]["receipt"]["id"] for p in out}
seen = {}
for ev in c.events(since=0):
    seen.setdefault(ev.get("id"), []).append(ev["type"])
    if all("exited" in seen.get(i, []) for i in ids):
        break
out["events"] = seen
try:
    c.get("w-000000000000")
except hc.NotFound as e:
    out["not_found"] = e.status
try:
    c.spawn({"profile": "b", "argv": ["true"], "bogus": 1})
except hc.InvalidSpec as e:
    out["invalid"] = e.code
print(json.dumps(out))
`
	cmd := exec.Command(scPython(t), "-c", script, sock, selfBin, dir)
	cmd.Env = []string{"PYTHONPATH=" + dir, "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("gateway script: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		A, B struct {
			Receipt receipt `json:"receipt"`
			Final   receipt `json:"final"`
		}
		Events   map[string][]string `json:"events"`
		NotFound int                 `json:"not_found"`
		Invalid  string              `json:"invalid"`
	}
	must(t, json.Unmarshal(out, &res))
	if res.NotFound != 404 || res.Invalid != "invalid" {
		t.Fatalf("typed errors: not_found=%d invalid=%q", res.NotFound, res.Invalid)
	}
	for prof, r := range map[string]struct {
		Receipt receipt `json:"receipt"`
		Final   receipt `json:"final"`
	}{"a": res.A, "b": res.B} {
		if r.Final.State != "exited" || r.Final.ExitCode == nil || *r.Final.ExitCode != 0 {
			t.Fatalf("%s: final record %+v", prof, r.Final)
		}
		if evs := res.Events[r.Receipt.ID]; !slices.Equal(evs, []string{"started", "exited"}) {
			t.Fatalf("%s: events %v, want started then exited", prof, evs)
		}
	}
	readReport := func(prof string) childReport {
		b, err := os.ReadFile(filepath.Join(dir, prof+".log"))
		must(t, err)
		var rep childReport
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("%s child report: %v: %s", prof, err, b)
		}
		return rep
	}
	a, b := readReport("a"), readReport("b")
	if a.Env["HERMES_HOME"] != filepath.Join(e.Root, "profiles", "a") || a.Env["A_MARKER"] != "a" {
		t.Errorf("profile a child: HERMES_HOME=%q A_MARKER=%q", a.Env["HERMES_HOME"], a.Env["A_MARKER"])
	}
	if b.Env["HERMES_HOME"] != filepath.Join(e.Root, "profiles", "b") || b.Env["B_MARKER"] != "b" {
		t.Errorf("profile b child: HERMES_HOME=%q B_MARKER=%q", b.Env["HERMES_HOME"], b.Env["B_MARKER"])
	}
	for _, name := range []string{"A_MARKER", "HERMES_MODEL", "TERMINAL_ENV", "hermes_model", "firecrawl_api_key", "OPENAI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN"} {
		if v, ok := b.Env[name]; ok {
			t.Errorf("profile b child has %s=%q (from the launch profile or the sidecar's environment)", name, v)
		}
	}
	if v := b.Env["FIRECRAWL_API_KEY"]; v == "a-fc" {
		t.Errorf("profile b child got profile a's FIRECRAWL_API_KEY")
	}
	for _, name := range []string{"B_MARKER", "OPENAI_API_KEY", "GITHUB_TOKEN"} {
		if v, ok := a.Env[name]; ok {
			t.Errorf("profile a child has %s=%q", name, v)
		}
	}
}

// A sidecar keeps one connection pair to its manager for all its spawns (launcher.Config.KeepBus): the
// bus lists the same two connections of the sidecar's process after each round of spawns, where a
// launcher that dials per launch has closed its own by then. When the bus goes away (its manager restarts
// its daemon), the next spawn dials again.
func TestSidecarKeepsItsBusConnections(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	p := startScopeSidecar(t, m, e)
	p.waitReady()
	conns := func() []string {
		t.Helper()
		cmd := m.Command(context.Background(), "busctl", "--user", "list", "--unique", "--no-legend", "--no-pager")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("busctl --user list: %v", err)
		}
		var names []string
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == strconv.Itoa(p.cmd.Process.Pid) {
				names = append(names, f[0])
			}
		}
		slices.Sort(names)
		return names
	}
	var first []string
	for round := range 2 {
		for range 3 {
			var rc receipt
			p.mustDo("POST", "/v1/workers", scSpec("b", "true"), 201, &rc)
			if rc.Mode != "scoped" {
				t.Fatalf("spawn: mode %q, want scoped", rc.Mode)
			}
		}
		got := conns()
		if len(got) != 2 {
			t.Fatalf("round %d: the sidecar (pid %d) holds bus connections %v, want its two kept ones", round, p.cmd.Process.Pid, got)
		}
		if round == 0 {
			first = got
		} else if !slices.Equal(got, first) {
			t.Fatalf("the sidecar's bus connections changed between spawns: %v, then %v", first, got)
		}
	}
	// The bus daemon (a process of this test's manager) ends: the kept connections are lost.
	pid, err := m.Show(context.Background(), "dbus.service", "MainPID")
	if err != nil || pid == "" || pid == "0" {
		t.Fatalf("dbus.service MainPID %q: %v", pid, err)
	}
	n, _ := strconv.Atoi(pid)
	// Restarted by its manager, which answers once the new daemon has started: a daemon killed behind the
	// manager's back can leave the manager without a bus for longer than a spawn waits for its dial.
	if out, err := m.Systemctl(context.Background(), "restart", "dbus.service"); err != nil {
		t.Fatalf("restart dbus.service: %s %v", out, err)
	}
	if alive(n) {
		t.Fatalf("bus daemon %d still alive after its restart", n)
	}
	// A spawn on the lost connections would fail; it succeeds on two new ones (the new daemon numbers its
	// connections from :1.0 again, so the names say nothing).
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "true"), 201, &rc)
	if got := conns(); len(got) != 2 {
		t.Fatalf("after the bus restarted: the sidecar holds bus connections %v, want two", got)
	}
}

// TestSidecarSystemdUserUnits runs the example user units of contrib/systemd under a real systemd user
// manager: the first connection socket-activates the sidecar, Type=notify makes it active only once it
// serves, a spawn lands in its own scope, and `systemctl --user restart` of the sidecar leaves the worker
// running and re-adopted.
func TestSidecarSystemdUserUnits(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	e := newEnv(t)
	ctx := context.Background()
	unitDir := filepath.Join(m.RuntimeDir, "systemd", "user")
	must(t, os.MkdirAll(unitDir, 0o755))
	for _, name := range []string{"hlaunch-sidecar.socket", "hlaunch-sidecar.service"} {
		b, err := os.ReadFile(filepath.Join("..", "contrib", "systemd", "user", name))
		must(t, err)
		unit := strings.ReplaceAll(string(b), "%h/.local/bin/hlaunch sidecar",
			fmt.Sprintf("%s --root %s --state-dir %s sidecar", hlaunchBin, e.Root, e.State))
		must(t, os.WriteFile(filepath.Join(unitDir, name), []byte(unit), 0o644))
	}
	// No daemon-reload (the harness's /run/systemd tmpfs is too small for its safety margin): units that were
	// never referenced are loaded from disk on first use.
	if out, err := m.Systemctl(ctx, "start", "hlaunch-sidecar.socket"); err != nil {
		t.Fatalf("start socket: %s %v\n%s", out, err, m.Log())
	}
	if st, _ := m.Show(ctx, "hlaunch-sidecar.service", "ActiveState"); st != "inactive" {
		t.Fatalf("the service runs before any connection: %s", st)
	}
	sock := filepath.Join(m.RuntimeDir, "hlaunch", "sidecar.sock")
	p := &scProc{t: t, e: e, sock: sock, client: scUnixClient(sock)}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st, _ := p.do("GET", "/v1/health", ""); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			status, _ := m.Systemctl(ctx, "status", "hlaunch-sidecar.service")
			t.Fatalf("socket activation never answered:\n%s\n%s", status, m.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, _ := m.Show(ctx, "hlaunch-sidecar.service", "ActiveState"); st != "active" {
		t.Fatalf("after READY=1 the service is %q, want active", st)
	}
	pid1, _ := m.Show(ctx, "hlaunch-sidecar.service", "MainPID")

	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", selfBin, "child", "sleep", "120s"), 201, &rc)
	if rc.Mode != "scoped" || rc.Unit == "" {
		t.Fatalf("spawn through the unit: mode %q unit %q, want a scope of its own", rc.Mode, rc.Unit)
	}
	if out, err := m.Systemctl(ctx, "restart", "hlaunch-sidecar.service"); err != nil {
		t.Fatalf("restart: %s %v", out, err)
	}
	pid2, _ := m.Show(ctx, "hlaunch-sidecar.service", "MainPID")
	if pid2 == pid1 || pid2 == "0" {
		t.Fatalf("MainPID %s -> %s: the sidecar did not restart", pid1, pid2)
	}
	if !alive(rc.PID) {
		t.Fatal("the worker died with the sidecar's restart")
	}
	p.client.CloseIdleConnections()
	ev := p.events("?since=0", 1, 10*time.Second)[0]
	if ev.Type != "adopted" || ev.ID != rc.ID || !ev.Initial {
		t.Fatalf("first event after restart %+v, want adopted %s", ev, rc.ID)
	}
	var r receipt
	p.mustDo("POST", "/v1/workers/"+rc.ID+"/stop", `{"grace":"1s"}`, 200, &r)
	if r.State != "exited" || alive(rc.PID) {
		t.Fatalf("stop after restart: %s alive=%v", r.State, alive(rc.PID))
	}
	if _, err := m.Systemctl(ctx, "stop", "hlaunch-sidecar.socket", "hlaunch-sidecar.service"); err != nil {
		t.Error(err)
	}
}

// A sandboxed worker spawned through the sidecar cannot reach the sidecar's socket (it could spawn or
// signal its siblings through it); an unsandboxed one can, so the check is not vacuous.
func TestSidecarSocketHiddenFromSandbox(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	dir, err := os.MkdirTemp(hostBase, "hl-sc-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	// The workers run as B's home's owner: the socket is its group's (0660), so an unsandboxed one may
	// connect and the sandboxed one's failure is the view's doing.
	must(t, os.Chmod(dir, 0o755))
	p := startSidecarProc(t, e, sock, "--socket-group", strconv.Itoa(profileUID("b")))
	for _, sandbox := range []bool{false, true} {
		spec, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": sandbox,
			"argv": []string{selfBin, "child", "report", "connect:" + sock}})
		st, b := p.do("POST", "/v1/workers", string(spec))
		if st != 201 {
			t.Fatalf("spawn (sandbox %v): %d %s", sandbox, st, b)
		}
		var rc struct{ ID, Log string }
		must(t, json.Unmarshal(b, &rc))
		if st, b := p.do("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", ""); st != 200 {
			t.Fatalf("wait: %d %s", st, b)
		}
		out, err := os.ReadFile(rc.Log)
		must(t, err)
		var rep childReport
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("report in %s: %v: %q", rc.Log, err, out)
		}
		got := rep.Checks["connect:"+sock]
		if sandbox && got == "ok" {
			t.Fatal("a sandboxed worker reached the sidecar's socket")
		}
		if !sandbox && got != "ok" {
			t.Fatalf("an unsandboxed worker cannot reach the socket either (%s): the check proves nothing", got)
		}
	}
}

// A worker killed by the kernel's OOM killer for passing its memory limit is announced as "oom" on the
// event stream, with the record saying so.
func TestSidecarOOMEvent(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	spec, _ := json.Marshal(map[string]any{"profile": "b", "limits": map[string]any{"memory": 64 << 20},
		"argv": []string{selfBin, "child", "memhog", "256"}})
	st, b := p.do("POST", "/v1/workers", string(spec))
	if st != 201 {
		t.Fatalf("spawn: %d %s", st, b)
	}
	var rc struct{ ID string }
	must(t, json.Unmarshal(b, &rc))
	// started, then oom (and exited) for this worker; other events may come between.
	deadline := time.Now().Add(30 * time.Second)
	var seen []string
	for since := uint64(0); time.Now().Before(deadline); {
		for _, ev := range p.events(fmt.Sprintf("?since=%d", since), 1, time.Until(deadline)) {
			since = ev.Seq
			if ev.ID != rc.ID {
				continue
			}
			seen = append(seen, ev.Type)
			if ev.Type == "oom" {
				if !ev.OOMKilled {
					t.Errorf("oom event without oom_killed: %+v", ev)
				}
				return
			}
		}
	}
	t.Fatalf("no oom event for %s; its events: %v", rc.ID, seen)
}
