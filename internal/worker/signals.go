package worker

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalName is the one written form of a signal in every answer (records, the CLI's, the sidecar's):
// "SIGTERM" for syscall.SIGTERM, "SIG<n>" for a signal without a name (real-time ones: "SIG34").
// ParseSignal takes every form it gives back.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}

// ParseSignal accepts "TERM", "SIGTERM", "term", "15" or "SIG15" (SignalName's form of an unnamed one).
func ParseSignal(v string) (syscall.Signal, error) {
	name := strings.ToUpper(v)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if n, err := strconv.Atoi(name[len("SIG"):]); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	if s := unix.SignalNum(name); s != 0 {
		return s, nil
	}
	return 0, &FieldError{Msg: fmt.Sprintf("signal %q: unknown (want a name such as TERM, HUP, KILL, USR1, or a number 1..64)", v)}
}
