package integration

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The child's attacks (hostile_sandbox_test.go): what a hostile worker tries from inside its sandbox.
// Each returns "ok" (or "ok:" and what it found) when the attack worked, else the error.

// sessionKey is the description of the key the "session" launcher holds in its session keyring.
const sessionKey = "hlaunch-test-launcher-key"

// hostileCheck runs one check of `child report` that child_test.go's check does not know:
//
//	read:P          the content of file P, trimmed
//	writeto:P=DATA  write DATA to the existing file P (a cgroup.procs), creating nothing
//	tiocsti:FD      push a byte into the terminal open at FD, as if typed (ioctl TIOCSTI)
//	ctty:FD         start a session of our own and take the terminal at FD as its controlling terminal
//	keyread:DESC    find the user key DESC in our session keyring and read it
//	chmod:MODE:P    chmod P to octal MODE
//	copy:SRC:DST    copy SRC to a new DST, mode 0755
//	personality     our personality, in hex
//	umask           our umask, in octal
//	nofile          our RLIMIT_NOFILE, soft:hard
//	mounts          "ok" when every writable directory mount is nosuid and nodev (devpts aside), else
//	                the mount points that are not
func hostileCheck(kind, arg string) string {
	var err error
	switch kind {
	case "read":
		var b []byte
		if b, err = os.ReadFile(arg); err == nil {
			return "ok:" + strings.TrimSpace(string(b))
		}
	case "writeto":
		p, data, _ := strings.Cut(arg, "=")
		var f *os.File
		if f, err = os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			_, err = f.WriteString(data)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	case "tiocsti":
		fd, _ := strconv.Atoi(arg)
		err = tiocsti(fd)
	case "ctty":
		fd, _ := strconv.Atoi(arg)
		if _, err = unix.Setsid(); err == nil {
			if err = unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0); err == nil {
				err = tiocsti(fd)
			}
		}
	case "keyread":
		var id int
		if id, err = unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", arg, 0); err == nil {
			buf := make([]byte, 256)
			var n int
			if n, err = unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0); err == nil {
				return "ok:" + string(buf[:min(n, len(buf))])
			}
		}
	case "chmod":
		m, p, _ := strings.Cut(arg, ":")
		mode, _ := strconv.ParseUint(m, 8, 32)
		err = unix.Chmod(p, uint32(mode))
	case "copy":
		src, dst, _ := strings.Cut(arg, ":")
		var b []byte
		if b, err = os.ReadFile(src); err == nil {
			err = os.WriteFile(dst, b, 0o755)
		}
	case "personality":
		p, _, errno := syscall.Syscall(syscall.SYS_PERSONALITY, 0xffffffff, 0, 0)
		if errno == 0 {
			return fmt.Sprintf("ok:%#x", p)
		}
		err = errno
	case "umask":
		m := syscall.Umask(0)
		syscall.Umask(m)
		return fmt.Sprintf("ok:%#o", m)
	case "nofile":
		var rl syscall.Rlimit
		if err = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
			return fmt.Sprintf("ok:%d:%d", rl.Cur, rl.Max)
		}
	case "mounts":
		return writableMountsHardened()
	default:
		return redteamCheck(kind, arg)
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// tiocsti pushes one byte into the input of the terminal open at fd. The one use of unsafe in this
// package: the ioctl takes a pointer to the byte.
func tiocsti(fd int) error {
	b := byte('#')
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSTI, uintptr(unsafe.Pointer(&b))); errno != 0 {
		return errno
	}
	return nil
}

// writableMountsHardened lists the writable directory mounts of our view that lack nosuid or nodev.
func writableMountsHardened() string {
	var bad []string
	for _, m := range mounts() {
		opts := "," + m.opts + ","
		if strings.Contains(opts, ",ro,") || m.fstype == "devpts" {
			continue
		}
		if st, err := os.Stat(m.point); err != nil || !st.IsDir() {
			continue // a device node bound on its own (/dev/null): nothing can be created in it
		}
		if !strings.Contains(opts, ",nosuid,") || !strings.Contains(opts, ",nodev,") {
			bad = append(bad, m.point+" ("+m.opts+")")
		}
	}
	if len(bad) > 0 {
		return "writable without nosuid,nodev: " + strings.Join(bad, " ")
	}
	return "ok"
}

// hostileMain runs the child modes of the hostile tests.
//
//	session -- CMD...       exec CMD (a launcher) from a session that holds what a worker must not
//	                        inherit: a session keyring with the key sessionKey, the ADDR_NO_RANDOMIZE
//	                        personality, SIGUSR2 blocked, SIGINT, SIGHUP and signal 32 ignored,
//	                        RLIMIT_NOFILE 512 (soft), umask 027, and descriptor 9 open without
//	                        close-on-exec
//	connect-until FILE SOCK try to connect to SOCK until FILE exists, then once more; print "reached" at
//	                        the first success, else "refused: <last error>"
func hostileMain(args []string) int {
	switch args[0] {
	case "session":
		// Keyrings, the signal mask and the personality belong to the thread that execs.
		runtime.LockOSThread()
		if err := launcherSession(); err != nil {
			fmt.Fprintln(os.Stderr, "session:", err)
			return 3
		}
		cmd := args[2:]
		err := syscall.Exec(cmd[0], cmd, os.Environ())
		fmt.Fprintln(os.Stderr, "exec:", err)
		return 3
	case "connect-until":
		var last error
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			_, statErr := os.Stat(args[1])
			c, err := net.Dial("unix", args[2])
			if err == nil {
				c.Close()
				fmt.Println("reached")
				return 0
			}
			last = err
			if statErr == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Println("refused:", last)
		return 0
	}
	return 2
}

// launcherSession gives this thread (and what it execs) the session of a sloppy or privileged launcher.
func launcherSession() error {
	if _, _, errno := syscall.Syscall(syscall.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
		return fmt.Errorf("join session keyring: %w", errno)
	}
	if _, err := unix.AddKey("user", sessionKey, []byte("launcher-secret"), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
		return fmt.Errorf("add_key: %w", err)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_PERSONALITY, addrNoRandomize, 0, 0); errno != 0 {
		return fmt.Errorf("personality: %w", errno)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	rl.Cur = 512
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	syscall.Umask(0o027)
	fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	if err := unix.Dup3(fd, 9, 0); err != nil {
		return err
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
	// Signal 32, which the Go runtime leaves as it found it: ignored by raw rt_sigaction.
	ign := [4]uint64{1} // handler SIG_IGN, flags, restorer, mask
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, 32, uintptr(unsafe.Pointer(&ign)), 0, 8, 0, 0); errno != 0 {
		return fmt.Errorf("rt_sigaction(32): %w", errno)
	}
	var set unix.Sigset_t
	set.Val[0] = 1 << (uint(syscall.SIGUSR2) - 1)
	return unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil)
}

// addrNoRandomize is linux/personality.h's ADDR_NO_RANDOMIZE (setarch -R).
const addrNoRandomize = 0x0040000
