package systemd_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd"
	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// BenchmarkStartScope measures placing a parked process in a new scope and stopping it, on one
// connection (the process start is not timed).
func BenchmarkStartScope(b *testing.B) {
	m := systemdtest.Start(b)
	c := connect(b, m)
	benchStartScope(b, m, func() *systemd.Conn { return c })
}

// BenchmarkConnectStartScope is BenchmarkStartScope with a fresh bus connection per scope: what one
// hlaunch exec pays, since the bus is derived afresh on every launch.
func BenchmarkConnectStartScope(b *testing.B) {
	m := systemdtest.Start(b)
	benchStartScope(b, m, nil)
}

func benchStartScope(b *testing.B, m *systemdtest.Manager, conn func() *systemd.Conn) {
	ctx := context.Background()
	var start, stop time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := m.StartParked(b, "")
		b.StartTimer()
		c := (*systemd.Conn)(nil)
		if conn != nil {
			c = conn()
		} else {
			var err error
			c, err = systemd.Connect(ctx, systemd.ConnectOptions{User: true, UID: os.Geteuid(), Getenv: m.Getenv})
			if err != nil {
				b.Fatal(err)
			}
		}
		unit := fmt.Sprintf("bench-%d.scope", i)
		t0 := time.Now()
		if _, err := c.StartScope(ctx, systemd.ScopeSpec{Unit: unit, PIDs: []uint32{uint32(p.PID)}}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := c.StopUnit(ctx, unit); err != nil {
			b.Fatal(err)
		}
		start += t1.Sub(t0)
		stop += time.Since(t1)
		if conn == nil {
			c.Close()
		}
	}
	// Connect+StartScope is what a launch waits for before releasing its child; the stop is separate.
	b.ReportMetric(float64(start.Microseconds())/float64(b.N), "start-µs/op")
	b.ReportMetric(float64(stop.Microseconds())/float64(b.N), "stop-µs/op")
}

// BenchmarkSystemdRunScope measures what hermes did: systemd-run --user --scope /bin/true, from the
// clients leaf. It includes the wrapper shell and nsenter; BenchmarkClientOverhead measures those alone.
func BenchmarkSystemdRunScope(b *testing.B) {
	m := systemdtest.Start(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := m.Command(ctx, "systemd-run", "--user", "--scope", "--quiet", "/bin/true").CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkClientOverhead is the cost of Manager.Command itself (sh + nsenter + /bin/true).
func BenchmarkClientOverhead(b *testing.B) {
	m := systemdtest.Start(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Command(ctx, "/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
