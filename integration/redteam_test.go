package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The red team: attacks a hostile worker makes on purpose, from inside a real child, each kept as a
// test that guards its boundary; docs/security.md names them.

// A sandboxed worker can neither trace nor write into its init (PID 1 of its pid namespace, the
// hlaunch stub that reports its exit), write the kernel's tunables in /proc or /sys, nor open a device
// that is not one of the harmless few - with the system-call filter and without it, and as uid 0 (--as
// 0:0, no capabilities) too.
func TestRedteamSandboxKernelAndInit(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	checks := []string{"ptrace:1", "memopen:1", "openw:/proc/sys/kernel/core_pattern", "openw:/proc/sysrq-trigger",
		"openw:/sys/kernel/uevent_helper", "openw:/sys/kernel/profiling", "open:/dev/kmsg", "open:/dev/mem", "open:/dev/port"}
	for _, d := range []string{"/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/loop0"} {
		if _, err := os.Stat(d); err == nil {
			checks = append(checks, "open:"+d)
		}
	}
	// uid 0 without capabilities cannot enter a home of another owner's (0700): root's own, for --as 0:0.
	rootHome := newEnv(t)
	must(t, exec.Command("chown", "-R", "0:0", filepath.Join(rootHome.Root, "profiles", "b")).Run())
	for _, c := range []struct {
		e     *env
		flags []string
	}{
		{e, []string{"--sandbox", "--scope", "none"}},
		{e, []string{"--sandbox", "--scope", "none", "--seccomp", "off"}},
		{rootHome, []string{"--sandbox", "--scope", "none", "--seccomp", "off", "--as", "0:0"}},
		{rootHome, []string{"--sandbox", "--scope", "none", "--as", "0:0"}},
	} {
		flags := c.flags
		rep, _ := c.e.report(append([]string{"-p", "b"}, flags...), checks...)
		for _, c := range checks {
			if got := rep.Checks[c]; got == "ok" {
				t.Errorf("%v: %s worked from inside the sandbox", flags, c)
			}
		}
	}
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		for _, extra := range [][]string{nil, {"--seccomp", "off"}} {
			args := append(append([]string{"exec", "-p", "b", "--sandbox", "--scope", "none"}, extra...), "--", selfBin, "child", "report")
			r := w.asNobody(append(args, checks...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			rep := decodeReport(t, r.Stdout)
			for _, c := range checks {
				if got := rep.Checks[c]; got == "ok" {
					t.Errorf("unprivileged launcher %v: %s worked from inside the sandbox", extra, c)
				}
			}
		}
	})
}

