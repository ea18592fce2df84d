package sidecar

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dirWatch turns changes in one directory (a record or an exit status written, a record removed) into
// wake-ups of the watcher, so that it lists the records when something happened instead of many times a
// second: with 1,000 workers a list costs tens of milliseconds of CPU.
type dirWatch struct {
	f    *os.File
	wake chan struct{}
}

// watchDir starts watching dir; the returned value's wake channel receives (coalesced) after each change.
// It fails when dir does not exist yet; the caller retries later.
func watchDir(ctx context.Context, dir string) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	const mask = unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_DELETE_SELF
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	// A non-blocking fd in os.NewFile uses the runtime poller: Read parks the goroutine, Close wakes it.
	w := &dirWatch{f: os.NewFile(uintptr(fd), "inotify:"+dir), wake: make(chan struct{}, 1)}
	go w.loop(ctx)
	return w, nil
}

func (w *dirWatch) loop(ctx context.Context) {
	go func() { <-ctx.Done(); w.f.Close() }()
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && ctx.Err() == nil {
				// Watching failed (e.g. the directory was removed): one last wake-up, then the slow poll
				// and a later watchDir take over.
				w.signal()
			}
			w.f.Close()
			close(w.wake)
			return
		}
		if n > 0 {
			w.signal() // the events' content does not matter: any change means "list again"
		}
	}
}

func (w *dirWatch) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
