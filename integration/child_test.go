package integration

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childReport is what the child sees of its own world, printed as JSON by `child report`.
type childReport struct {
	PID     int               `json:"pid"`
	PPID    int               `json:"ppid"`
	PGID    int               `json:"pgid"`
	SID     int               `json:"sid"`
	UID     int               `json:"uid"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Cgroup  []string          `json:"cgroup"` // /proc/self/cgroup lines, read before anything else
	NS      map[string]string `json:"ns"`     // namespace links
	Checks  map[string]string `json:"checks"` // check -> "ok" or the error
	Status  map[string]string `json:"status"` // selected /proc/self/status fields
	Procs   []int             `json:"procs"`  // pids visible in /proc
	PID1Env string            `json:"pid1_env"`
	FDs     []int             `json:"fds"` // open descriptors, besides the one listing them
}

// childMain is the test binary acting as the child. Modes:
//
//	report [CHECK...]    print a childReport; checks are open:P, write:P, ls:P, kill:PID, connect:SOCK, cpus:PID|ppid,
//	                     syscall:NAME (a probe of syscalls_test.go), and the attacks of child_hostile_test.go
//	                     (hostileCheck); "{ppid}" in a check's argument is our parent's PID
//	session ... -- CMD   start CMD from a launcher session with things a worker must not inherit (hostileMain)
//	connect-until F S    try connecting to socket S until file F exists, then once more (hostileMain)
//	exit N               exit with N
//	hexargs ARG...       print $HL_BYTES and each ARG in hex, each after an "x", space-separated
//	unhex HEX            write the bytes HEX encodes to stdout, then exit 0
//	query-da             ask its terminal for the primary device attributes (stdin raw, CSI c on stdout) and
//	                     print "da:x" and the answer in hex (empty if none came within 10 s)
//	sleep DUR            sleep, then exit 0
//	echo                 copy stdin to stdout
//	trap                 print "ready", then exit 42 on SIGTERM
//	countsig             count SIGUSR1s (the count so far in $HERMES_HOME/sigcount) and SIGUSR2s, the test's markers
//	                     ($HERMES_HOME/sigmark); on SIGTERM exit with 10 + the SIGUSR1 count
//	spawn-tree DUR       double-fork a setsid grandchild that sleeps DUR, print its pid, sleep DUR
//	forkbomb             fork until fork fails, report how many, exit 0
//	memhog MiB           allocate and touch MiB of memory, then sleep
//	flood SOCK           a socket-group user's attacks on the sidecar at SOCK, driven on stdin (floodMain)
func childMain(args []string) int {
	// The first instruction of interest: read our cgroup before doing anything else.
	cg, _ := os.ReadFile("/proc/self/cgroup")
	startFDs = openFDs()
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "report":
		return report(string(cg), args[1:])
	case "recycle":
		return recycleMain(args[1:])
	case "sleep-exit":
		d, _ := time.ParseDuration(args[1])
		time.Sleep(d)
		n, _ := strconv.Atoi(args[2])
		return n
	case "exit-when":
		// Exits with the code args[2] once the file args[1] exists: an end the test decides, not a clock.
		for {
			if _, err := os.Stat(args[1]); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		n, _ := strconv.Atoi(args[2])
		return n
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "hexargs":
		// Its arguments and $HL_BYTES in hex: JSON would hide bytes that are not UTF-8.
		out := "x" + hex.EncodeToString([]byte(os.Getenv("HL_BYTES")))
		for _, a := range args[1:] {
			out += " x" + hex.EncodeToString([]byte(a))
		}
		fmt.Println(out)
		return 0
	case "unhex":
		// Raw bytes on stdout (escape sequences to a terminal), given in hex so that argv carries any.
		b, err := hex.DecodeString(args[1])
		if err != nil {
			return 2
		}
		_, _ = os.Stdout.Write(b)
		return 0
	case "query-da":
		fmt.Printf("da:x%s\n", hex.EncodeToString(queryDA()))
		return 0
	case "da-canonical":
		// A DA query from a terminal left canonical (as `printf '\e[c'` in a shell), then the next line
		// the terminal gives: what a shell would read as its command.
		fmt.Print("\x1b[cMARK>")
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		fmt.Printf("line:x%s\n", hex.EncodeToString([]byte(line)))
		return 0
	case "sleep":
		d, _ := time.ParseDuration(args[1])
		time.Sleep(d)
		return 0
	case "echo":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		return 0
	case "trap":
		sig := make(chan os.Signal, 1)
		signalNotify(sig, syscall.SIGTERM)
		fmt.Println("ready")
		<-sig
		return 42
	case "countsig":
		sig := make(chan os.Signal, 16)
		signalNotify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM)
		n, marks := 0, 0
		// "0": subscribed. Before this a USR1 is caught by the Go runtime and dropped, so a test that sends
		// one must wait for it (SigCgt shows the runtime's handler from the start, not the subscription).
		write := func(name string, v int) {
			if home := os.Getenv("HERMES_HOME"); home != "" {
				_ = os.WriteFile(filepath.Join(home, name), []byte(strconv.Itoa(v)), 0o644)
			}
		}
		write("sigcount", n)
		for s := range sig {
			switch s {
			case syscall.SIGTERM:
				return 10 + n
			case syscall.SIGUSR2:
				// A marker: every USR1 sent to this process before it has been counted (pending signals
				// are delivered lowest number first, and the channel keeps their order).
				marks++
				write("sigmark", marks)
			default:
				n++
				write("sigcount", n) // the count so far, for a test that waits for each signal to arrive before the next
			}
		}
		return 2
	case "spawn-tree":
		// A grandchild in its own session that outlives its parent: a process-group kill misses it.
		cmd := exec.Command("setsid", "sh", "-c", "sleep "+args[1]+" & echo $!")
		out, err := cmd.Output()
		if err != nil {
			return 3
		}
		fmt.Print(string(out))
		d, _ := time.ParseDuration(args[1] + "s")
		time.Sleep(d)
		return 0
	case "forkbomb":
		n := 0
		for ; n < 10000; n++ {
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				break
			}
		}
		fmt.Println(n)
		return 0
	case "session", "connect-until":
		return hostileMain(args)
	case "flood":
		return floodMain(args)
	case "swap-socket-dir":
		return swapSocketDirMain(args[1:])
	case "memhog":
		mib, _ := strconv.Atoi(args[1])
		var keep [][]byte
		for i := 0; i < mib; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				if j%4096 == 0 {
					b[j] = 1
				}
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated", len(keep))
		time.Sleep(time.Minute)
		return 0
	}
	return 2
}

func report(cg string, checks []string) int {
	r := childReport{
		PID: os.Getpid(), PPID: os.Getppid(), UID: os.Getuid(),
		Env: map[string]string{}, NS: map[string]string{}, Checks: map[string]string{}, Status: map[string]string{},
	}
	r.PGID, _ = syscall.Getpgid(0)
	r.SID, _ = getsid()
	r.Cwd, _ = os.Getwd()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		r.Env[k] = v
	}
	r.Cgroup = strings.Split(strings.TrimSpace(cg), "\n")
	for _, ns := range []string{"mnt", "pid", "ipc", "uts", "net", "user", "cgroup"} {
		r.NS[ns], _ = os.Readlink("/proc/self/ns/" + ns)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "CapEff" || k == "CapPrm" || k == "CapAmb" || k == "CapInh" || k == "TracerPid" || k == "NoNewPrivs" || k == "Seccomp" || k == "Seccomp_filters" || k == "Uid" || k == "Gid" || k == "Groups" || k == "Cpus_allowed_list" ||
				k == "SigBlk" || k == "SigIgn") {
				r.Status[k] = strings.TrimSpace(v)
			}
		}
	}
	if ents, err := os.ReadDir("/proc"); err == nil {
		for _, e := range ents {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				r.Procs = append(r.Procs, n)
			}
		}
		slices.Sort(r.Procs)
	}
	r.FDs = startFDs
	if b, err := os.ReadFile("/proc/1/environ"); err == nil {
		r.PID1Env = strings.ReplaceAll(string(b), "\x00", "\n")
	}
	for _, c := range checks {
		kind, arg, _ := strings.Cut(c, ":")
		r.Checks[c] = check(kind, arg)
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

func check(kind, arg string) string {
	arg = strings.ReplaceAll(arg, "{ppid}", strconv.Itoa(os.Getppid())) // our parent, known only here
	var err error
	switch kind {
	case "open":
		var f *os.File
		if f, err = os.Open(arg); err == nil {
			f.Close()
		}
	case "write":
		p := arg
		if st, e := os.Stat(arg); e == nil && st.IsDir() {
			p = filepath.Join(arg, ".hlaunch-write-probe")
		}
		if err = os.WriteFile(p, []byte("x"), 0o600); err == nil {
			os.Remove(p)
		}
	case "ls":
		var ents []os.DirEntry
		if ents, err = os.ReadDir(arg); err == nil {
			names := make([]string, 0, len(ents))
			for _, e := range ents {
				names = append(names, e.Name())
			}
			return "ok:" + strings.Join(names, ",")
		}
	case "kill":
		pid, _ := strconv.Atoi(arg)
		err = syscall.Kill(pid, 0)
	case "syscall":
		// A raw system call (syscalls_test.go): "ok" or its errno's text.
		err = syscallCheck(arg)
	case "connect":
		var c net.Conn
		if c, err = net.Dial("unix", arg); err == nil {
			c.Close()
		}
	case "sidecar":
		// Ask the sidecar on socket arg for an unsandboxed worker: "ok:<status> <error code>".
		return askSidecar(arg)
	default:
		return hostileCheck(kind, arg)
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// startFDs are the descriptors the child was started with (read before it opened any of its own).
var startFDs []int

func openFDs() []int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var fds []int
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd != int(d.Fd()) {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	return fds
}

// askSidecar connects to the sidecar's socket at sock, asks it for an unsandboxed worker of profile b,
// and answers "ok:<HTTP status> <error code>" (the code is empty on success), or why it could not ask.
func askSidecar(sock string) string {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	body := `{"profile":"b","argv":["true"]}`
	req := "POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		return err.Error()
	}
	resp, err := io.ReadAll(c)
	if err != nil && len(resp) == 0 {
		return err.Error()
	}
	head, rest, _ := strings.Cut(string(resp), "\r\n\r\n")
	status := strings.Fields(head)
	if len(status) < 2 {
		return "no HTTP answer: " + head
	}
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if i := strings.Index(rest, "{"); i >= 0 { // a chunked body has its size before the JSON, a 0 after
		_ = json.NewDecoder(strings.NewReader(rest[i:])).Decode(&eb)
	}
	return "ok:" + status[1] + " " + eb.Error.Code
}
