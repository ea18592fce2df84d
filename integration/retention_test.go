package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// countFiles counts the names in dir that start with prefix and end with suffix.
func countFiles(t *testing.T, dir, prefix, suffix string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0
	}
	must(t, err)
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), suffix) && !strings.HasSuffix(e.Name(), ".exit.json") {
			n++
		}
	}
	return n
}

// Retention is on by default and bounded: a sidecar collects ended workers' records and logs and prunes
// the ledger by its flags without being asked, while `hlaunch gc` (which removes logs too, in one pass) and
// `hlaunch ps` run beside it; ps never fails because a record vanished under it.
func TestRetentionBesideLiveSidecar(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--keep", "5", "--max-age", "0", "--ledger-keep", "8", "--gc-interval", "100ms")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var psFail, gcFail []string
	var mu sync.Mutex
	wg.Add(2)
	go func() { // the CLI beside the sidecar: ps and gc in a loop
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r := e.run("ps", "--json"); r.Code != 0 {
				mu.Lock()
				psFail = append(psFail, r.Stderr)
				mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r := e.run("gc", "--keep", "3", "--max-age", "0", "--ledger-keep", "8", "--cgroup-parent", e.Parent); r.Code != 0 {
				mu.Lock()
				gcFail = append(gcFail, r.Stderr)
				mu.Unlock()
			}
		}
	}()
	for i := 0; i < 40; i++ {
		var rc receipt
		p.mustDo("POST", "/v1/workers", scSpec("b", "sh", "-c", "echo out"), 201, &rc)
	}
	close(stop)
	wg.Wait()
	if len(psFail) > 0 || len(gcFail) > 0 {
		t.Errorf("beside the sidecar: %d ps failures %q, %d gc failures %q", len(psFail), psFail, len(gcFail), gcFail)
	}
	// Within a few collections, everything is within the bounds, without anyone running gc.
	workers, logs, ledger := filepath.Join(e.State, "workers"), filepath.Join(e.State, "logs"), filepath.Join(e.State, "ledger")
	deadline := time.Now().Add(60 * time.Second) // a guest lane under load takes minutes for the whole test
	for {
		w, l, g := countFiles(t, workers, "w-", ".json"), countFiles(t, logs, "w-", ".log"), countFiles(t, ledger, "w-", ".json")
		cg := scCgroupsWithProcs(t, v2, e.Parent)
		if w <= 5 && l <= 5 && g <= 8 && len(cg) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 40 spawns: %d records (want <= 5), %d logs (<= 5), %d ledger records (<= 8), cgroups with processes %v", w, l, g, cg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A worker whose shim died with it (killed by a worker of the launcher's uid, say) leaves its empty cgroup
// behind; the next collection removes that cgroup even while the record is kept by the retention.
func TestCollectionRemovesCgroupOfKeptRecord(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, "sleep", "30")
	must(t, syscall.Kill(rc.ShimPID, syscall.SIGKILL)) // the shim this test started, by its PID
	killDir(filepath.Join(v2, rc.Cgroup))              // the worker, through the cgroup the test's env owns
	deadline := time.Now().Add(10 * time.Second)
	for alive(rc.PID) || alive(rc.ShimPID) {
		if time.Now().After(deadline) {
			t.Fatal("worker or shim still alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(v2, rc.Cgroup)); err != nil {
		t.Fatalf("the cgroup went with the shim already: %v", err)
	}
	// A killed multi-threaded shim's leader reads as a zombie while its other threads are still exiting,
	// members of the cgroup yet: the worker has ended once the cgroup, in every hierarchy, has none.
	waitCgroupEmpty(t, v2, rc.Cgroup)
	if r := e.run("gc", "--cgroup-parent", e.Parent); r.Code != 0 {
		t.Fatalf("gc: %d %s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(v2, rc.Cgroup)); !os.IsNotExist(err) {
		t.Errorf("gc left the ended worker's empty cgroup %s (%v)", rc.Cgroup, err)
	}
	if st, _ := e.record(rc.ID); st.State != "exited" {
		t.Errorf("record of the ended worker: state %q, want it kept (exited)", st.State)
	}
}

// plantTemp makes a file named as internal/state names its temp files, last written at when.
func plantTemp(t *testing.T, dir, name string, when time.Time) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, []byte(`{"id":"half`), 0o600))
	must(t, os.Chtimes(p, when, when))
	return p
}

// A writer killed between its temp file and the rename (a shim SIGKILLed mid-write) leaves the temp file
// in the state directory, a tmpfs, for ever: `hlaunch gc` removes those of dead writers (old and held by
// no lock) in the worker and ledger directories and counts them (--json too); it keeps a fresh one (its
// writer may be about to lock it), one a live writer holds locked however old, and a symbolic link in a
// temp file's name (never followed: its target outside is untouched).
func TestGCSweepsDeadWritersTempFiles(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, "true")
	workers, ledger := filepath.Join(e.State, "workers"), filepath.Join(e.State, "ledger")
	old, now := time.Now().Add(-10*time.Minute), time.Now()
	deadW := plantTemp(t, workers, "."+rc.ID+".exit.tmp-1234", old)
	deadL := plantTemp(t, ledger, ".w-0123456789ab.tmp-5678", old)
	fresh := plantTemp(t, workers, ".w-0123456789ac.tmp-42", now)
	locked := plantTemp(t, ledger, ".w-0123456789ad.tmp-43", old)
	f, err := os.Open(locked)
	must(t, err)
	defer f.Close()
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX)) // a live writer, stalled mid-write
	target := filepath.Join(t.TempDir(), "outside")
	must(t, os.WriteFile(target, []byte("keep"), 0o600))
	must(t, os.Chtimes(target, old, old))
	link := filepath.Join(workers, ".w-0123456789ae.tmp-44")
	must(t, os.Symlink(target, link))

	r := e.run("gc", "--json", "--cgroup-parent", e.Parent)
	if r.Code != 0 {
		t.Fatalf("gc: %d %s", r.Code, r.Stderr)
	}
	var rep struct {
		TempsRemoved *int `json:"temps_removed"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	if rep.TempsRemoved == nil || *rep.TempsRemoved != 2 {
		t.Errorf("gc --json: %s; want temps_removed 2", r.Stdout)
	}
	for p, want := range map[string]bool{deadW: false, deadL: false, fresh: true, locked: true, link: true, target: true} {
		if _, err := os.Lstat(p); (err == nil) != want {
			t.Errorf("after gc: %s there = %v, want %v", p, err == nil, want)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target outside: %q, %v", b, err)
	}
	if st, _ := e.record(rc.ID); st.ID != rc.ID {
		t.Errorf("the worker's own record went with the temp files: %+v", st)
	}
	// The stalled writer dies (its lock goes with it): the next gc takes its temp file, and says so.
	f.Close()
	r = e.run("gc", "--cgroup-parent", e.Parent)
	if r.Code != 0 || !strings.Contains(r.Stdout, "removed 1 temp files of dead writers") {
		t.Errorf("gc after the writer's end: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Lstat(locked); !os.IsNotExist(err) {
		t.Errorf("the dead writer's temp file is still there: %v", err)
	}
}

// The sidecar's own collection sweeps dead writers' temp files too, without anyone running gc, and keeps
// a fresh one.
func TestSidecarSweepsDeadWritersTempFiles(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	workers, ledger := filepath.Join(e.State, "workers"), filepath.Join(e.State, "ledger")
	must(t, os.MkdirAll(workers, 0o700))
	must(t, os.MkdirAll(ledger, 0o700))
	old := time.Now().Add(-10 * time.Minute)
	dead := []string{
		plantTemp(t, workers, ".w-0123456789ab.exit.tmp-77", old),
		plantTemp(t, ledger, ".w-0123456789ab.tmp-78", old),
	}
	fresh := plantTemp(t, workers, ".w-0123456789ac.tmp-79", time.Now())
	startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--gc-interval", "100ms")
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range dead {
		for {
			if _, err := os.Lstat(p); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sidecar's collection left the dead writer's temp file %s", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Errorf("the sidecar's collection took a fresh temp file: %v", err)
	}
}
