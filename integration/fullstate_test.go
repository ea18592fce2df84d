package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A small state filesystem: the tmpfs a root sidecar's /run/hlaunch is, made tiny so that one worker's
// output could fill it. These tests mount it themselves, on a directory of their own, and unmount it at
// the end (after every worker in the test's cgroup parent is killed), even when they fail.

// logRecord is the part of a worker's record the full-filesystem tests read.
type logRecord struct {
	receipt
	Reason      string `json:"reason"`
	LogBytes    int64  `json:"log_bytes"`
	LogDropped  int64  `json:"log_dropped_bytes"`
	LogRotated  int    `json:"log_rotations"`
	LogError    string `json:"log_error"`
	LedgerError string `json:"ledger_error"`
}

// smallFS mounts a tmpfs with opts (size=..., nr_inodes=...) on a new directory and returns it. The
// cleanup kills every worker under e's cgroup parent first (a worker's shim holds its log open), then
// unmounts (lazily when something still holds it) and checks mountinfo.
func smallFS(t *testing.T, e *env, opts string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	must(t, os.Mkdir(dir, 0o700))
	if err := unix.Mount("hlaunch-test-small", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,"+opts); err != nil {
		t.Fatalf("mount a tmpfs (%s) on %s: %v", opts, dir, err)
	}
	t.Cleanup(func() {
		cleanupCgroups(t, e.Parent)
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v (detached lazily)", dir, err)
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
		for _, m := range mounts() {
			if m.point == dir {
				t.Errorf("%s is still mounted", dir)
			}
		}
	})
	return dir
}

// fill writes zeros into dir/name until the filesystem says it is full (ENOSPC): no block is left.
func fill(t *testing.T, dir, name string) { fillLeaving(t, dir, name, 0) }

