package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probe is one system call the child attempts for the `syscall:NAME` check. Its arguments are chosen so
// that, where the kernel allows it, the call without the filter fails with something other than EPERM
// (EFAULT for a bad pointer, EINVAL for bad flags, EBADF for fd -1) or succeeds harmlessly: then an EPERM
// can only be the filter's. plain marks the probes where the kernel's own answer to an unprivileged
// caller is EPERM too (a capability check comes first): they show the filter is there, not that it is
// the only thing refusing.
type probe struct {
	call  func() error
	plain bool
}

// raw makes a system call and turns its errno into an error (nil on success).
func raw(nr uintptr, a ...uintptr) error {
	var args [6]uintptr
	copy(args[:], a)
	_, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	if e != 0 {
		return e
	}
	return nil
}

// probeDir is where the mode probes create their files: in the sandbox's private /tmp, one per uid.
var probeDir = fmt.Sprintf("/tmp/seccomp-probes-%d", os.Getuid())

// probePath is the path of a file a mode probe creates.
func probePath(name string) string {
	_ = os.MkdirAll(probeDir, 0o700)
	return filepath.Join(probeDir, name)
}

// probeFile creates an empty file for a mode probe and returns its path.
func probeFile(name string) string {
	p := probePath(name)
	_ = os.WriteFile(p, nil, 0o755)
	return p
}

func cstr(s string) uintptr {
	b, _ := unix.BytePtrFromString(s)
	return uintptr(unsafe.Pointer(b))
}

const (
	atFdcwd = uintptr(0xffffffffffffff9c) // AT_FDCWD (-100)
	badPtr  = uintptr(1)
	badFD   = ^uintptr(0) // -1
)