// Links a sandboxed worker plants in its own home are not followed by the next launch: its workspace
// re-pointed at a host directory is refused as the next worker's --cwd and --rw, its logs/ re-pointed
// there is refused as a --log directory; nothing is created in the host directory. And a --rw path
// that holds the state directory does not re-expose it: the state and the ledger stay hidden.
func TestRedteamHomeLinksAndHiddenState(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	outside, err := os.MkdirTemp(hostBase, "hl-rt-outside-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(outside) })
	must(t, os.Chmod(outside, 0o777))
	bHome := filepath.Join(e.Root, "profiles", "b")
	ws, logs := filepath.Join(bHome, "workspace"), filepath.Join(bHome, "logs")
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none"}, "symlink:"+ws+"="+outside, "symlink:"+logs+"="+outside)
	for k, v := range rep.Checks {
		if v != "ok" {
			t.Fatalf("the worker could not plant its links (%s: %s): the test proves nothing", k, v)
		}
	}
	for _, flags := range [][]string{
		{"--sandbox", "--scope", "none", "--cwd", ws},
		{"--sandbox", "--scope", "none", "--rw", ws},
		{"--sandbox", "--scope", "none", "--log", filepath.Join(logs, "next.log")},
		{"--scope", "none", "--detach", "--log", filepath.Join(logs, "next.log")},
	} {
		args := append(append([]string{"exec", "-p", "b"}, flags...), "--", selfBin, "child", "report", "write:.")
		if r := e.run(args...); r.Code != 125 {
			t.Errorf("%v through the worker's link: exit %d (%s), want 125", flags, r.Code, strings.TrimSpace(r.Stderr))
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the next launches created %d entries in the host directory the links point at", len(ents))
	}

	t.Run("state under a --rw path", func(t *testing.T) {
		e := newEnv(t)
		top, err := os.MkdirTemp(hostBase, "hl-rt-top-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(top) })
		must(t, os.Chmod(top, 0o755))
		e.State = filepath.Join(top, "state")
		must(t, os.MkdirAll(filepath.Join(e.State, "ledger"), 0o700))
		must(t, os.WriteFile(filepath.Join(e.State, "ledger", "probe"), []byte("x"), 0o600))
		// uid 0 without capabilities owns root's 0700 state dir: only hiding keeps it out. It needs a
		// home of root's to start in.
		must(t, exec.Command("chown", "-R", "0:0", filepath.Join(e.Root, "profiles", "b")).Run())
		rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none", "--as", "0:0", "--seccomp", "off", "--rw", top},
			"ls:"+e.State, "write:"+e.State, "ls:"+filepath.Join(e.State, "ledger"), "write:"+top)
		if rep.Checks["write:"+top] != "ok" {
			t.Fatalf("the --rw path is not writable inside (%s): the test proves nothing", rep.Checks["write:"+top])
		}
		for _, k := range []string{"write:" + e.State} {
			if rep.Checks[k] == "ok" {
				t.Errorf("%s from inside the sandbox", k)
			}
		}
		for _, k := range []string{"ls:" + e.State, "ls:" + filepath.Join(e.State, "ledger")} {
			if got := rep.Checks[k]; strings.HasPrefix(got, "ok:") && got != "ok:" {
				t.Errorf("%s: %q, want nothing", k, got)
			}
		}
	})
}

// A sandboxed worker that makes namespaces of its own (a user namespace gives it every capability
// there) cannot unmount what covers the host: the tmpfs over the hermes root, the fresh /proc over the
// host's. The kernel locks the mounts a less privileged mount namespace copies. Without the filter
// (which refuses unshare), from a root launcher and from an unprivileged launcher's user namespace.
func TestRedteamSandboxNestedNamespaces(t *testing.T) {
	requireRoot(t)
	attacks := func(root string) map[string]string {
		return map[string]string{
			"sh:unshare -Um sh -c 'umount -l " + root + " && echo UNMOUNTED; ls " + root + "/profiles'": root,
			"sh:unshare -Um sh -c 'umount -l /proc && echo UNMOUNTED'":                                  "/proc",
		}
	}
	look := func(t *testing.T, rep childReport, as map[string]string) {
		t.Helper()
		for c, what := range as {
			got := rep.Checks[c]
			if strings.Contains(got, "UNMOUNTED") || strings.Contains(got, "\na") || strings.Contains(got, "ok:a") {
				t.Errorf("a nested namespace uncovered %s: %q", what, got)
			}
			if !strings.Contains(got, "umount: ") {
				t.Errorf("%s: %q: the attack did not get as far as the mount call", c, got)
			}
		}
	}
	e := newEnv(t)
	as := attacks(e.Root)
	checks := slices.Collect(maps.Keys(as))
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none", "--seccomp", "off"}, checks...)
	look(t, rep, as)
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		as := attacks(w.Root)
		checks := slices.Collect(maps.Keys(as))
		r := w.asNobody(append([]string{"exec", "-p", "b", "--sandbox", "--scope", "none", "--seccomp", "off", "--", selfBin, "child", "report"}, checks...)...)
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		look(t, decodeReport(t, r.Stdout), as)
	})
}

// A worker spawned by a sidecar - from a warm slot or not, sandboxed or not - starts with stdio and
// nothing else: no descriptor of the sidecar's (its listening socket, a client's connection, its state
// directory, a slot's pipes) reaches it, and its stdin is not a socket it could talk to the sidecar on.
func TestRedteamSidecarWorkerDescriptors(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	// The reporter (a Go test binary) opens a few descriptors of its own at start-up: started directly with
	// only stdio, it shows what "nothing inherited" looks like. The Go runtime also keeps its cgroup's CPU
	// quota files open where it finds them (stableFDs): off in the reference and in the workers alike.
	ref := exec.Command(selfBin, "child", "report")
	ref.Env = append(os.Environ(), stableFDs)
	out, err := ref.Output()
	must(t, err)
	want := fmt.Sprint(decodeReport(t, string(out)).FDs)
	for _, warm := range []string{"0", "2"} {
		t.Run("warm "+warm, func(t *testing.T) {
			e := newEnv(t)
			p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--warm", warm)
			for _, spec := range []map[string]any{{"sandbox": true}, {}} {
				spec["env"] = map[string]string{"GODEBUG": strings.TrimPrefix(stableFDs, "GODEBUG=")}
				rep := p.report(spec, "fdlinks")
				if fmt.Sprint(rep.FDs) != want {
					t.Errorf("%v: started with descriptors %v (%s), want %s (stdio and the reporter's own)", spec, rep.FDs, rep.Checks["fdlinks"], want)
				}
				if got := rep.Checks["fdlinks"]; strings.Contains(got, "socket:") || !strings.HasPrefix(got, "ok:0=/dev/null") {
					t.Errorf("%v: descriptors %s, want stdin /dev/null and no socket", spec, got)
				}
			}
		})
	}
}

