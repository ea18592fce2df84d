package launcher

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/shim"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// ShimAlive on real processes: a live one with its own start time; the same PID with another start time
// (a recycled PID); a receipt without a start time; a zombie; a PID that is gone.
func TestShimAlive(t *testing.T) {
	self := os.Getpid()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	start, err := fingerprint.ReadStartTime(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !ShimAlive(worker.Receipt{ShimPID: self, ShimStart: start}) {
		t.Error("a live shim with its own start time is not alive")
	}
	if ShimAlive(worker.Receipt{ShimPID: self, ShimStart: start + 1}) {
		t.Error("a PID whose start time is not the shim's counts as the shim (a recycled PID)")
	}
	if !ShimAlive(worker.Receipt{ShimPID: self}) {
		t.Error("a receipt without a start time falls back to the PID alone")
	}
	if ShimAlive(worker.Receipt{}) {
		t.Error("no shim PID is alive")
	}

	// A child that has exited but is not reaped yet: a zombie is not a running shim.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	zombie := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(zombie) + "/stat")
		if bytes.Contains(st, []byte(") Z ")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never became a zombie: %q", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ShimAlive(worker.Receipt{ShimPID: zombie}) {
		t.Error("a zombie counts as a running shim")
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(zombie, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if ShimAlive(worker.Receipt{ShimPID: zombie}) {
		t.Error("a reaped PID counts as a running shim")
	}
}

// ExitSettled, the one rule for "an exit has settled" (Wait and the sidecar's watcher): the worker's end
// recorded (ended_at, written once the shim has drained the output into the log) settles it without
// asking about the shim; the leader's status alone does not while the shim runs (the drain is still to
// come); without either it has settled only once the shim is gone. Checked with this process as a live
// shim and a receipt without one, through ShimAlive.
func TestExitSettled(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	start, err := fingerprint.ReadStartTime(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	live := worker.Receipt{ShimPID: os.Getpid(), ShimStart: start}
	code := 3
	asked := false
	never := func(worker.Receipt) bool { asked = true; return true }
	for _, r := range []worker.Record{{Receipt: live, ExitCode: &code, EndedAt: "t"}, {Receipt: live, Signal: "SIGKILL", EndedAt: "t"}} {
		if !r.ExitSettled(never) || asked {
			t.Errorf("%+v: a recorded end must settle the exit without asking about the shim", r)
		}
	}
	for _, r := range []worker.Record{{Receipt: live}, {Receipt: live, ExitCode: &code}, {Receipt: live, Signal: "SIGKILL"}} {
		if r.ExitSettled(ShimAlive) {
			t.Errorf("%+v: no ended_at while the shim runs: the exit has not settled (the drain is still to come)", r)
		}
	}
	for _, r := range []worker.Record{{Receipt: worker.Receipt{ShimPID: 0}}, {Receipt: worker.Receipt{ShimPID: 0}, ExitCode: &code}} {
		if !r.ExitSettled(ShimAlive) {
			t.Errorf("%+v: no shim (a foreground worker, one known by its token only): the exit has settled", r)
		}
	}
}

// shim.Probe on a real stopped process: alive (ShimAlive says so: the exit record may still come) and
// stopped; continued, alive and not stopped.
func TestShimProcStopped(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rc := worker.Receipt{ShimPID: cmd.Process.Pid}
	if err := syscall.Kill(rc.ShimPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, stopped := shim.Probe(rc); stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a SIGSTOPped process is never seen stopped")
		}
	}
	if alive, _ := shim.Probe(rc); !alive || !ShimAlive(rc) {
		t.Error("a stopped shim is not alive")
	}
	if err := syscall.Kill(rc.ShimPID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if alive, stopped := shim.Probe(rc); alive && !stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a continued process is still seen stopped")
		}
	}
}
