package launcher

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// tmpfsLauncher is a launcher over a fresh state directory, on a tmpfs where there is one (as /run/hlaunch
// is), removed at the end.
func tmpfsLauncher(tb testing.TB) *Launcher {
	tb.Helper()
	dir := tb.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "hlaunch-bench-"); err == nil {
		tb.Cleanup(func() { _ = os.RemoveAll(d) })
		dir = d
	}
	l, err := New(Config{Root: tb.TempDir(), StateDir: dir, Environ: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// listLauncher is a tmpfsLauncher holding n ended workers' records and exit records, shaped as a soaked
// sidecar keeps them: identities of this machine and boot whose cgroups are gone and whose leaders have
// exited.
func listLauncher(tb testing.TB, n int) *Launcher {
	tb.Helper()
	l := tmpfsLauncher(tb)
	d, err := state.Open(l.WorkersDir())
	if err != nil {
		tb.Fatal(err)
	}
	self := fingerprint.CaptureChild(fingerprint.Sources{}, os.Getpid(), "")
	if self.Unverified {
		tb.Fatalf("capture: %s", self.Reason)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("w-%012x", i)
		ident := self
		ident.Cgroup, ident.CgroupID = "/hlaunch-bench-gone/"+id, 1
		ident.PID, ident.Start = 1<<22+1, 1 // above any pid_max: never a process
		code := 0
		if err := d.Write(id, worker.Receipt{ID: id, Token: ident.Token(), PID: ident.PID, Mode: worker.ModeCgroup, StartedAt: now}, false); err != nil {
			tb.Fatal(err)
		}
		if err := d.Write(id+".exit", records.ExitRecord{ExitCode: &code, EndedAt: now}, false); err != nil {
			tb.Fatal(err)
		}
	}
	return l
}

// BenchmarkList is one Launcher.List over the 1,000 records the soak's sidecar keeps (ps, gc, every --key
// launch and GET /v1/workers pay it).
func BenchmarkList(b *testing.B) {
	l := listLauncher(b, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs, err := l.List(ctx)
		if err != nil || len(recs) != 1000 {
			b.Fatalf("List: %d records, %v", len(recs), err)
		}
	}
}