// servePeers listens on the Unix socket at addr ("@NAME": abstract) and answers "served" to every peer
// whose host uid is want (-1: any peer), "refused" to the rest: what a service that trusts its own
// user does (systemd's private socket, a session bus, an agent's socket). It is closed at the end.
func servePeers(t *testing.T, addr string, want int) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			answer := "refused"
			if uid, err := peerUID(c.(*net.UnixConn)); err == nil && (want < 0 || uid == want) {
				answer = "served"
			}
			_, _ = c.Write([]byte(answer + "\n"))
			c.Close()
		}
	}()
}

// peerUID is the host uid of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) { cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return -1, err
	}
	if serr != nil {
		return -1, serr
	}
	return int(cred.Uid), nil
}

// runtimeDir makes dir (mode 0700, owned by uid) with a socket systemd/private in it that serves uid,
// the way a user's systemd manager does: whoever reaches it as that uid can start any command outside
// every sandbox (systemd-run --user). It returns the socket's path.
func runtimeDir(t *testing.T, dir string, uid int) string {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "systemd"), 0o700))
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "systemd", "private")
	servePeers(t, sock, uid)
	for _, p := range []string{dir, filepath.Join(dir, "systemd"), sock} {
		must(t, os.Chown(p, uid, uid))
	}
	must(t, os.Chmod(sock, 0o600))
	return sock
}

// A sandboxed worker does not reach a service that serves its host uid: the user manager of the uid it
// runs as (systemd-run --user starts anything, unsandboxed, as that uid; in a hermes deployment every
// profile belongs to that one user). The host's /run is in the view, read-only, and connect(2) needs no
// write access to the mount. Root launcher: the worker is the home's owner, whose manager's socket is
// /run/user/<uid>/systemd/private. Unprivileged launcher: the worker is the launcher's own uid, and its
// $XDG_RUNTIME_DIR (only its hlaunch/ directory is hidden) holds that socket.
func TestRedteamSandboxReachesItsUsersManager(t *testing.T) {
	requireRoot(t)
	t.Run("root launcher", func(t *testing.T) {
		e := newEnv(t)
		uid := profileUID("b")
		if _, err := os.Stat("/run/user"); os.IsNotExist(err) {
			must(t, os.Mkdir("/run/user", 0o755))
			t.Cleanup(func() { os.Remove("/run/user") }) // after dir's removal: cleanups run last first
		}
		dir := filepath.Join("/run/user", strconv.Itoa(uid))
		if _, err := os.Lstat(dir); err == nil {
			t.Fatalf("%s exists: not the test's to use", dir)
		}
		sock := runtimeDir(t, dir, uid)
		rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none"}, "served:"+sock)
		if got := rep.Checks["served:"+sock]; got == "ok:served" {
			t.Errorf("a sandboxed worker of B (uid %d) was served by its user's manager socket %s: it can start anything outside its sandbox", uid, sock)
		}
	})
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		base, err := os.MkdirTemp(hostBase, "hl-rt-run-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(base) })
		must(t, os.Chmod(base, 0o755))
		xdg := filepath.Join(base, "run")
		sock := runtimeDir(t, xdg, 65534)
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", w.bin, "--root", w.Root,
			"--state-dir", w.State, "exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report", "served:"+sock)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_RUNTIME_DIR=" + xdg}
		r := runResult(t, cmd)
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		if got := decodeReport(t, r.Stdout).Checks["served:"+sock]; got == "ok:served" {
			t.Errorf("an unprivileged launcher's sandboxed worker was served by the launcher's own manager socket %s ($XDG_RUNTIME_DIR/systemd/private)", sock)
		}
	})
}

