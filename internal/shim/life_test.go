package shim

import (
	"os"
	"testing"
	"time"

	hproc "github.com/hlaunch/hlaunch/internal/proc"
)

// A worker whose tree has ended by its deadline is never recorded as timed out, even when the deadline
// and the leader's end arrive in the same instant (a timer left running could fire between the leader's
// exit and the check, and mark it timed out). A bounded adversary
// loop: the deadline is armed only once the leader has already exited, and fires at once.
func TestSuperviseEndBeforeDeadlineIsNotTimedOut(t *testing.T) {
	for i := 0; i < 200; i++ {
		proc, err := hproc.Spawn(hproc.Command{Path: "/bin/true", Args: []string{"true"}, Files: []*os.File{nil, nil, nil}})
		if err != nil {
			t.Fatal(err)
		}
		for !childExited(proc.Pid) {
			time.Sleep(time.Millisecond)
		}
		s := &Life{proc: proc, self: os.Getpid()}
		rec := s.supervise(time.Nanosecond, time.Second)
		if rec.TimedOut {
			t.Fatalf("run %d: a worker that ended before its deadline was recorded as timed out: %+v", i, rec)
		}
		if rec.ExitCode == nil || *rec.ExitCode != 0 || rec.EndedAt == "" {
			t.Fatalf("run %d: record %+v", i, rec)
		}
	}
}

// A deadline that comes while the worker runs ends it and is recorded.
func TestSuperviseDeadlineEndsLeader(t *testing.T) {
	proc, err := hproc.Spawn(hproc.Command{Path: "/bin/sleep", Args: []string{"sleep", "30"}, Files: []*os.File{nil, nil, nil}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Life{proc: proc, self: os.Getpid()}
	rec := s.supervise(50*time.Millisecond, time.Second)
	if !rec.TimedOut || rec.Signal != "SIGTERM" {
		t.Fatalf("record %+v, want timed out by SIGTERM", rec)
	}
}