// fillLeaving is fill, then gives back the last leave bytes.
func fillLeaving(t *testing.T, dir, name string, leave int64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	must(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// The last pages a partial write could take.
	for n := 4096; n > 0; n /= 2 {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	if leave > 0 {
		st, err := f.Stat()
		must(t, err)
		must(t, f.Truncate(st.Size()-leave))
	}
}

// fillInodes creates empty files in dir until the filesystem has no inode left.
func fillInodes(t *testing.T, dir string) {
	t.Helper()
	for i := 0; ; i++ {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("filler-%d", i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, unix.ENOSPC) {
			return
		}
		must(t, err)
		f.Close()
		if i > 100000 {
			t.Fatal("the filesystem never ran out of inodes")
		}
	}
}

// detachAs starts argv detached for profile with flags, placed under e's cgroup parent.
func (e *env) detachAs(profile string, flags []string, argv ...string) logRecord {
	e.t.Helper()
	args := append([]string{"exec", "-p", profile, "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent}, flags...)
	args = append(append(args, "--"), argv...)
	r := e.run(args...)
	if r.Code != 0 {
		e.t.Fatalf("hlaunch %v: exit %d: %s", args, r.Code, r.Stderr)
	}
	var rc logRecord
	if err := json.Unmarshal([]byte(r.Stdout), &rc); err != nil {
		e.t.Fatalf("receipt: %v: %q", err, r.Stdout)
	}
	return rc
}

// waitEnd waits (bounded) for the worker to end and returns its final record.
func (e *env) waitEnd(id string) logRecord {
	e.t.Helper()
	r := e.run("wait", "--json", "--timeout", "60s", id)
	var rec logRecord
	if err := json.Unmarshal([]byte(r.Stdout), &rec); err != nil {
		e.t.Fatalf("wait %s: exit %d: %v: %q %q", id, r.Code, err, r.Stdout, r.Stderr)
	}
	if rec.EndedAt == "" {
		e.t.Fatalf("wait %s: exit %d: the record has no end: %+v (%s)", id, r.Code, rec, r.Stderr)
	}
	return rec
}

// waitFile waits up to 60 s for path to exist.
func waitFile(t *testing.T, path, what string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s never appeared", what, path)
		}
	}
}

// gatedArgv is a worker that writes what (a shell command's output) to its stdout, then touches
// dir/<name>.wrote and runs until dir/<name>.go exists.
func gatedArgv(dir, name, what string) []string {
	return []string{"sh", "-c", what + `; touch "$1/$2.wrote"; while [ ! -e "$1/$2.go" ]; do sleep 0.05; done`, "sh", dir, name}
}

// One worker writes 16 MiB into its log on a 5 MiB state filesystem: its shim rotates the log at
// --log-max (3M) and drops what would take the space kept for records, the worker's record accounts for
// every byte (written plus dropped), and while it runs and after, other profiles' workers start and
// their ends are recorded. Before bounded output, the worker's log filled the filesystem and every other
// spawn failed with "no space left on device".
func TestFullStateBoundedLog(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	e.State = filepath.Join(smallFS(t, e, "size=5m"), "state")
	gate := workerDir(t)
	logs := filepath.Join(e.State, "logs")
	must(t, os.MkdirAll(logs, 0o700))
	const total = 16 << 20
	const logMax = 3 << 20
	log := filepath.Join(logs, "big.log")
	big := e.detachAs("b", []string{"--log", log, "--log-max", "3M"}, gatedArgv(gate, "big", fmt.Sprintf("head -c %d /dev/zero", total))...)
	waitFile(t, filepath.Join(gate, "big.wrote"), "the 16 MiB writer")
	// The running worker's record says what its output did (rewritten at most once a second).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var rec logRecord
		r := e.run("status", "--json", big.ID)
		if err := json.Unmarshal([]byte(r.Stdout), &rec); err != nil {
			t.Fatalf("status: %v: %q %q", err, r.Stdout, r.Stderr)
		}
		if rec.State == "running" && rec.LogDropped > 0 && rec.LogRotated >= 1 && rec.LogError != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running writer's record never said its output was rotated and dropped: %+v", rec)
		}
	}

	// While it runs: a worker of another profile starts and runs, and a short one starts and ends.
	second := e.detachAs("a", nil, gatedArgv(gate, "second", "true")...)
	short := e.detachAs("a", []string{"--log", filepath.Join(logs, "short.log")}, "sh", "-c", "echo short")
	if rec := e.waitEnd(short.ID); rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Errorf("the short worker beside the writer: %+v", rec)
	}
	must(t, os.WriteFile(filepath.Join(gate, "second.go"), nil, 0o600))
	if rec := e.waitEnd(second.ID); rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Errorf("the second running worker's end: %+v", rec)
	}

	must(t, os.WriteFile(filepath.Join(gate, "big.go"), nil, 0o600))
	rec := e.waitEnd(big.ID)
	if rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Errorf("the writer's end: exit %v signal %q, want 0 (its writes never failed: the shim reads them all)", rec.ExitCode, rec.Signal)
	}
	var sizes int64
	for _, p := range []string{log, log + ".1"} {
		if st, err := os.Stat(p); err == nil {
			sizes += st.Size()
			if st.Size() > logMax+64<<10 {
				t.Errorf("%s: %d bytes, more than --log-max (%d) and one pipe buffer", p, st.Size(), logMax)
			}
		}
	}
	t.Logf("log: %d bytes in the files, record: log_bytes %d log_dropped_bytes %d log_rotations %d log_error %q", sizes, rec.LogBytes, rec.LogDropped, rec.LogRotated, rec.LogError)
	if rec.LogBytes+rec.LogDropped != total {
		t.Errorf("record: log_bytes %d + log_dropped_bytes %d != the %d bytes written", rec.LogBytes, rec.LogDropped, total)
	}
	if rec.LogDropped == 0 || rec.LogRotated < 1 || rec.LogError == "" {
		t.Errorf("record: log_dropped_bytes %d, log_rotations %d, log_error %q: want output dropped (the filesystem is smaller than the log's bound), at least one rotation and why", rec.LogDropped, rec.LogRotated, rec.LogError)
	}
	if sizes > rec.LogBytes {
		t.Errorf("the log files hold %d bytes, more than the %d the record says were written", sizes, rec.LogBytes)
	}

	// After: the filesystem still has room for a new worker's records and its end.
	after := e.detachAs("b", nil, "true")
	if rec := e.waitEnd(after.ID); rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Errorf("a worker after the writer: %+v", rec)
	}
}

