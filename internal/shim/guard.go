package shim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// errShimStopped is why a launch fails whose shim was stopped (SIGSTOP: an unsandboxed worker can stop its
// parent as it can kill it) before it reported the worker: a stopped shim never answers, and the launcher
// would wait for its receipt forever while the worker ran with no record and no deadline.
var errShimStopped = errors.New("the shim was stopped (SIGSTOP) before it reported the worker")

// shimPoll is how often the launcher looks at a shim that has not answered yet. An answer normally comes
// within a few milliseconds, before the first look.
const shimPoll = 50 * time.Millisecond

// GuardExchange watches the shim child while the launcher waits for its answer: a shim found stopped, or a
// ctx that ends, gets SIGKILL (its pipe's EOF ends the wait). The returned function ends the watch and
// says why the shim was killed (nil: it was not). The shim is the launcher's unreaped child, so its PID
// cannot name another process meanwhile.
func GuardExchange(ctx context.Context, child *Parent) (done func() error) {
	stop, why := make(chan struct{}), make(chan error, 1)
	go func() {
		t := time.NewTicker(shimPoll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				why <- nil
				return
			case <-ctx.Done():
				_ = child.Proc.Signal(syscall.SIGKILL)
				why <- ctx.Err()
				return
			case <-t.C:
				if _, stopped := Probe(worker.Receipt{ShimPID: child.PID()}); stopped {
					_ = child.Proc.Signal(syscall.SIGKILL)
					why <- errShimStopped
					return
				}
			}
		}
	}()
	return func() error {
		close(stop)
		return <-why
	}
}

// Probe reads the shim's /proc/<pid>/stat: alive as ShimAlive says, and whether that live shim is
// stopped (SIGSTOP, which it cannot catch, or a tracer's stop): a stopped shim supervises nothing until it
// is continued (reconcileLost).
func Probe(rc worker.Receipt) (alive, stopped bool) {
	if rc.ShimPID <= 0 {
		return false, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", rc.ShimPID))
	if err != nil {
		return false, false
	}
	// The state is the first field after the last ')' (comm may hold anything).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X' {
		return false, false
	}
	stopped = b[i+2] == 'T' || b[i+2] == 't'
	if rc.ShimStart == 0 {
		return true, stopped // a receipt written before shims recorded their start time
	}
	start, err := fingerprint.ReadStartTime(bytes.NewReader(b))
	if err != nil || start != rc.ShimStart {
		return false, false
	}
	return true, stopped
}
