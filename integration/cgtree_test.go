package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// nestArgv is a root worker that makes a cgroup "nested" (and "nested/deeper") below its own in every
// hierarchy it is in (roots are the hierarchy mounts), moves itself into the deepest, touches ready and
// sleeps.
func nestArgv(ready string, roots []string) []string {
	script := `ready=$1; shift
for root in "$@"; do
	while IFS=: read -r _ _ path; do
		d=$root$path
		[ "$path" != / ] && [ -d "$d" ] && [ -f "$d/cgroup.procs" ] || continue
		mkdir -p "$d/nested/deeper" && echo $$ > "$d/nested/deeper/cgroup.procs"
	done < /proc/self/cgroup
done
touch "$ready"
exec sleep 300`
	return append([]string{"sh", "-c", script, "nest", ready}, roots...)
}

// A worker that nested cgroups below its own (a root worker of a root-owned home may) leaves nothing
// behind in any hierarchy once stopped: its cgroup is removed depth-first, by the shim or by stop. Removing
// only the top directory would fail with EBUSY ("still has members", though none has) and leave the
// worker's cgroup behind.
func TestNestedCgroupsRemovedAtEnd(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := rootHomeEnv(t)
	ready := filepath.Join(t.TempDir(), "ready")
	roots := testutil.CgroupRoots()
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, nestArgv(ready, roots)...)
	waitFile(t, ready, "the worker's nested cgroups")
	nested := 0
	for _, r := range roots {
		if _, err := os.Stat(filepath.Join(r, rc.Cgroup, "nested", "deeper")); err == nil {
			nested++
		}
	}
	if nested == 0 {
		t.Fatalf("the worker made no nested cgroup below %s", rc.Cgroup)
	}
	if r := e.run("stop", "--grace", "1s", rc.ID); r.Code != 0 {
		t.Fatalf("stop: exit %d: %s", r.Code, r.Stderr)
	}
	// The shim (or stop, when the shim died with the tree) removes the cgroup once the end is recorded.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []string
		for _, r := range roots {
			if _, err := os.Stat(filepath.Join(r, rc.Cgroup)); err == nil {
				left = append(left, filepath.Join(r, rc.Cgroup))
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker cgroup left behind after stop: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forkLoopArgv is a worker that forks a sleep every few milliseconds until it is signalled.
var forkLoopArgv = []string{"sh", "-c", "while :; do sleep 300 & sleep 0.005; done"}

// stop and `signal --all` at once against a worker that forks in a loop, many rounds: each takes the
// worker's lock around its freeze, signal, thaw, so neither thaws the other's freeze, and each repeats its
// pass until no new member appears. Every round: both calls succeed, stop says verified empty (exit 0)
// well inside the grace (every process ended from the SIGTERMs, none was missed and left to the kill),
// and the cgroup is never left frozen.
func TestStopAndSignalAllAtOnce(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	const rounds = 6
	const grace = 20 * time.Second
	for round := 0; round < rounds; round++ {
		rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", e.Parent}, forkLoopArgv...)
		procs := filepath.Join(v2, rc.Cgroup, "cgroup.procs")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			b, _ := os.ReadFile(procs)
			if len(strings.Fields(string(b))) >= 8 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the worker never forked: %q", round, b)
			}
		}
		var wg sync.WaitGroup
		res := make([]result, 3)
		began := time.Now()
		calls := [][]string{
			{"stop", "--grace", grace.String(), rc.ID},
			{"signal", "--all", "-s", "TERM", rc.ID},
			{"signal", "--all", "-s", "TERM", rc.ID},
		}
		for i, args := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i] = e.runCtx(context.Background(), nil, args...)
			}()
		}
		wg.Wait()
		took := time.Since(began)
		if res[0].Code != 0 {
			t.Fatalf("round %d: stop: exit %d: %s", round, res[0].Code, res[0].Stderr)
		}
		for i, r := range res[1:] {
			// A signal that comes after stop's end finds the worker ended (1: not running, its cgroup gone;
			// 3: refused): that is no failure.
			if r.Code != 0 && r.Code != 1 && r.Code != 3 {
				t.Fatalf("round %d: signal --all #%d: exit %d: %s", round, i+1, r.Code, r.Stderr)
			}
		}
		if took >= grace {
			t.Fatalf("round %d: stop took %v, the whole grace: a process missed the SIGTERMs", round, took)
		}
		if b, err := os.ReadFile(filepath.Join(v2, rc.Cgroup, "cgroup.freeze")); err == nil && strings.TrimSpace(string(b)) != "0" {
			t.Fatalf("round %d: the cgroup was left frozen", round)
		}
		if b, err := os.ReadFile(procs); err == nil && len(strings.TrimSpace(string(b))) != 0 {
			t.Fatalf("round %d: members left after stop: %s", round, b)
		}
	}
}