// A worker that reached the sidecar's socket anyway (here: handed to it as an O_PATH stdin) gets
// nothing of another worker either: listing, the event stream, a signal and a stop of a worker the
// gateway started are all refused (403), and that worker runs on. Sandboxed and unsandboxed in a cgroup.
func TestRedteamSidecarWorkerPeerCannotTouchOthers(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock, "--socket-group", strconv.Itoa(profileUID("b")))
	var victim struct{ ID string }
	p.mustDo("POST", "/v1/workers", scSpec("a", selfBin, "child", "sleep", "120s"), 201, &victim)
	const via = "/proc/self/fd/0"
	reqs := []string{
		"sidecarreq:" + via + "|GET|/v1/workers|",
		"sidecarreq:" + via + "|GET|/v1/workers/" + victim.ID + "|",
		"sidecarreq:" + via + "|GET|/v1/events|",
		"sidecarreq:" + via + "|POST|/v1/workers/" + victim.ID + `/signal|{"signal":"KILL"}`,
		"sidecarreq:" + via + "|POST|/v1/workers/" + victim.ID + "/stop|{}",
	}
	for _, args := range [][]string{
		{"-p", "b", "--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent},
		{"-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent},
	} {
		rep := e.execWithStdin(openPath(t, sock), args, reqs...)
		for _, c := range reqs {
			if got := rep.Checks[c]; got != "ok:403" {
				t.Errorf("%v: %s: %q, want ok:403", args, c, got)
			}
		}
	}
	var got struct{ State string }
	p.mustDo("GET", "/v1/workers/"+victim.ID, "", 200, &got)
	if got.State != "running" {
		t.Errorf("the gateway's worker is %q after the attacks, want running", got.State)
	}
	p.mustDo("POST", "/v1/workers/"+victim.ID+"/stop", "{}", 200, nil)
}

// A sandboxed worker's fork bomb stops at --pids (its init, and detached its shim, count too: every thread of each), in the foreground and detached;
// and the roots it can name through /proc show the same view as "/" (under the hermes root, only B) or
// nothing (its init's: not dumpable).
func TestRedteamSandboxForkBombAndProcRoots(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	for _, detach := range []bool{false, true} {
		log := filepath.Join(t.TempDir(), "w.log")
		args := []string{"exec", "-p", "b", "--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "64", "--log", log}
		if detach {
			args = append(args, "--detach")
		}
		r := e.run(append(args, "--", selfBin, "child", "forkbomb")...)
		if r.Code != 0 {
			t.Fatalf("detach=%v: exit %d: %s", detach, r.Code, r.Stderr)
		}
		var b []byte
		for i := 0; i < 400 && !strings.Contains(string(b), "\n"); i++ { // the count, once it is written
			b, _ = os.ReadFile(log)
			time.Sleep(50 * time.Millisecond)
		}
		if detach {
			var rc receipt
			must(t, json.Unmarshal([]byte(r.Stdout), &rc))
			e.run("stop", rc.ID)
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || n < 1 || n >= 64 {
			t.Errorf("detach=%v: the fork bomb forked %q times under --pids 64", detach, b)
		}
	}
	profiles := filepath.Join(e.Root, "profiles")
	checks := []string{"ls:/proc/1/root" + profiles, "ls:/proc/self/root" + profiles, "ls:/proc/1/cwd/../.."}
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none"}, checks...)
	for _, c := range checks[:2] {
		if got := rep.Checks[c]; strings.HasPrefix(got, "ok:") && got != "ok:b" {
			t.Errorf("%s: %q, want only b", c, got)
		}
	}
	if got := rep.Checks[checks[2]]; strings.Contains(got, "a,") || strings.Contains(got, ",a") {
		t.Errorf("%s: %q", checks[2], got)
	}
}

// The gateway's own client, run by a hostile worker: a sandboxed worker spawned through the sidecar gets
// the sidecar's socket (as an O_PATH stdin, so the view does not matter) and the Python client, and asks
// for a worker of profile A, the list, a SIGKILL and a stop of the gateway's worker. Every call raises
// Forbidden; the gateway's worker runs on.
func TestRedteamPythonClientFromSandbox(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	py := scPython(t)
	e := newEnv(t)
	dir, err := os.MkdirTemp(hostBase, "hl-rt-py-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	scClientDir(t, dir)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock, "--socket-group", strconv.Itoa(profileUID("b")))
	var victim struct{ ID string }
	p.mustDo("POST", "/v1/workers", scSpec("a", selfBin, "child", "sleep", "120s"), 201, &victim)
	script := `import sys; sys.path.insert(0, ` + strconvQuote(dir) + `)
from hlaunch_client import Client
c = Client("/proc/self/fd/0")
v = ` + strconvQuote(victim.ID) + `
out = []
for name, f in [("spawn", lambda: c.spawn({"profile": "a", "argv": ["true"]})), ("list", c.list),
                ("signal", lambda: c.signal(v, "KILL")), ("stop", lambda: c.stop(v))]:
    try:
        f()
        out.append(name + "=ok")
    except Exception as e:
        out.append(name + "=" + type(e).__name__)
print(" ".join(out))
`
	spec, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": true, "stdio": "inherit", "argv": []string{py, "-c", script}})
	pr, pw, err := os.Pipe()
	must(t, err)
	defer pr.Close()
	st, body := sidecarSpawnWithFDs(t, sock, string(spec), int(openPath(t, sock).Fd()), int(pw.Fd()), int(pw.Fd()))
	pw.Close()
	if st != 201 {
		t.Fatalf("spawn: %d %s", st, body)
	}
	out, _ := io.ReadAll(pr)
	if got, want := strings.TrimSpace(string(out)), "spawn=Forbidden list=Forbidden signal=Forbidden stop=Forbidden"; got != want {
		t.Errorf("the Python client inside B's sandbox: %q, want %q", got, want)
	}
	var v struct{ State string }
	p.mustDo("GET", "/v1/workers/"+victim.ID, "", 200, &v)
	if v.State != "running" {
		t.Errorf("the gateway's worker is %q after the attacks, want running", v.State)
	}
	p.mustDo("POST", "/v1/workers/"+victim.ID+"/stop", "{}", 200, nil)
}

// A forged record gets no signal through: whoever could write the state directory (an unsandboxed
// worker of an unprivileged launcher can: its uid's) re-points a record of its own at a sibling worker
// (the sibling's token, PID, cgroup and cgroup id), copies the sibling's record under a new id, or
// points its record at the parent of every worker with a token minted for it. stop and signal (--all)
// on each are refused (exit 3), and the sibling runs on.
func TestRedteamForgedRecords(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	start := func() receipt {
		r := e.run("exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--", selfBin, "child", "sleep", "120s")
		if r.Code != 0 {
			t.Fatalf("start: %d %s", r.Code, r.Stderr)
		}
		var rc receipt
		must(t, json.Unmarshal([]byte(r.Stdout), &rc))
		return rc
	}
	victim, attacker := start(), start()
	workers := filepath.Join(e.State, "workers")
	read := func(id string) map[string]any {
		b, err := os.ReadFile(filepath.Join(workers, id+".json"))
		must(t, err)
		var m map[string]any
		must(t, json.Unmarshal(b, &m))
		return m
	}
	write := func(id string, m map[string]any) {
		b, _ := json.Marshal(m)
		must(t, os.WriteFile(filepath.Join(workers, id+".json"), b, 0o600))
	}
	vrec, arec := read(victim.ID), read(attacker.ID)
	try := func(name, id string) {
		for _, args := range [][]string{{"stop", id}, {"signal", "-s", "KILL", id}, {"signal", "--all", "-s", "KILL", id}} {
			if r := e.run(args...); r.Code != 3 {
				t.Errorf("%s: %v: exit %d (%s), want 3 (refused)", name, args, r.Code, strings.TrimSpace(r.Stderr))
			}
		}
		if r := e.run("status", victim.ID); r.Code != 0 {
			t.Fatalf("%s: the victim is no longer running: status exit %d %s", name, r.Code, r.Stdout)
		}
	}
	// The attacker's own record, re-pointed at the victim.
	forged := map[string]any{}
	for k, v := range arec {
		forged[k] = v
	}
	for _, k := range []string{"token", "pid", "cgroup", "cgroup_id", "start_time", "shim_pid", "shim_start", "fingerprint"} {
		forged[k] = vrec[k]
	}
	write(attacker.ID, forged)
	try("own record re-pointed at a sibling", attacker.ID)
	// The victim's record under another id.
	const fake = "w-0123456789ab"
	copied := map[string]any{}
	for k, v := range vrec {
		copied[k] = v
	}
	copied["id"] = fake
	write(fake, copied)
	try("a sibling's record under a new id", fake)
	// The attacker's record pointed at the parent of every worker, with a token minted for it.
	forged = map[string]any{}
	for k, v := range arec {
		forged[k] = v
	}
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(v2, e.Parent), &st))
	forged["cgroup"], forged["cgroup_id"] = "/"+e.Parent, st.Ino
	forged["token"] = mintToken(t, v2, victim.PID, "/"+e.Parent)
	forged["pid"] = victim.PID
	write(attacker.ID, forged)
	try("own record pointed at the workers' parent", attacker.ID)
	write(attacker.ID, arec)
	e.run("stop", victim.ID)
	e.run("stop", attacker.ID)
}
