package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestNamesExec(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"exec", "-p", "b", "--", "true"}, true},
		{[]string{"--root", "/r", "--state-dir", "/s", "exec", "-p", "b", "--", "true"}, true},
		{[]string{"exec"}, true},
		{[]string{"ps"}, false},
		{[]string{"status", "--json", "w-0123456789ab"}, false},
		{[]string{"--", "exec"}, false}, // after "--" it is an argument, not the command
		{nil, false},
	} {
		if got := namesExec(c.args); got != c.want {
			t.Errorf("namesExec(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// relayChildEnv (read by TestMain) makes the test binary act as a process that subscribes the relay, catches a signal, and
// then releases the relay: the caught signal must end it with its default action.
const relayChildEnv = "HLAUNCH_TEST_RELAY_CHILD"

func relayChild() {
	r := startRelay([]string{"exec"})
	<-r.ready
	// Caught, not fatal: the relay holds it. Taken from the relay and put back, which proves that it was
	// caught before release, not still on its way.
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	r.c <- <-r.c
	os.Stdout.WriteString("alive\n")
	r.release()
	select {} // the signal release raises again ends the process; the test bounds the wait
}

// A command line that named exec but was not a foreground exec gives the signals back: one caught before
// release is delivered again with its default action (for SIGTERM, the end of the process).
func TestRelayReleaseRedeliversCaughtSignals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), relayChildEnv+"=1")
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("the child still ran after 30s (stdout %q): the caught signal was not raised again", out)
	}
	if string(out) != "alive\n" {
		t.Fatalf("the child did not survive the caught signal: stdout %q, err %v", out, err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child exited cleanly; want death by SIGTERM (err %v)", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("child ended with %v; want killed by SIGTERM", ws)
	}
}

func TestRelayNilAndClaimedReleaseAreNoOps(t *testing.T) {
	var r *relay
	r.release() // must not panic
	if startRelay([]string{"ps"}) != nil {
		t.Fatal("a relay was started for ps")
	}
	r = startRelay([]string{"exec"})
	s := r.signals()
	<-s.Ready
	r.release() // claimed: stays subscribed
	_ = syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	select {
	case got := <-s.C:
		if got != syscall.SIGWINCH {
			t.Fatalf("got %v, want SIGWINCH", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a claimed relay stopped delivering after release")
	}
}

// settleRelay is the one place the early subscription is kept or given back: a foreground exec keeps it
// (started there when main did not) and later calls leave it subscribed; any other line releases it and
// gets nothing to forward.
func TestSettleRelay(t *testing.T) {
	a := &app{}
	s := a.settleRelay(true)
	if a.relay == nil || s.C == nil || s.Ready == nil {
		t.Fatalf("a foreground exec without an early relay got %+v, want one started", s)
	}
	<-s.Ready
	if got := a.settleRelay(false); got.C != nil || a.relay.released {
		t.Fatal("a claimed relay was given back after its foreground exec")
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	select {
	case got := <-s.C:
		if got != syscall.SIGWINCH {
			t.Fatalf("got %v, want SIGWINCH", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the foreground exec's relay stopped delivering")
	}

	b := &app{relay: startRelay([]string{"exec", "--detach"})}
	if got := b.settleRelay(false); got.C != nil || got.Ready != nil || !b.relay.released {
		t.Fatalf("a detached exec kept the relay: %+v released=%v", got, b.relay.released)
	}
	if got := (&app{}).settleRelay(false); got.C != nil {
		t.Fatal("a command line without a relay got signals to forward")
	}
}
