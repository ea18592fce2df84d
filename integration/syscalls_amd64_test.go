package integration

import "golang.org/x/sys/unix"

// probesArch are the x86-64 calls arm64 does not have.
var probesArch = map[string]probe{
	"iopl":     {call: func() error { return raw(unix.SYS_IOPL, 4) }},             // level 4: EINVAL unfiltered
	"ioperm":   {call: func() error { return raw(unix.SYS_IOPERM, 0, 1<<30, 1) }}, // out of range: EINVAL
	"quotactl": {call: func() error { return raw(unix.SYS_QUOTACTL, 0xffffffff, 0, 0, 0) }, plain: true},
	"chmod+S_ISUID": {call: func() error {
		return raw(unix.SYS_CHMOD, cstr(probeFile("chmod")), 0o4755)
	}},
	"creat+S_ISGID": {call: func() error {
		fd, _, e := unix.Syscall(unix.SYS_CREAT, cstr(probePath("creat")), 0o2755, 0)
		if e != 0 {
			return e
		}
		return unix.Close(int(fd))
	}},
	"mknod+S_ISUID": {call: func() error {
		return raw(unix.SYS_MKNOD, cstr(probePath("mknod")), unix.S_IFREG|0o4755, 0)
	}},
	"open+O_CREAT+S_ISUID": {call: func() error {
		fd, _, e := unix.Syscall(unix.SYS_OPEN, cstr(probePath("open")), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755)
		if e != 0 {
			return e
		}
		return unix.Close(int(fd))
	}},
}