// probes are the calls docs/security.md's table denies, in the filter's own words (its rules.go names),
// plus the arch-specific ones of probesArch.
var probes = map[string]probe{
	"add_key":           {call: func() error { return raw(unix.SYS_ADD_KEY, badPtr, 0, 0, 0, badFD) }},
	"request_key":       {call: func() error { return raw(unix.SYS_REQUEST_KEY, badPtr, 0, 0, 0) }},
	"keyctl":            {call: func() error { return raw(unix.SYS_KEYCTL, 0xffff) }},
	"bpf":               {call: func() error { return raw(unix.SYS_BPF, 0xffff, 0, 0) }, plain: true},
	"perf_event_open":   {call: func() error { return raw(unix.SYS_PERF_EVENT_OPEN, badPtr, 0, badFD, badFD, 0) }},
	"userfaultfd":       {call: func() error { return raw(unix.SYS_USERFAULTFD, 1|0x2) }}, // UFFD_USER_MODE_ONLY + a bad flag
	"init_module":       {call: func() error { return raw(unix.SYS_INIT_MODULE, 0, 0, 0) }, plain: true},
	"finit_module":      {call: func() error { return raw(unix.SYS_FINIT_MODULE, badFD, 0, 0) }, plain: true},
	"delete_module":     {call: func() error { return raw(unix.SYS_DELETE_MODULE, badPtr, 0) }, plain: true},
	"kexec_load":        {call: func() error { return raw(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0) }, plain: true},
	"kexec_file_load":   {call: func() error { return raw(unix.SYS_KEXEC_FILE_LOAD, badFD, badFD, 0, 0, 0) }, plain: true},
	"mount":             {call: func() error { return raw(unix.SYS_MOUNT, badPtr, badPtr, badPtr, 0, 0) }},
	"umount2":           {call: func() error { return raw(unix.SYS_UMOUNT2, cstr("/"), 0xffff) }},
	"pivot_root":        {call: func() error { return raw(unix.SYS_PIVOT_ROOT, badPtr, badPtr) }, plain: true},
	"move_mount":        {call: func() error { return raw(unix.SYS_MOVE_MOUNT, badFD, 0, badFD, 0, 0xffffffff) }, plain: true},
	"open_tree":         {call: func() error { return raw(unix.SYS_OPEN_TREE, badFD, 0, 0xffffffff) }},
	"fsopen":            {call: func() error { return raw(unix.SYS_FSOPEN, badPtr, 0) }, plain: true},
	"fsmount":           {call: func() error { return raw(unix.SYS_FSMOUNT, badFD, 0xff, 0) }, plain: true},
	"fsconfig":          {call: func() error { return raw(unix.SYS_FSCONFIG, badFD, 0xff, 0, 0, 0) }},
	"fspick":            {call: func() error { return raw(unix.SYS_FSPICK, badFD, 0, 0xffffffff) }, plain: true},
	"mount_setattr":     {call: func() error { return raw(unix.SYS_MOUNT_SETATTR, badFD, 0, 0xffffffff, 0, 0) }},
	"unshare":           {call: func() error { return raw(unix.SYS_UNSHARE, 0) }},
	"setns":             {call: func() error { return raw(unix.SYS_SETNS, badFD, 0) }},
	"ptrace":            {call: func() error { return raw(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 0x7ffffff0) }},
	"process_vm_writev": {call: func() error { return raw(unix.SYS_PROCESS_VM_WRITEV, uintptr(os.Getpid()), 0, 0, 0, 0, 1) }},
	"kcmp":              {call: func() error { return raw(unix.SYS_KCMP, uintptr(os.Getpid()), uintptr(os.Getpid()), 0xff, 0, 0) }},
	"personality": {call: func() error {
		err := raw(unix.SYS_PERSONALITY, 0x0040000) // ADDR_NO_RANDOMIZE
		_ = raw(unix.SYS_PERSONALITY, 0)
		return err
	}},
	"acct":              {call: func() error { return raw(unix.SYS_ACCT, 0) }, plain: true},
	"swapon":            {call: func() error { return raw(unix.SYS_SWAPON, badPtr, 0) }, plain: true},
	"swapoff":           {call: func() error { return raw(unix.SYS_SWAPOFF, badPtr) }, plain: true},
	"reboot":            {call: func() error { return raw(unix.SYS_REBOOT, 0, 0, 0, 0) }, plain: true},
	"quotactl_fd":       {call: func() error { return raw(unix.SYS_QUOTACTL_FD, badFD, 0, 0, 0) }},
	"settimeofday":      {call: func() error { return raw(unix.SYS_SETTIMEOFDAY, badPtr, 0) }},
	"clock_settime":     {call: func() error { return raw(unix.SYS_CLOCK_SETTIME, unix.CLOCK_REALTIME, badPtr) }},
	"adjtimex":          {call: func() error { return raw(unix.SYS_ADJTIMEX, badPtr) }},
	"clock_adjtime":     {call: func() error { return raw(unix.SYS_CLOCK_ADJTIME, unix.CLOCK_REALTIME, badPtr) }},
	"lookup_dcookie":    {call: func() error { return raw(unix.SYS_LOOKUP_DCOOKIE, 0, 0, 0) }},
	"open_by_handle_at": {call: func() error { return raw(unix.SYS_OPEN_BY_HANDLE_AT, badFD, badPtr, 0) }, plain: true},
	"syslog":            {call: func() error { return raw(unix.SYS_SYSLOG, 0xff, 0, 0) }, plain: true},
	"io_uring_setup":    {call: func() error { return raw(unix.SYS_IO_URING_SETUP, 1, badPtr) }},
	"io_uring_enter":    {call: func() error { return raw(unix.SYS_IO_URING_ENTER, badFD, 0, 0, 0, 0, 0) }},
	"io_uring_register": {call: func() error { return raw(unix.SYS_IO_URING_REGISTER, badFD, 0, 0, 0) }},
	// Argument rules: only the dangerous form is refused.
	"clone+CLONE_NEWUSER": {call: func() error { return raw(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS) }}, // EINVAL unfiltered: nothing is made
	"clone3":              {call: func() error { return raw(unix.SYS_CLONE3, 0, 0) }},
	"openat2":             {call: func() error { return raw(unix.SYS_OPENAT2, atFdcwd, cstr("/"), 0, 0) }},
	"ioctl+TIOCSTI":       {call: func() error { return raw(unix.SYS_IOCTL, badFD, unix.TIOCSTI, 0) }},
	"ioctl+TIOCSTI|1<<32": {call: func() error { return raw(unix.SYS_IOCTL, badFD, 1<<32|unix.TIOCSTI, 0) }},
	"ioctl+TIOCLINUX":     {call: func() error { return raw(unix.SYS_IOCTL, badFD, unix.TIOCLINUX, 0) }},
	"fchmodat+S_ISUID": {call: func() error {
		return raw(unix.SYS_FCHMODAT, atFdcwd, cstr(probeFile("fchmodat")), 0o4755)
	}},
	"fchmodat2+S_ISGID": {call: func() error {
		return raw(unix.SYS_FCHMODAT2, atFdcwd, cstr(probeFile("fchmodat2")), 0o2755, 0)
	}},
	"fchmod+S_ISUID": {call: func() error {
		f, err := os.Open(probeFile("fchmod"))
		if err != nil {
			return err
		}
		defer f.Close()
		return raw(unix.SYS_FCHMOD, f.Fd(), 0o4755)
	}},
	"openat+O_CREAT+S_ISUID": {call: func() error {
		fd, _, e := unix.Syscall6(unix.SYS_OPENAT, atFdcwd, cstr(probePath("openat")),
			unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755, 0, 0)
		if e != 0 {
			return e
		}
		return unix.Close(int(fd))
	}},
	"mknodat+S_ISUID": {call: func() error {
		return raw(unix.SYS_MKNODAT, atFdcwd, cstr(probePath("mknodat")), unix.S_IFREG|0o4755, 0)
	}},
}

// everyday are calls a worker needs; each must work under the filter.
var everyday = map[string]func() error{
	"fchmodat+0755": func() error { return raw(unix.SYS_FCHMODAT, atFdcwd, cstr(probeFile("plain")), 0o755) },
	"socket+AF_INET": func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"mmap": func() error {
		b, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err == nil {
			err = unix.Munmap(b)
		}
		return err
	},
	"fork+exec": func() error {
		pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit 0"}, &syscall.ProcAttr{})
		if err != nil {
			return err
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return err
		}
		if ws.ExitStatus() != 0 {
			return errors.New("sh -c 'exit 0' failed")
		}
		return nil
	},
	"personality+query": func() error { return raw(unix.SYS_PERSONALITY, 0xffffffff) },
	"ioctl+TCGETS":      func() error { return ignore(raw(unix.SYS_IOCTL, badFD, unix.TCGETS, 0), unix.EBADF) },
}

// ignore turns the expected errno into success: the call reached the kernel.
func ignore(err error, want unix.Errno) error {
	if errors.Is(err, want) {
		return nil
	}
	return err
}

// syscallCheck runs the probe or everyday call named name for the reporter's `syscall:NAME` check.
func syscallCheck(name string) error {
	if p, ok := probes[name]; ok {
		return p.call()
	}
	if p, ok := probesArch[name]; ok {
		return p.call()
	}
	if c, ok := everyday[name]; ok {
		return c()
	}
	return errors.New("unknown system-call probe")
}
