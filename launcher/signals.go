package launcher

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalName is "SIGTERM" for syscall.SIGTERM ("SIG<n>" for a signal without a name), as records show it.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}

// ParseSignal accepts "TERM", "SIGTERM", "term" or "15".
func ParseSignal(v string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(v)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if s := unix.SignalNum(name); s != 0 {
		return s, nil
	}
	return 0, &FieldError{Msg: fmt.Sprintf("signal %q: unknown (want a name such as TERM, HUP, KILL, USR1, or a number 1..64)", v)}
}
