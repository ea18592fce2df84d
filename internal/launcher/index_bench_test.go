package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// keptLauncher is a launcher over a fresh state directory on a tmpfs (as /run/hlaunch is) that keeps n
// ended workers' records (as listLauncher's), with profile b to start workers of.
func keptLauncher(b *testing.B, n int) *Launcher {
	b.Helper()
	root := testutil.HermesRoot(b, map[string]string{"b": "B_MARKER=b\n"})
	dir := b.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "hlaunch-bench-"); err == nil {
		b.Cleanup(func() { _ = os.RemoveAll(d) })
		dir = d
	}
	l, err := New(Config{Root: root, StateDir: dir, Environ: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		b.Fatal(err)
	}
	d, err := state.Open(l.WorkersDir())
	if err != nil {
		b.Fatal(err)
	}
	self := fingerprint.CaptureChild(fingerprint.Sources{}, os.Getpid(), "")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("w-%012x", i)
		ident := self
		ident.Cgroup, ident.CgroupID = "/hlaunch-bench-gone/"+id, 1
		ident.PID, ident.Start = 1<<22+1, 1 // above any pid_max: never a process
		code := 0
		key := "kept-" + strconv.Itoa(i%50) // keys other launches held
		if err := d.Write(id, worker.Receipt{ID: id, Token: ident.Token(), PID: ident.PID, Mode: worker.ModeCgroup, StartedAt: now, Key: key}, false); err != nil {
			b.Fatal(err)
		}
		if err := d.Write(id+".exit", records.ExitRecord{ExitCode: &code, EndedAt: now}, false); err != nil {
			b.Fatal(err)
		}
	}
	return l
}

// BenchmarkStartKeyed is one detached launch of /bin/true (--scope none) without and with --key, in turn
// in each iteration (so that the machine's load falls on both alike), over a state directory that keeps
// 1,000 and 10,000 ended workers' records: a keyed launch checks the key's holder, which must not cost what
// the records kept cost. Each worker is waited for, not counted, so the key is free for the next launch.
func BenchmarkStartKeyed(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		l := keptLauncher(b, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			var took [2]time.Duration
			for i := 0; i < b.N; i++ {
				for k, key := range []string{"", "bench-key"} {
					spec := worker.Spec{Profile: "b", Argv: []string{"/bin/true"}, Scope: worker.ScopeNone, Detach: true, Key: key}
					t0 := time.Now()
					rc, err := l.Start(ctx, spec)
					took[k] += time.Since(t0)
					if err != nil {
						b.Fatalf("start: %v", err)
					}
					if _, err := l.Wait(ctx, rc.ID); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(took[0].Microseconds())/1000/float64(b.N), "unkeyed-ms")
			b.ReportMetric(float64(took[1].Microseconds())/1000/float64(b.N), "keyed-ms")
		})
	}
}

// BenchmarkPs is `hlaunch ps` (GET /v1/workers) over 1,000 and 10,000 kept records: every record, and one
// page of 100 (ListPage).
func BenchmarkPs(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		l := keptLauncher(b, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("records=%d/all", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if recs, err := l.List(ctx); err != nil || len(recs) != n {
					b.Fatalf("list: %d, %v", len(recs), err)
				}
			}
		})
		b.Run(fmt.Sprintf("records=%d/page=100", n), func(b *testing.B) {
			after := filepath.Base(fmt.Sprintf("w-%012x", n/2))
			for i := 0; i < b.N; i++ {
				if recs, err := l.ListPage(ctx, after, 100); err != nil || len(recs) != 100 {
					b.Fatalf("page: %d, %v", len(recs), err)
				}
			}
		})
	}
}

// BenchmarkHoldKey is what --key adds to a launch: the key's lock, its holder found through the index and
// verified (an ended worker's record), and the holder entry written, over 1,000 and 10,000 kept records.
func BenchmarkHoldKey(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		l := keptLauncher(b, n)
		ctx := context.Background()
		unlock, err := l.holdKey(ctx, "kept-7", worker.NewWorkerID()) // the entry rebuilt once, from every record
		if err != nil {
			b.Fatal(err)
		}
		unlock()
		if err := (&state.Dir{Path: l.KeysDir()}).Write(records.HolderName("kept-7"), records.IndexEntry{Key: "kept-7", ID: "w-000000000007"}, false); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				unlock, err := l.holdKey(ctx, "kept-7", "w-000000000007") // the holder: one ended record
				if err != nil {
					b.Fatal(err)
				}
				unlock()
			}
		})
	}
}
