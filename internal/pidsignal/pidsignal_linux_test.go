package pidsignal

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
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
	// Any signal Members sent was queued before it returned, and a fatal one stays in the pending sets
	// (SigPnd, ShdPnd) until the process is reaped: read now, no wait is needed to see it.
	for _, c := range []*exec.Cmd{first, second} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimSpace(v)
			if (k == "SigPnd" || k == "ShdPnd") && strings.Trim(v, "0") != "" || k == "State" && strings.HasPrefix(v, "Z") {
				t.Errorf("pid %d, listed once, was signalled (%s)", c.Process.Pid, l)
			}
		}
	}
}
