package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/launcher"
)

// forwardedSignals are passed on to a foreground child: hlaunch is used as an argv prefix, so a caller
// that signals hlaunch means to signal the child (WINCH keeps a terminal program's size right).
func forwardedSignals() []os.Signal {
	return []os.Signal{
		syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
	}
}

// relay catches the forwarded signals for a foreground exec. Subscribing costs a round trip to the Go
// runtime's signal thread per signal, about 0.3-0.6 ms for seven on a 2-vCPU VM, all of it latency on
// the launch path. So the subscription starts in the background at the top of main, when the command line
// names exec, and runs while cobra parses and the launcher reads the profile; doctor.Run waits for it
// (Signals.Ready) before it creates anything on the host.
//
// A command line that turns out not to be a foreground exec (exec --detach, an argument that happens to be
// "exec") gives the subscription back with release before its command runs, and any signal caught
// meanwhile is raised again, so that it does what it would have done without the relay (INT, TERM and
// HUP end hlaunch; USR1 is ignored, as in any Go program that does not ask for it).
type relay struct {
	c        chan os.Signal
	ready    chan struct{}
	claimed  bool // handed to a foreground launch
	released bool
}

// startRelay subscribes in the background if args name the exec command, else returns nil.
func startRelay(args []string) *relay {
	if !namesExec(args) {
		return nil
	}
	// Buffered: a burst of signals (a resize storm, INT then TERM) must not be dropped while the launcher
	// is busy starting the child or forwarding the previous one.
	r := &relay{c: make(chan os.Signal, 16), ready: make(chan struct{})}
	go func() {
		signal.Notify(r.c, forwardedSignals()...)
		close(r.ready)
	}()
	return r
}

// settleRelay is the one decision about the early subscription, which every command line reaches before
// its command runs (and once more when it ends, for a line cobra refused): a foreground exec keeps it,
// started now if main did not (a command line namesExec did not recognise as exec), and gets the signals
// to forward; every other command line gives it back, and gets none. Calls after a foreground exec claimed
// it change nothing.
func (a *app) settleRelay(foreground bool) launcher.Signals {
	if !foreground {
		a.relay.release()
		return launcher.Signals{}
	}
	if a.relay == nil {
		a.relay = startRelay([]string{"exec"})
	}
	return a.relay.signals()
}

// namesExec reports whether "exec" appears among args before "--". A false positive costs a release; a
// false negative only the overlap.
func namesExec(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "exec" {
			return true
		}
	}
	return false
}

// signals hands the subscription to a foreground launch. The subscription is never undone: hlaunch exits
// as soon as Run returns, and undoing it costs as much as making it.
func (r *relay) signals() launcher.Signals {
	r.claimed = true
	return launcher.Signals{C: r.c, Ready: r.ready}
}

// release undoes the subscription and raises again any signal caught before it.
// It is a no-op on a nil, claimed or already released relay.
func (r *relay) release() {
	if r == nil || r.claimed || r.released {
		return
	}
	r.released = true
	<-r.ready
	signal.Stop(r.c)
	for {
		select {
		case s := <-r.c:
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), sig)
			}
		default:
			return
		}
	}
}
