package fingerprint

import "golang.org/x/sys/unix"

// closeFD closes fd when it is one (pinned descriptors start at -1).
func closeFD(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}
