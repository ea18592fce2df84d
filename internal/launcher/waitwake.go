package launcher

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// waitPoll is how often Wait reads the record again when it cannot watch the state directory (no inotify).
const waitPoll = 25 * time.Millisecond

// wakeup tells Wait when to read a worker's record again: after a change in the state directory (inotify:
// a record or an exit status written, a record removed) or the end of a process it watches (a pidfd of
// the worker's shim or leader), each through one epoll descriptor parked in the runtime's poller. Without
// inotify it falls back to a poll every waitPoll.
type wakeup struct {
	ep      *os.File // the epoll descriptor; nil: polling
	inotify int
	pidfds  map[int]struct{}
}

// newWakeup watches dir; a failure to watch leaves a wakeup that polls.
func newWakeup(dir string) *wakeup {
	w := &wakeup{inotify: -1, pidfds: map[int]struct{}{}}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return w
	}
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return w
	}
	const mask = unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_DELETE_SELF
	if _, err := unix.InotifyAddWatch(in, dir, mask); err != nil {
		unix.Close(in)
		unix.Close(epfd)
		return w
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, in, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(in)}); err != nil {
		unix.Close(in)
		unix.Close(epfd)
		return w
	}
	_ = unix.SetNonblock(epfd, true)
	w.ep, w.inotify = os.NewFile(uintptr(epfd), "epoll:"+dir), in
	return w
}

// watchPID adds a pidfd of pid, whose end is a wake-up too. It is only ever a reason to read the record
// again, never to signal, so a pid that names another process by now costs one extra read at most.
func (w *wakeup) watchPID(pid int) {
	if w.ep == nil || pid <= 0 {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already (the record read next says so) or no pidfd: the directory's changes remain
	}
	if err := unix.EpollCtl(int(w.ep.Fd()), unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
		unix.Close(fd)
		return
	}
	w.pidfds[fd] = struct{}{}
}

// wait blocks until something changed or ctx ends (ctx's error).
func (w *wakeup) wait(ctx context.Context) error {
	if w.ep == nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(waitPoll):
			return nil
		}
	}
	_ = w.ep.SetReadDeadline(time.Time{}) // a deadline an earlier wait's ctx left
	stop := context.AfterFunc(ctx, func() { _ = w.ep.SetReadDeadline(time.Now()) })
	defer stop()
	rc, err := w.ep.SyscallConn()
	if err != nil {
		return err
	}
	var evs [8]unix.EpollEvent
	var n int
	err = rc.Read(func(fd uintptr) bool {
		n, _ = unix.EpollWait(int(fd), evs[:], 0)
		return n > 0
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		// The descriptor could not be waited on after all (not in the runtime's poller): poll.
		w.close()
		w.ep = nil
		return nil
	}
	for _, ev := range evs[:max(n, 0)] {
		fd := int(ev.Fd)
		if fd == w.inotify {
			drain(fd)
			continue
		}
		// A pidfd stays readable once its process ended: one wake-up from it is enough.
		_ = unix.EpollCtl(int(w.ep.Fd()), unix.EPOLL_CTL_DEL, fd, nil)
		unix.Close(fd)
		delete(w.pidfds, fd)
	}
	return nil
}

// drain reads the pending inotify events; their content does not matter.
func drain(fd int) {
	var buf [4096]byte
	for {
		if n, err := unix.Read(fd, buf[:]); n <= 0 || err != nil {
			return
		}
	}
}

// close releases the descriptors.
func (w *wakeup) close() {
	for fd := range w.pidfds {
		unix.Close(fd)
	}
	w.pidfds = map[int]struct{}{}
	if w.inotify >= 0 {
		unix.Close(w.inotify)
		w.inotify = -1
	}
	if w.ep != nil {
		w.ep.Close()
	}
}
