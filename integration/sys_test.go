package integration

import (
	"os"
	"os/signal"
	"syscall"
)

func signalNotify(c chan os.Signal, sigs ...os.Signal) { signal.Notify(c, sigs...) }

func getsid() (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}