// noWorkers fails when a dir of the two (workers, ledger) holds a worker record (or a record's temp
// file) or e's cgroup parent a worker's cgroup, other than those of the worker ids in keep.
func noWorkers(t *testing.T, e *env, workers, ledger string, keep ...string) {
	t.Helper()
	kept := func(name string) bool {
		for _, id := range keep {
			if strings.Contains(name, id) {
				return true
			}
		}
		return false
	}
	for _, d := range []string{workers, ledger} {
		ents, _ := os.ReadDir(d)
		for _, x := range ents {
			if strings.Contains(x.Name(), "w-") && !kept(x.Name()) {
				t.Errorf("left behind: %s", filepath.Join(d, x.Name()))
			}
		}
	}
	v2 := requireCgroup2(t)
	ents, _ := os.ReadDir(filepath.Join(v2, e.Parent))
	for _, x := range ents {
		if x.IsDir() && !kept(x.Name()) {
			t.Errorf("left behind: the cgroup %s", filepath.Join(e.Parent, x.Name()))
		}
	}
}

// A spawn on a full state filesystem (40 KiB left, less than half the 128 KiB a 2 MiB filesystem keeps
// for records) is refused before anything starts: one line naming the state directory, exit 75, no
// record, no cgroup, no process. A worker that was running meanwhile ends, and its end is recorded in
// the space the spawn left.
func TestFullStateSpawnRefused(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	e.State = filepath.Join(smallFS(t, e, "size=2m"), "state")
	gate := workerDir(t)
	running := e.detachAs("a", nil, gatedArgv(gate, "running", "true")...)
	fillLeaving(t, filepath.Dir(e.State), "filler", 40<<10)
	r := e.run("exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--", "sh", "-c", `touch "$1/ran"`, "sh", gate)
	if r.Code != 75 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, e.State) || r.Stdout != "" {
		t.Fatalf("spawn on a full state filesystem: exit %d, stdout %q, stderr %q; want exit 75 and one line naming %s", r.Code, r.Stdout, r.Stderr, e.State)
	}
	t.Logf("stderr: %s", r.Stderr)
	if _, err := os.Stat(filepath.Join(gate, "ran")); err == nil {
		t.Error("the worker ran")
	}
	noWorkers(t, e, filepath.Join(e.State, "workers"), filepath.Join(e.State, "ledger"), running.ID)
	// JSON: the stable code.
	r = e.run("exec", "--json", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--", "true")
	if r.Code != 75 || !strings.Contains(r.Stdout, `"code":"no_space"`) {
		t.Errorf("--json spawn on a full state filesystem: exit %d, %q", r.Code, r.Stdout)
	}
	noWorkers(t, e, filepath.Join(e.State, "workers"), filepath.Join(e.State, "ledger"), running.ID)

	must(t, os.WriteFile(filepath.Join(gate, "running.go"), nil, 0o600))
	if rec := e.waitEnd(running.ID); rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Errorf("the worker that ran beside the refused spawns: %+v", rec)
	}
}

// A ledger directory on a filesystem with no inode left (its free space passes the check before the
// spawn; the shim's write of the start record fails): the detached launch fails with one line naming the
// ledger directory, never exit 0 with the record lost, and nothing is left running or recorded.
func TestFullLedgerDetachFails(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	ledger := filepath.Join(smallFS(t, e, "size=4m,nr_inodes=16"), "ledger")
	must(t, os.Mkdir(ledger, 0o700))
	fillInodes(t, filepath.Dir(ledger))
	gate := workerDir(t)
	r := e.run("--ledger-dir", ledger, "exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent,
		"--", "sh", "-c", `echo $$ > "$1/pid"; exec sleep 120`, "sh", gate)
	if r.Code != 75 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, ledger) {
		t.Fatalf("detached launch with a full ledger: exit %d, stdout %q, stderr %q; want exit 75 and one line naming %s", r.Code, r.Stdout, r.Stderr, ledger)
	}
	t.Logf("stderr: %s", r.Stderr)
	if b, err := os.ReadFile(filepath.Join(gate, "pid")); err == nil {
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err == nil && alive(pid) {
			t.Errorf("the worker (pid %d) runs on after its launch failed", pid)
		}
	}
	noWorkers(t, e, filepath.Join(e.State, "workers"), ledger)
}

