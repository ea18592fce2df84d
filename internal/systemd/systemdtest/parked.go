package systemdtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Parked is a shell in the manager's clients leaf that waits on its stdin before going on: a stand-in for
// a child that hlaunch holds on its handshake pipe while it is placed. When released it prints its
// /proc/self/cgroup (as seen inside the manager's cgroup namespace) and the line "released", then runs
// the shell code it was started with.
type Parked struct {
	// PID is the parked process (the same PID before and after release).
	PID    int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// StartParked starts a parked process and waits until it is in the clients leaf. then is shell code run
// after release ("" to exit). The process is killed at cleanup if still running.
func (m *Manager) StartParked(t testing.TB, then string) *Parked {
	t.Helper()
	cmd := m.Command(context.Background(), "/bin/sh", "-c",
		"echo ready; read _ || exit 3; cat /proc/self/cgroup; echo released; "+then)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("systemdtest: start parked: %v", err)
	}
	p := &Parked{PID: cmd.Process.Pid, cmd: cmd, stdin: stdin, stdout: bufio.NewReader(out)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if l, err := p.ReadLine(); err != nil || l != "ready" {
		t.Fatalf("systemdtest: parked process did not get ready: %q %v", l, err)
	}
	return p
}

// Release lets the process go on.
func (p *Parked) Release() error {
	_, err := io.WriteString(p.stdin, "go\n")
	return err
}

// ReadLine reads one line of the process's stdout, without the newline.
func (p *Parked) ReadLine() (string, error) {
	l, err := p.stdout.ReadString('\n')
	return strings.TrimSuffix(l, "\n"), err
}

// ReleaseAndReport releases the process and returns the cgroup lines it printed (its own view).
func (p *Parked) ReleaseAndReport() (string, error) {
	if err := p.Release(); err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		l, err := p.ReadLine()
		if err != nil {
			return b.String(), fmt.Errorf("reading the report: %w", err)
		}
		if l == "released" {
			return b.String(), nil
		}
		b.WriteString(l + "\n")
	}
}

// Wait waits for the process to exit, at most d.
func (p *Parked) Wait(d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("parked process %d still running after %v", p.PID, d)
	}
}
