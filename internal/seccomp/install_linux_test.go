//go:build amd64 || arm64

package seccomp

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain lets the test binary act as a child that installs the filter (HLAUNCH_SECCOMP_CHILD=filter)
// or not (=none), then runs /bin/true: what the init stub adds to a launch, in a real process.
func TestMain(m *testing.M) {
	switch os.Getenv("HLAUNCH_SECCOMP_CHILD") {
	case "":
		os.Exit(m.Run())
	case "filter":
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			os.Exit(3)
		}
		f, err := Default()
		if err != nil {
			os.Exit(4)
		}
		if err := f.Install(); err != nil {
			os.Exit(5)
		}
		// The filter is on: a denied call is refused, an ordinary one is not.
		if err := unix.Unshare(0); err != unix.EPERM {
			os.Exit(6)
		}
	}
	err := unix.Exec("/bin/true", []string{"true"}, nil)
	os.Exit(7 + int(err.(unix.Errno)))
}

func child(t testing.TB, mode string) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"HLAUNCH_SECCOMP_CHILD=" + mode}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child %s: %v %s", mode, err, out)
	}
}

// The filter installs on a real kernel, for every thread, and refuses what it should there.
func TestInstall(t *testing.T) {
	child(t, "filter")
}

// BenchmarkInstall alternates a child that installs the filter and one that does not, then execs
// /bin/true; the difference of the two medians is the filter's cost to a launch (assembling, the kernel's
// seccomp(2): compiling the program and preparing its per-call cache, and running it for the exec).
func BenchmarkInstall(b *testing.B) {
	var with, without []time.Duration
	for b.Loop() {
		for _, mode := range []string{"filter", "none"} {
			start := time.Now()
			child(b, mode)
			d := time.Since(start)
			if mode == "filter" {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
		}
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	b.ReportMetric(median(with), "µs-filter")
	b.ReportMetric(median(without), "µs-none")
	b.ReportMetric(median(with)-median(without), "µs-cost")
}
