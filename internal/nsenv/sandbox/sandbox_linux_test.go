package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel tests re-execute the test binary (Go's GO_WANT_HELPER_PROCESS pattern) in three roles:
//
//	launcher (envLauncher): an unprivileged launcher; builds SysProcAttr itself and starts the stub
//	stub     (envChild):    the init stub inside the new namespaces; Enter, then execve the reporter
//	reporter (envReport):   the target program, PID 1 of the sandbox; prints what it sees as JSON
const (
	envChild     = "HLAUNCH_SANDBOX_CHILD"      // JSON Spec
	envTargetEnv = "HLAUNCH_SANDBOX_TARGET_ENV" // JSON []string: the clean environ of the target
	envBench     = "HLAUNCH_SANDBOX_BENCH"      // stub execs /bin/true instead of the reporter; "noenter": skip Enter
	envLauncher  = "HLAUNCH_SANDBOX_LAUNCHER"   // run as launcher
	envReport    = "HLAUNCH_SANDBOX_REPORT"     // JSON probe
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envReport) != "":
		os.Exit(reportMain(os.Getenv(envReport)))
	case os.Getenv(envLauncher) != "":
		os.Exit(launcherMain())
	case os.Getenv(envChild) != "":
		runtime.LockOSThread() // Enter's capability and no_new_privs changes belong to this thread
		os.Exit(stubMain())
	}
	os.Exit(m.Run())
}

// stubMain is the init stub: Enter, then execve the target with its clean environ only.
func stubMain() int {
	var sb Spec
	if err := json.Unmarshal([]byte(os.Getenv(envChild)), &sb); err != nil {
		fmt.Fprintln(os.Stderr, "stub: sandbox:", err)
		return 110
	}
	var env []string
	if err := json.Unmarshal([]byte(os.Getenv(envTargetEnv)), &env); err != nil {
		fmt.Fprintln(os.Stderr, "stub: environ:", err)
		return 110
	}
	// The test binary may live under the host's /tmp, which the sandbox covers: hold it open.
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stub:", err)
		return 110
	}
	start := time.Now()
	if os.Getenv(envBench) != "noenter" {
		if err := sb.Enter(); err != nil {
			fmt.Fprintln(os.Stderr, "stub: enter:", err)
			return 111
		}
	}
	if os.Getenv(envBench) != "" {
		fmt.Println(time.Since(start).Nanoseconds()) // BenchmarkEnter reports it
	}
	if sb.Cwd != "" {
		if err := os.Chdir(sb.Cwd); err != nil {
			fmt.Fprintln(os.Stderr, "stub: chdir:", err)
			return 112
		}
	}
	if os.Getenv(envBench) != "" {
		err = syscall.Exec("/bin/true", []string{"true"}, env)
	} else {
		err = syscall.Exec(fmt.Sprintf("/proc/self/fd/%d", exe.Fd()), []string{"nsenv-report"}, env)
	}
	fmt.Fprintln(os.Stderr, "stub: exec:", err)
	return 127
}

// launcherMain plays an unprivileged launcher: SysProcAttr decides on a user namespace by itself.
func launcherMain() int {
	var sb Spec
	if err := json.Unmarshal([]byte(os.Getenv(envChild)), &sb); err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return 110
	}
	if err := UserNamespaces().Err; err != nil {
		fmt.Fprintln(os.Stdout, "NOUSERNS:", err)
		return 3
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, envLauncher+"=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sb.SysProcAttr(cmd.SysProcAttr)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return 113
	}
	return 0
}

// probe is what the reporter is asked to try.
type probe struct {
	List    []string // directories to list
	Open    []string // files to open read-only
	Write   []string // directories to create a file in
	Connect []string // unix sockets to connect to
	Kill    int      // a host pid to signal with 0
	Marker  string   // name of the files Write creates
}

// report is what the reporter saw; error results are errno names ("ENOENT"), success is "ok".
type report struct {
	Pid      int
	Uid      int
	Hostname string
	List     map[string][]string
	ListErr  map[string]string
	Open     map[string]string
	Write    map[string]string
	Connect  map[string]string
	Kill     string
	LoopOK   string // a TCP listen and dial on 127.0.0.1
	Procs    []string
	Environ1 []string
	Status   map[string]string
	Dumpable int
	Core     uint64
	Ifaces   []string
	UIDMap   string
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return unix.ErrnoName(en)
	}
	return err.Error()
}

func reportMain(spec string) int {
	var p probe
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		return 110
	}
	r := report{Pid: os.Getpid(), Uid: os.Getuid(), List: map[string][]string{}, ListErr: map[string]string{},
		Open: map[string]string{}, Write: map[string]string{}, Connect: map[string]string{}, Status: map[string]string{}}
	r.Hostname, _ = os.Hostname()
	for _, d := range p.List {
		ents, err := os.ReadDir(d)
		r.ListErr[d] = errName(err)
		r.List[d] = []string{}
		for _, e := range ents {
			r.List[d] = append(r.List[d], e.Name())
		}
	}
	for _, f := range p.Open {
		fh, err := os.Open(f)
		if err == nil {
			fh.Close()
		}
		r.Open[f] = errName(err)
	}
	for _, d := range p.Write {
		err := os.WriteFile(filepath.Join(d, p.Marker), []byte("x"), 0o644)
		r.Write[d] = errName(err)
	}
	for _, s := range p.Connect {
		c, err := net.Dial("unix", s)
		if err == nil {
			c.Close()
		}
		r.Connect[s] = errName(err)
	}
	r.Kill = errName(unix.Kill(p.Kill, 0))
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err != nil {
		r.LoopOK = errName(err)
	} else {
		c, err := net.Dial("tcp", l.Addr().String())
		r.LoopOK = errName(err)
		if err == nil {
			c.Close()
		}
		l.Close()
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			r.Procs = append(r.Procs, e.Name())
		}
	}
	if b, err := os.ReadFile("/proc/1/environ"); err == nil {
		r.Environ1 = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && (strings.HasPrefix(k, "Cap") || k == "NoNewPrivs") {
				r.Status[k] = strings.TrimSpace(v)
			}
		}
	}
	r.Dumpable, _ = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	var rl unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_CORE, &rl)
	r.Core = rl.Max
	if b, err := os.ReadFile("/proc/self/uid_map"); err == nil {
		r.UIDMap = strings.Join(strings.Fields(string(b)), " ")
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		r.Ifaces = append(r.Ifaces, i.Name)
	}
	slices.Sort(r.Ifaces)
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 1
	}
	return 0
}
