package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The hostile sandbox suite, continued: the caller's terminal, the launcher's session, the sidecar's socket.

// openPTY opens a new pseudo-terminal pair of the test's own.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	must(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	must(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m, s
}

// Class 3: a sandboxed worker cannot type into its caller's terminal (TIOCSTI), nor take it as its own
// controlling terminal: it runs behind a pty of its own, the leader of its own session, and holds no
// capability. TIOCSTI into its own pty (the filter off) succeeds and is harmless: the test's check is
// that no byte was left in the caller's terminal's input when hlaunch ended. An unsandboxed root child of
// the same terminal (a root-owned home) does leave one (it is in the caller's session, with
// CAP_SYS_ADMIN): the check is not vacuous.
func TestHostileSandboxTerminal(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	// One owner for B's home and --as: the worker starts in its home either way.
	must(t, exec.Command("chown", "-R", "65534:65534", filepath.Join(e.Root, "profiles", "b")).Run())
	legacy, _ := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	// With and without the system-call filter (which also denies TIOCSTI): the pty holds on its own.
	for _, flags := range [][]string{
		{"--sandbox", "--scope", "none"},
		{"--sandbox", "--scope", "none", "--seccomp", "off"},
		{"--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--as", "65534:65534", "--seccomp", "off"},
		{"--scope", "none"},
	} {
		sandboxed := flags[0] == "--sandbox"
		root, stateDir := e.Root, e.State
		if !sandboxed {
			// Root's own worker: a worker of another uid gets a pty of its own too
			// (TestRedteam5DroppedWorkerTypesIntoRootsTerminal).
			re := rootHomeEnv(t)
			root, stateDir = re.Root, re.State
		}
		args := append(append([]string{"--root", root, "--state-dir", stateDir, "exec", "-p", "b"}, flags...), "--", selfBin, "child", "report", "tiocsti:0", "ctty:0")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, hlaunchBin, args...)
		cmd.Env = e.Launcher
		r := onPTY(t, cmd, 0, 0, func(string, *os.File) string { return "" })
		cancel()
		if r.err != nil {
			t.Fatalf("%v: %v: %s", flags, r.err, r.shown)
		}
		c := r.report(t).Checks
		if sandboxed && r.pending != 0 {
			t.Errorf("%v: a sandboxed worker typed %d bytes into its caller's terminal: TIOCSTI %q, TIOCSCTTY+TIOCSTI %q", flags, r.pending, c["tiocsti:0"], c["ctty:0"])
		}
		if !sandboxed && strings.TrimSpace(string(legacy)) != "0" && (c["tiocsti:0"] != "ok" || r.pending == 0) {
			t.Errorf("an unsandboxed root child cannot TIOCSTI its terminal either (%s, %d bytes left): the check proves nothing", c["tiocsti:0"], r.pending)
		}
	}
}

// Class 12: what a worker inherits from its launcher's session. The launcher here (`child session`)
// holds a key in its session keyring, the ADDR_NO_RANDOMIZE personality, SIGUSR2 blocked, SIGINT and
// SIGHUP ignored, descriptor 9 open, RLIMIT_NOFILE 512 and umask 027. A sandboxed worker gets a fresh
// session keyring, the plain personality, an empty signal mask, no ignored signals and stdio only; the
// launcher's umask it keeps (docs/security.md, "The terminal and the session"; so are the rlimits, which a
// Go reporter cannot show: its runtime raises RLIMIT_NOFILE at start-up). A
// negative oom_score_adj is raised to 0 too, but this test cannot set one: lowering it needs
// CAP_SYS_RESOURCE, which these machines' root lacks.
func TestHostileSandboxInheritance(t *testing.T) {
	requireRoot(t)
	prefix := []string{selfBin, "child", "session", "--"}
	checks := []string{"keyread:" + sessionKey, "personality", "umask"}
	// Without the system-call filter (which denies keyctl too): the fresh keyring holds on its own.
	launchPaths(t, "", prefix, noFilter.flags, noFilter.spec, func(t *testing.T, e *env, report func(...string) childReport) {
		rep := report(checks...)
		c := rep.Checks
		if got := c["keyread:"+sessionKey]; got != "required key not available" {
			t.Errorf("the launcher's session key from inside: %q, want ENOKEY (a fresh session keyring)", got)
		}
		if got := c["personality"]; got != "ok:0x0" {
			t.Errorf("personality %q, want 0x0", got)
		}
		if rep.Status["SigBlk"] != "0000000000000000" || rep.Status["SigIgn"] != "0000000000000000" {
			t.Errorf("signals: blocked %s, ignored %s; want none", rep.Status["SigBlk"], rep.Status["SigIgn"])
		}
		if slices.Contains(rep.FDs, 9) {
			t.Errorf("descriptors %v: the launcher's descriptor 9 reached the worker", rep.FDs)
		}
		if rep.PID1Env != "" {
			t.Errorf("/proc/1/environ inside: %q", rep.PID1Env)
		}
		if rep.Status["NoNewPrivs"] != "1" {
			t.Errorf("no_new_privs %q", rep.Status["NoNewPrivs"])
		}
		if got := c["umask"]; got != "ok:027" {
			t.Errorf("umask %q, want the launcher's 027", got)
		}
	})
	// The launcher session is what it says: an unsandboxed child of the launcher's own uid (a root-owned
	// home), in its session, does read the key. One of another uid does not (TestRedteam5DroppedWorkerKeyring).
	e := rootHomeEnv(t)
	r := e.runIn("", prefix, "exec", "-p", "b", "--scope", "none", "--", selfBin, "child", "report", checks[0])
	if got := decodeReport(t, r.Stdout).Checks[checks[0]]; got != "ok:launcher-secret" {
		t.Fatalf("unsandboxed child of the session reads %q: the session holds no key, the check proves nothing", got)
	}
}

