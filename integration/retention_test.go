package integration

import (
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
	deadline := time.Now().Add(20 * time.Second)
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