// A worker whose ledger end record cannot be written (the ledger's filesystem ran out of inodes while it
// ran): its worker record keeps its end and says why the ledger does not (ledger_error).
func TestFullLedgerEndRecorded(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	ledger := filepath.Join(smallFS(t, e, "size=4m,nr_inodes=32"), "ledger")
	must(t, os.Mkdir(ledger, 0o700))
	gate := workerDir(t)
	args := append([]string{"--ledger-dir", ledger, "exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--"}, gatedArgv(gate, "w", "true")...)
	rc := e.run(args...)
	if rc.Code != 0 {
		t.Fatalf("launch: exit %d: %s", rc.Code, rc.Stderr)
	}
	var w logRecord
	must(t, json.Unmarshal([]byte(rc.Stdout), &w))
	fillInodes(t, filepath.Dir(ledger))
	must(t, os.WriteFile(filepath.Join(gate, "w.go"), nil, 0o600))
	r := e.run("--ledger-dir", ledger, "wait", "--json", "--timeout", "60s", w.ID)
	var rec logRecord
	if err := json.Unmarshal([]byte(r.Stdout), &rec); err != nil {
		t.Fatalf("wait: exit %d: %v: %q %q", r.Code, err, r.Stdout, r.Stderr)
	}
	t.Logf("ledger_error: %s", rec.LedgerError)
	if rec.EndedAt == "" || rec.ExitCode == nil || *rec.ExitCode != 0 || !strings.Contains(rec.LedgerError, "no space") {
		t.Errorf("record of a worker whose ledger end could not be written: ended_at %q exit %v ledger_error %q; want the end and why the ledger lacks it", rec.EndedAt, rec.ExitCode, rec.LedgerError)
	}
}

// The same through a real sidecar with a warm slot: the writer takes the slot (a shim started before its
// spec was known), its per-worker log under <state-dir>/logs is bounded and its record accounts for the
// output; another profile's spawn succeeds while it runs; once the filesystem is full, a spawn is
// answered 503 no_space naming the state directory and leaves nothing.
func TestFullStateSidecarWarm(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	e.State = filepath.Join(smallFS(t, e, "size=5m"), "state")
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--warm", "1")
	waitWarm(t, p, 1)
	warm := waitShims(t, p.cmd.Process.Pid, 1)
	gate := workerDir(t)
	const total = 16 << 20
	spec, _ := json.Marshal(map[string]any{"profile": "b", "log_max": 3 << 20,
		"argv": gatedArgv(gate, "big", fmt.Sprintf("head -c %d /dev/zero", total))})
	var big logRecord
	p.mustDo("POST", "/v1/workers", string(spec), 201, &big)
	if len(warm) != 1 || big.ShimPID != warm[0] {
		t.Errorf("the writer's shim %d is not the warm slot's %v", big.ShimPID, warm)
	}
	if big.Log != filepath.Join(e.State, "logs", big.ID+".log") {
		t.Errorf("the writer's log %q, want the sidecar's per-worker log", big.Log)
	}
	waitFile(t, filepath.Join(gate, "big.wrote"), "the 16 MiB writer")

	var short logRecord
	p.mustDo("POST", "/v1/workers", scSpec("a", "true"), 201, &short)
	p.mustDo("GET", "/v1/workers/"+short.ID+"/wait?timeout=60s", "", 200, &short)
	if short.ExitCode == nil || *short.ExitCode != 0 {
		t.Errorf("the spawn beside the writer: %+v", short)
	}

	must(t, os.WriteFile(filepath.Join(gate, "big.go"), nil, 0o600))
	var rec logRecord
	p.mustDo("GET", "/v1/workers/"+big.ID+"/wait?timeout=60s", "", 200, &rec)
	t.Logf("record: log_bytes %d log_dropped_bytes %d log_rotations %d log_error %q", rec.LogBytes, rec.LogDropped, rec.LogRotated, rec.LogError)
	if rec.LogBytes+rec.LogDropped != total || rec.LogDropped == 0 || rec.LogRotated < 1 {
		t.Errorf("record: log_bytes %d + log_dropped_bytes %d (want %d), log_rotations %d", rec.LogBytes, rec.LogDropped, total, rec.LogRotated)
	}
	for _, f := range []string{big.Log, big.Log + ".1"} {
		if st, err := os.Stat(f); err == nil && st.Size() > 3<<20+64<<10 {
			t.Errorf("%s: %d bytes, more than log_max and one pipe buffer", f, st.Size())
		}
	}

	fill(t, filepath.Dir(e.State), "filler")
	st, b := p.do("POST", "/v1/workers", scSpec("a", "sh", "-c", `touch "$1/ran"`, "sh", gate))
	if st != 503 || scErrCode(b) != "no_space" || !strings.Contains(string(b), e.State) {
		t.Errorf("spawn on the full state filesystem: %d %s, want 503 no_space naming %s", st, b, e.State)
	}
	if _, err := os.Stat(filepath.Join(gate, "ran")); err == nil {
		t.Error("the refused spawn's worker ran")
	}
	var h struct {
		Status     string `json:"status"`
		SpawnError string `json:"spawn_error"`
	}
	if p.mustDo("GET", "/v1/health", "", 200, &h); h.Status != "degraded" || !strings.Contains(h.SpawnError, "no space for records") {
		t.Errorf("health after a spawn refused for want of space: %+v, want degraded with the spawn's error", h)
	}
	for _, r := range p.list() {
		if r.ID != big.ID && r.ID != short.ID {
			t.Errorf("left behind: the record of %s (%s)", r.ID, r.State)
		}
	}
}