// Class 2 (view side): no sandbox reaches a sidecar's socket, also after the sidecar restarted and put a
// new socket in place. The sidecar hides its socket's directory (a mount over the file would be undone
// by the new socket), and every sandbox, a CLI one too, hides the default socket directory /run/hlaunch.
func TestHostileSandboxSidecarSocket(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	t.Run("sidecar restart", func(t *testing.T) {
		e := newEnv(t)
		dir, err := os.MkdirTemp(hostBase, "hl-sc-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "s.sock")
		p := startSidecarProc(t, e, sock)
		done := filepath.Join(e.Root, "profiles", "b", "restarted")
		body, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": true, "argv": []string{selfBin, "child", "connect-until", done, sock}})
		var rc struct{ ID, Log string }
		p.mustDo("POST", "/v1/workers", string(body), 201, &rc)
		p.stop()
		p = startSidecarProc(t, e, sock)
		// The worker tried all along; once the new sidecar answers, one last try and it reports.
		must(t, os.WriteFile(done, nil, 0o644))
		p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, nil)
		out, err := os.ReadFile(rc.Log)
		must(t, err)
		if !strings.HasPrefix(string(out), "refused:") {
			t.Fatalf("a sandboxed worker across a sidecar restart: %q", out)
		}
	})
	t.Run("cli", func(t *testing.T) {
		reachedInPrivateRun(t, newEnv(t), "/run/hlaunch/sidecar.sock")
	})
	// Every user's runtime directory holds its systemd manager's and session bus's sockets, and a socket
	// stays connectable on a read-only mount: a worker running as the home's owner could ask that owner's
	// manager for a unit outside the sandbox. A listener there that B's owner may connect to stands in.
	t.Run("user runtime directory", func(t *testing.T) {
		reachedInPrivateRun(t, newEnv(t), fmt.Sprintf("/run/user/%d/bus", profileUID("b")))
	})
}

// reachedInPrivateRun starts, in a private mount namespace with a tmpfs on /run of its own (the host's /run
// is never touched), a sidecar listening on sock (mode 0666: any uid may connect), checks that it is
// reachable from there, and fails the test if a CLI sandbox of profile b started beside it reaches it.
func reachedInPrivateRun(t *testing.T, e *env, sock string) {
	t.Helper()
	script := fmt.Sprintf(`mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p -m 0755 %[5]s || exit 90
%[1]s --root %[2]s --state-dir %[3]s sidecar --socket %[6]s --scope none --poll-interval 20ms 2>/dev/null &
for i in $(seq 600); do [ -S %[6]s ] && break; sleep 0.05; done
[ -S %[6]s ] && chmod 0666 %[6]s || exit 91
%[4]s connect-until / %[6]s || exit 92
%[1]s --root %[2]s --state-dir %[3]s exec -p b --sandbox --scope none -- %[4]s connect-until / %[6]s
`, hlaunchBin, e.Root, e.State, selfBin+" child", filepath.Dir(sock), sock)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script)
	cmd.Env = e.Launcher
	r := runResult(t, cmd)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 2 || lines[0] != "reached" {
		t.Fatalf("exit %d, %q %s: the listener on %s in the test namespace was not reachable from the host side", r.Code, r.Stdout, r.Stderr, sock)
	}
	if !strings.HasPrefix(lines[1], "refused:") {
		t.Fatalf("a CLI sandbox reached %s: %q", sock, lines[1])
	}
}

// A descriptor is a way around the view: a directory handed to a sandboxed worker as its stdin (the CLI's
// own stdin, or descriptors sent to the sidecar) would let it open anything below it - other profiles, the
// state directory - through openat or /proc/self/fd/0. Refused: exit 125 (the sidecar: no worker).
func TestHostileSandboxStdioDirectory(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	dir, err := os.Open(e.Root)
	must(t, err)
	defer dir.Close()
	probe := "ls:/proc/self/fd/0/profiles"
	cmd := exec.Command(hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox", "--scope", "none",
		"--", selfBin, "child", "report", probe)
	cmd.Env, cmd.Stdin = e.Launcher, dir
	r := runResult(t, cmd)
	if r.Code != 125 || !strings.Contains(r.Stderr, "stdin is a directory") {
		t.Errorf("a directory as a sandboxed worker's stdin: exit %d, stderr %q, stdout %q; want 125", r.Code, r.Stderr, r.Stdout)
	}
	requireCgroup2(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	startSidecarProc(t, e, sock)
	pr, pw, err := os.Pipe()
	must(t, err)
	defer pr.Close()
	spec := `{"profile":"b","sandbox":true,"stdio":"inherit","argv":["` + selfBin + `","child","report","` + probe + `"]}`
	st, body := sidecarSpawnWithFDs(t, sock, spec, int(dir.Fd()), int(pw.Fd()), int(pw.Fd()))
	pw.Close()
	out, _ := io.ReadAll(pr)
	// The target never runs; the refusal reaches the worker's stderr (and the spawn's answer, when the
	// sidecar still waits for the start when it fails).
	if strings.Contains(string(out), "ok:") || !strings.Contains(string(out)+body, "stdin is a directory") {
		t.Errorf("a directory sent to the sidecar as a sandboxed worker's stdin: %d %s; the worker printed %q", st, body, out)
	}
}
