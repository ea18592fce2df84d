package shim

import (
	"os"

	"golang.org/x/sys/unix"

	hproc "github.com/hlaunch/hlaunch/internal/proc"
)

// ReapWhenEnded reaps a detached worker's shim once it has ended, for a caller that lives on after the
// receipt (the sidecar). It waits on a pidfd through the runtime's poller, so a live shim costs a parked
// goroutine and one descriptor, not an OS thread: a goroutine blocked in waitid holds a thread for the
// shim's whole life, and the Go runtime never ends a thread it made, so a sidecar would keep as many
// threads as it ever had workers alive at once (docs/sidecar.md). Where the pidfd cannot be polled
// (kernels before 5.3) it blocks in Wait. The shim's status is its own record: ignored.
func ReapWhenEnded(p *hproc.Proc) {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err == nil && unix.SetNonblock(fd, true) != nil { // non-blocking: os.NewFile puts it in the poller
		_ = unix.Close(fd)
		err = unix.EINVAL
	}
	if err == nil {
		f := os.NewFile(uintptr(fd), "pidfd")
		if rc, err := f.SyscallConn(); err == nil {
			// Readable once the process has ended; f reports it without blocking, the poller waits between.
			_ = rc.Read(func(fd uintptr) bool {
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, err := unix.Poll(pfd, 0)
				return err != nil || n > 0
			})
		}
		_ = f.Close()
	}
	_, _ = p.Wait() // at once when the wait above saw the end
}
