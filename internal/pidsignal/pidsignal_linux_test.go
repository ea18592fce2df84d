package pidsignal

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Only a process listed both times, pinned by a pidfd in between, is signalled: a PID that appears in one
// listing only (a member that left, a number taken over meanwhile) gets nothing, where passing every PID
// of one listing to kill(2) would signal it.
func TestMembersSignalsOnlyPinnedAndListedTwice(t *testing.T) {
	start := func() *exec.Cmd {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	both, first, second := start(), start(), start()
	calls := 0
	list := func() ([]int, error) {
		calls++
		if calls == 1 {
			return []int{both.Process.Pid, first.Process.Pid}, nil
		}
		return []int{both.Process.Pid, second.Process.Pid}, nil
	}
	done := map[int]bool{}
	n, err := Members(list, syscall.SIGTERM, done)
	if err != nil || n != 1 || !done[both.Process.Pid] {
		t.Fatalf("Members: n %d err %v done %v, want only %d", n, err, done, both.Process.Pid)
	}
	if err := both.Wait(); err == nil {
		t.Fatal("the process listed twice was not signalled")
	}
	// Any signal Members sent went out before it returned; give a SIGTERM the moment it takes to end a sleep.
	time.Sleep(50 * time.Millisecond)
	for _, c := range []*exec.Cmd{first, second} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid))
		if i := bytes.LastIndexByte(b, ')'); err != nil || i < 0 || i+2 >= len(b) || b[i+2] == 'Z' {
			t.Errorf("pid %d, listed once, was signalled (stat %q, %v)", c.Process.Pid, b, err)
		}
	}
}
