package integration

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The red team's attacks (redteam_test.go), checks of `child report` that neither child_test.go's check
// nor hostileCheck knows. Each returns "ok" (or "ok:" and what it found) when the attack worked.
//
//	served:SOCK     connect to the Unix socket SOCK ("@NAME": the abstract name NAME) and read what the
//	                server answers (a test's server answers only peers it would serve)
//	plant:P=DATA    create or truncate P with DATA (mode 0755): a file a later launch may use
//	ptrace:PID      attach to PID with PTRACE_SEIZE (it is not stopped) and detach again
//	memopen:PID     open /proc/PID/mem for writing
//	openw:P         open the existing file P for writing, and close it without writing
//	symlink:L=T     replace L (a file or a directory of our own, removed first) with a symbolic link to T
//	sh:CMD          run /bin/sh -c CMD: "ok:" and its output when it exits 0, else its error and output
//	fdlinks         what each descriptor we were started with names (fd=target, space-separated)
//	sidecarreq:SOCK|METHOD|PATH|BODY  one HTTP request to the sidecar on SOCK: "ok:<status>" (an answer
//	                not finished within 10 s, an event stream, is read as far as its status)
//	readline:FD     print "reading" on stdout, then read one line from FD (given up after 20 s): what
//	                someone typed into the terminal FD is
//	winsize:FD      the window size of the terminal at FD, "ok:ROWSxCOLS" (an error when FD is none)
//	winsize-wait:FD=RxC  "ok:RxC" once the terminal at FD has that window size (polled, given up after
//	                20 s with the last size seen)
//	renameover:P    write a new file beside P and rename it over P (an atomic rewrite)
//	unlink:P        remove P
//	statfs:P        the size in bytes of the file system P is on, "ok:BYTES"
//	pidfdsignal:FD  send SIGTERM through the pidfd at FD (pidfd_send_signal): a process outside the worker
//	ttysid:FD       "ok:own" when the terminal at FD is our session's controlling terminal, else the
//	                error of TIOCGSID or "ok:other"
func redteamCheck(kind, arg string) string {
	var err error
	switch kind {
	case "served":
		var c net.Conn
		if c, err = net.Dial("unix", arg); err == nil {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, _ := io.ReadAll(io.LimitReader(c, 64))
			c.Close()
			return "ok:" + strings.TrimSpace(string(b))
		}
	case "plant":
		p, data, _ := strings.Cut(arg, "=")
		if err = os.WriteFile(p, []byte(data), 0o755); err == nil {
			err = os.Chmod(p, 0o755)
		}
	case "ptrace":
		pid, _ := strconv.Atoi(arg)
		if err = unix.PtraceSeize(pid); err == nil {
			err = unix.PtraceDetach(pid)
		}
	case "memopen":
		var f *os.File
		if f, err = os.OpenFile("/proc/"+arg+"/mem", os.O_RDWR, 0); err == nil {
			f.Close()
		}
	case "openw":
		var f *os.File
		if f, err = os.OpenFile(arg, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	case "symlink":
		l, target, _ := strings.Cut(arg, "=")
		if err = os.RemoveAll(l); err == nil {
			err = os.Symlink(target, l)
		}
	case "sh":
		out, err := exec.Command("/bin/sh", "-c", arg).CombinedOutput()
		if err != nil {
			return err.Error() + ": " + strings.TrimSpace(string(out))
		}
		return "ok:" + strings.TrimSpace(string(out))
	case "fdlinks":
		var links []string
		for _, fd := range startFDs {
			l, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
			links = append(links, strconv.Itoa(fd)+"="+l)
		}
		return "ok:" + strings.Join(links, " ")
	case "sidecarreq":
		return sidecarRequest(strings.SplitN(arg, "|", 4))
	case "readline":
		fd, _ := strconv.Atoi(arg)
		_, _ = os.Stdout.WriteString("reading\n")
		line := make(chan string, 1)
		go func() {
			b := make([]byte, 256)
			n, rerr := unix.Read(fd, b)
			if rerr != nil {
				line <- rerr.Error()
				return
			}
			line <- "ok:" + strings.TrimSpace(string(b[:max(n, 0)]))
		}()
		select {
		case l := <-line:
			return l
		case <-time.After(20 * time.Second):
			return "nothing read"
		}
	case "winsize":
		fd, _ := strconv.Atoi(arg)
		var ws *unix.Winsize
		if ws, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			return fmt.Sprintf("ok:%dx%d", ws.Row, ws.Col)
		}
	case "winsize-wait":
		f, want, _ := strings.Cut(arg, "=")
		fd, _ := strconv.Atoi(f)
		last := ""
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			var ws *unix.Winsize
			if ws, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err != nil {
				return err.Error()
			}
			if last = fmt.Sprintf("%dx%d", ws.Row, ws.Col); last == want {
				return "ok:" + last
			}
		}
		return last
	case "ttysid":
		fd, _ := strconv.Atoi(arg)
		var sid, own int
		if sid, err = unix.IoctlGetInt(fd, unix.TIOCGSID); err == nil {
			if own, err = unix.Getsid(0); err == nil && own == sid {
				return "ok:own"
			}
			return "ok:other"
		}
	case "renameover":
		// Replace P as an editor or an atomic writer does: a new file beside it, renamed over it.
		tmp := arg + ".hlaunch-new"
		if err = os.WriteFile(tmp, []byte("REPLACED=1\n"), 0o600); err == nil {
			if err = os.Rename(tmp, arg); err != nil {
				os.Remove(tmp)
			}
		}
	case "unlink":
		err = os.Remove(arg)
	case "statfs":
		var st unix.Statfs_t
		if err = unix.Statfs(arg, &st); err == nil {
			return "ok:" + strconv.FormatUint(st.Blocks*uint64(st.Bsize), 10)
		}
	case "pidfdsignal":
		fd, _ := strconv.Atoi(arg)
		err = unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0)
	default:
		return "unknown check"
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// sidecarRequest sends one request (socket, method, path, body) and answers "ok:<HTTP status>".
func sidecarRequest(f []string) string {
	if len(f) != 4 {
		return "bad sidecarreq"
	}
	c, err := net.Dial("unix", f[0])
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := f[1] + " " + f[2] + " HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(f[3])) + "\r\n\r\n" + f[3]
	if _, err := io.WriteString(c, req); err != nil {
		return err.Error()
	}
	line := make([]byte, 0, 64)
	b := make([]byte, 1)
	for len(line) < 64 {
		if _, err := c.Read(b); err != nil || b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	fields := strings.Fields(string(line))
	if len(fields) < 2 {
		return "no HTTP answer: " + string(line)
	}
	return "ok:" + fields[1]
}