// ioWritten is /proc/<pid>/io's wchar: the bytes the process has written (-1 when it is gone).
func ioWritten(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		var n int64
		if _, err := fmt.Sscanf(line, "wchar: %d", &n); err == nil {
			return n
		}
	}
	return -1
}

// A shim that does not read (the test stops it) holds its worker back: the worker blocks in its write
// to the pipe (the kernel's wchan says so) having written no more than what the log has, one pipe's
// capacity and the one chunk the shim holds. Let go, the shim copies the rest: every byte reaches the
// log. Before bounded output the worker wrote into the file itself and finished while its shim was
// stopped.
func TestShimLogBackPressure(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	gate := workerDir(t)
	log := filepath.Join(t.TempDir(), "w.log")
	const total = 64 << 20
	w := e.detachAs("b", []string{"--log", log, "--log-max", "128M"}, "sh", "-c",
		fmt.Sprintf(`while [ ! -e "$1/go" ]; do sleep 0.02; done; exec head -c %d /dev/zero`, total), "sh", gate)
	shim, err := os.FindProcess(w.ShimPID)
	must(t, err)
	must(t, shim.Signal(unix.SIGSTOP))
	stopped := true
	defer func() {
		if stopped {
			_ = shim.Signal(unix.SIGCONT)
		}
	}()
	must(t, os.WriteFile(filepath.Join(gate, "go"), nil, 0o600))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", w.PID))
		if strings.Contains(string(wchan), "pipe_write") {
			break
		}
		if !alive(w.PID) {
			t.Fatalf("the worker wrote all its output (and ended) while its shim was stopped: nothing held it back")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never blocked in a pipe write while its shim was stopped (wchan %q, %d bytes written)", wchan, ioWritten(w.PID))
		}
	}
	written := ioWritten(w.PID)
	var inLog int64
	if st, err := os.Stat(log); err == nil {
		inLog = st.Size()
	}
	t.Logf("blocked: the worker has written %d bytes, the log holds %d", written, inLog)
	if written < 0 || written > inLog+2*64<<10 {
		t.Errorf("the blocked worker has written %d bytes, the log holds %d: more than one pipe and one chunk (%d) between them", written, inLog, 2*64<<10)
	}
	must(t, shim.Signal(unix.SIGCONT))
	stopped = false
	rec := e.waitEnd(w.ID)
	if rec.ExitCode == nil || *rec.ExitCode != 0 || rec.LogBytes != total || rec.LogDropped != 0 {
		t.Errorf("record: exit %v, log_bytes %d, log_dropped_bytes %d; want 0, %d, 0", rec.ExitCode, rec.LogBytes, rec.LogDropped, total)
	}
	if st, err := os.Stat(log); err != nil || st.Size() != total {
		t.Errorf("the log: %v, %v; want %d bytes", st, err, total)
	}
}
