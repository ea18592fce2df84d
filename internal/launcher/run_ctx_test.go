package launcher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Run's context cancelled while the worker runs: the worker's tree is stopped as at a --timeout (SIGTERM,
// the whole cgroup killed after the grace, a tree that ignores SIGTERM too), Run returns 125 and an error
// wrapping context.Canceled (never the child's own code), and neither the cgroup nor a process is left.
func TestRunContextCancelled(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	for name, script := range map[string]string{
		"ends on TERM": `sleep 1000 & echo $! > %s; wait`,
		"ignores TERM": `trap '' TERM; (trap '' TERM; exec sleep 1000) & echo $! > %s; while :; do wait; done`,
	} {
		t.Run(name, func(t *testing.T) {
			ready := filepath.Join(t.TempDir(), "ready")
			s := spec(strings.Replace(script, "%s", ready, 1))
			s.Grace = "200ms"
			s.Timeout = "120s" // the cancel must end it: a lost cancel fails with 124 instead of hanging the run
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			grandchild := make(chan int, 1)
			go func() {
				pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, ready)))
				grandchild <- pid
				cancel()
			}()
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			code, err := w.l.Run(ctx, s, worker.Stdio{Stdout: out, Stderr: out}, launcher.Signals{})
			if code != worker.ExitInternal || !errors.Is(err, context.Canceled) || errors.Is(err, worker.ErrTimedOut) {
				t.Fatalf("code %d, %v; want 125 and an error wrapping context.Canceled", code, err)
			}
			if !strings.Contains(err.Error(), "cancelled") || !strings.Contains(err.Error(), "stopped") {
				t.Errorf("error %q does not say the launch was cancelled and the worker stopped", err)
			}
			if left := w.workerCgroups(); len(left) != 0 {
				t.Errorf("cgroups left after the cancel: %v", left)
			}
			pid := <-grandchild
			if pid <= 0 {
				t.Fatalf("no grandchild pid in %s", ready)
			}
			// The grandchild was in the removed cgroup, so it is ending: a task leaves its cgroup early in its
			// exit, before /proc shows it a zombie, so it is given (bounded) time to get there. Its PID being
			// reused already by a process of the same name is not a concern for this check.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				if err != nil || !alive(string(b)) {
					break
				}
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("the worker's grandchild %d (sleep) survived the cancel by 10 s", pid)
					break
				}
			}
		})
	}
}

// A context cancelled before Run creates anything: nothing is started and no cgroup is left.
func TestRunContextCancelledBeforeStart(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	marker := filepath.Join(t.TempDir(), "ran")
	code, err := w.l.Run(ctx, spec("echo yes > "+marker), worker.Stdio{}, launcher.Signals{})
	if code != worker.ExitInternal || !errors.Is(err, context.Canceled) {
		t.Fatalf("code %d, %v; want 125 and context.Canceled", code, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the target ran although the context was cancelled before the launch")
	}
	if left := w.workerCgroups(); len(left) != 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

// alive reports whether a /proc/<pid>/stat line is a sleep that has not exited (a zombie waiting for its
// reaper has ended).
func alive(stat string) bool {
	_, rest, ok := strings.Cut(stat, ") ")
	return ok && strings.Contains(stat, "(sleep)") && !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// Ledger, List and Environ honour a cancelled context: Ledger stops between records and returns the context's
// error, not a partial list (List too); Environ returns it before reading the profile.
func TestReadsHonourCancel(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	rc := w.start(spec(`exit 0`))
	w.wait(rc.ID)
	if recs, err := w.l.Ledger(context.Background(), records.LedgerQuery{}); err != nil || len(recs) != 1 {
		t.Fatalf("ledger: %d records, %v; want the one", len(recs), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if recs, err := w.l.Ledger(ctx, records.LedgerQuery{}); !errors.Is(err, context.Canceled) || recs != nil {
		t.Errorf("ledger with a cancelled context: %d records, %v; want none and context.Canceled", len(recs), err)
	}
	if recs, err := w.l.List(ctx); !errors.Is(err, context.Canceled) || recs != nil {
		t.Errorf("list with a cancelled context: %d records, %v; want none and context.Canceled", len(recs), err)
	}
	if env, err := w.l.Environ(ctx, worker.Spec{Profile: "b", Argv: []string{"x"}}); !errors.Is(err, context.Canceled) || env != nil {
		t.Errorf("environ with a cancelled context: %v, %v; want context.Canceled", env, err)
	}
}
