package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procStatus returns a number of /proc/<pid>/status (VmRSS in KiB, Threads, ...), 0 when it has none.
func procStatus(pid int, field string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// A live detached worker costs the sidecar no OS thread. A goroutine blocked in waitid to reap a shim
// holds a thread for the shim's life, and the Go runtime never ends a thread: such a sidecar would keep
// as many threads as it ever had workers alive at once, and its RSS would grow over a long soak. With 64
// workers alive its thread count may not grow by anything near 64.
func TestSidecarThreadsPerLiveWorker(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	dir := scSocketDir(t)
	must(t, os.Chmod(dir, 0o755))
	release := filepath.Join(dir, "release")
	p := startSidecarProc(t, e, filepath.Join(dir, "s.sock"))
	pid := p.cmd.Process.Pid
	spawn := func(argv ...string) {
		b, _ := json.Marshal(map[string]any{"profile": "b", "argv": argv})
		if st, out := p.do("POST", "/v1/workers", string(b)); st != 201 {
			t.Fatalf("spawn: %d %s", st, out)
		}
	}
	for i := 0; i < 8; i++ { // the sidecar's own threads, warmed up by a few spawns
		spawn("true")
	}
	before, rss0 := procStatus(pid, "Threads"), procStatus(pid, "VmRSS")
	const live = 64
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	for i := 0; i < live; i++ {
		spawn("sh", "-c", "while [ ! -e "+release+" ]; do sleep 0.2; done")
	}
	during := procStatus(pid, "Threads")
	must(t, os.WriteFile(release, nil, 0o644))
	deadline := time.Now().Add(60 * time.Second)
	for len(scCgroupsWithProcs(t, v2, e.Parent)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the release: workers still running")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("sidecar threads: %d, with %d workers alive %d, after %d; RSS %d KiB, after %d KiB", before, live, during,
		procStatus(pid, "Threads"), rss0, procStatus(pid, "VmRSS"))
	if during-before >= live/2 {
		t.Errorf("the sidecar's threads went from %d to %d with %d workers alive: a thread per live worker", before, during, live)
	}
}
