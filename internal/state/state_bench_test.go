package state_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/hlaunch/hlaunch/internal/state"
)

// benchRecord is shaped like a worker receipt (about 700 bytes of JSON).
type benchRecord struct {
	ID, Token, Mode, Profile, Home, Cgroup, BootID, MachineID, StartedAt string
	PID, ShimPID                                                         int
	Argv                                                                 []string
	CgroupID, StartTime                                                  uint64
}

func newBenchRecord(i int) benchRecord {
	return benchRecord{
		ID: fmt.Sprintf("w-%012x", i), Token: "hl1.AQABPRIZx8TFQEqqH20qSK39pAJPs0ZEzJdL87h30HmDnB8kFyQvaGxhdW5jaC1iZW5jaC16MTI3NTAvdy1l",
		Mode: "cgroup", Profile: "b", Home: "/home/u/.hermes/profiles/b", Cgroup: "/hlaunch/w-e775113429c5",
		BootID: "4fb34644-cc97-4bf3-b877-d079839c1f24", MachineID: "3d1219c7c4c5404aaa1f6d2a48adfda4",
		StartedAt: "2026-11-29T10:48:15.562049677Z", PID: 8534, ShimPID: 8528,
		Argv: []string{"python3", "-m", "hermes.tools.run", "--task", "kanban-7"}, CgroupID: 347440, StartTime: 118408,
	}
}

// BenchmarkWriteDurable is one receipt write as a detached launch does it: temp file, fsync, rename, fsync
// of the directory, in a directory on the same file system as the default state directory would be
// ($BENCH_STATE_DIR, else the test's temp dir). The fsyncs dominate on a real disk.
func BenchmarkWriteDurable(b *testing.B) { benchWrite(b, true) }

// BenchmarkWriteNoSync is the same write without the two fsyncs (a foreground run's records).
func BenchmarkWriteNoSync(b *testing.B) { benchWrite(b, false) }

func benchWrite(b *testing.B, durable bool) {
	dir := b.TempDir()
	if d := os.Getenv("BENCH_STATE_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "state-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	d, err := state.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	rec := newBenchRecord(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Write(rec.ID, rec, durable); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead is one record read back (what ps, status and re-adoption do per worker).
func BenchmarkRead(b *testing.B) {
	d, err := state.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	rec := newBenchRecord(1)
	if err := d.Write(rec.ID, rec, false); err != nil {
		b.Fatal(err)
	}
	var got benchRecord
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Read(rec.ID, &got); err != nil {
			b.Fatal(err)
		}
	}
}
