package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
	"github.com/hlaunch/hlaunch/internal/testutil"
)

// mintToken makes a verified token for pid in cgroup cg (relative to the v2 root) with the public codec,
// as any local user could: the token codec has no secret in it. CaptureChild reads the same facts of any
// process a forger may name (pid need not be the test's child nor a member of cg): only the checks at
// use, never the capture, stand between a forged token and a signal.
func mintToken(t *testing.T, v2root string, pid int, cg string) string {
	t.Helper()
	id := fingerprint.CaptureChild(fingerprint.Sources{CgroupRoot: v2root}, pid, cg)
	if id.Unverified {
		t.Fatalf("minting a token for pid %d in %s: %s", pid, cg, id.Reason)
	}
	return id.Token()
}

// strangerIn starts `sleep 300` (not hlaunch's) in the v2 cgroup dir, which the test made.
func strangerIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	c := exec.Command("sleep", "300")
	must(t, c.Start())
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(c.Process.Pid)), 0o644))
	return c
}

// Class 7: a token is no authority of its own. Tokens minted (the codec is public) for a parent of
// workers, for a cgroup hlaunch never made, for a marked directory that is not a worker's own, tampered
// from a real worker's token, or carried to another state directory, verify against the live system; each
// must get zero signals and exit 3 (a changed character: 125); `stop` with the parent's token must not
// kill every worker under it.
func TestHostileMintedTokens(t *testing.T) {
	requireRoot(t)
	v2root := requireCgroup2(t)
	e := newEnv(t)
	sub := e.Parent + "/sub"
	// The victim counts SIGUSR1s and exits 10+count on SIGTERM: its exit code tells what reached it.
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", sub}, selfBin, "child", "countsig")
	if rc.Cgroup != "/"+sub+"/"+rc.ID {
		t.Fatalf("receipt cgroup %q, want /%s/%s", rc.Cgroup, sub, rc.ID)
	}
	// A cgroup the test made without hlaunch's mark, named like a worker, and a marked directory inside
	// the worker's own cgroup (marked by the test as root: no worker of hlaunch's could).
	foreignCg := "/" + e.Parent + "/w-0123456789ab"
	foreign := strangerIn(t, filepath.Join(v2root, foreignCg))
	innerCg := rc.Cgroup + "/inner"
	inner := strangerIn(t, filepath.Join(v2root, innerCg))
	must(t, syscall.Setxattr(filepath.Join(v2root, innerCg), "trusted.hlaunch", []byte("1"), 0))

	// A tampered token: the worker's own, re-pointed at its parent, with a correct checksum.
	ident, err := fingerprint.ParseToken(rc.Token)
	must(t, err)
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(v2root, sub), &st))
	ident.Cgroup, ident.CgroupID = "/"+sub, st.Ino
	tampered := ident.Token()
	flipped := []byte(rc.Token)
	if flipped[20] == 'A' {
		flipped[20] = 'B'
	} else {
		flipped[20] = 'A'
	}

	other := filepath.Join(t.TempDir(), "other-state")
	cases := []struct {
		name  string
		token string
		state string
		want  int
	}{
		{"parent of workers", mintToken(t, v2root, rc.PID, "/"+sub), "", 3},
		{"top parent", mintToken(t, v2root, rc.PID, "/"+e.Parent), "", 3},
		{"unmarked cgroup", mintToken(t, v2root, foreign.Process.Pid, foreignCg), "", 3},
		{"marked, not a worker's own", mintToken(t, v2root, inner.Process.Pid, innerCg), "", 3},
		{"tampered, checksum fixed", tampered, "", 3},
		{"one character changed", string(flipped), "", 125},
		{"another state directory", rc.Token, other, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pre := []string{}
			if c.state != "" {
				pre = []string{"--state-dir", c.state}
			}
			for _, args := range [][]string{
				{"signal", "-s", "USR1", c.token},
				{"signal", "--all", "-s", "USR1", c.token},
				{"stop", "--grace", "100ms", c.token},
			} {
				r := e.with(t).run(append(pre, args...)...)
				if r.Code != c.want {
					t.Errorf("%s: exit %d, want %d (stderr %q)", args[0], r.Code, c.want, r.Stderr)
				}
				if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n != 0 {
					t.Errorf("%s: the refusal is %d lines, want one: %q", args[0], n+1, r.Stderr)
				}
			}
			for _, p := range []int{rc.PID, foreign.Process.Pid, inner.Process.Pid} {
				if !alive(p) {
					t.Fatalf("pid %d died from a minted token", p)
				}
			}
		})
	}
	// The worker's own id still works, and the worker heard nothing before: SIGTERM alone, exit 10.
	must(t, syscall.Kill(inner.Process.Pid, syscall.SIGKILL)) // the test's own stranger in the worker's cgroup
	_, _ = inner.Process.Wait()
	if r := e.run("stop", "--grace", "5s", rc.ID); r.Code != 0 {
		t.Fatalf("stop by id: %d %s", r.Code, r.Stderr)
	}
	end, _ := e.record(rc.ID)
	if end.ExitCode == nil || *end.ExitCode != 10 {
		t.Fatalf("the worker's exit %v (signal %q): want 10, no SIGUSR1 ever reached it", end.ExitCode, end.Signal)
	}
}

// openPath opens p with O_PATH: a descriptor that names the socket without the view having to show it.
// A worker given it as its stdin connects to /proc/self/fd/0 (the magic link reaches the socket wherever
// it is), so the sidecar's own refusal is tested, independent of what the sandbox's view hides.
func openPath(t *testing.T, p string) *os.File {
	t.Helper()
	fd, err := syscall.Open(p, unix.O_PATH|syscall.O_CLOEXEC, 0)
	must(t, err)
	f := os.NewFile(uintptr(fd), p)
	t.Cleanup(func() { f.Close() })
	return f
}

// execWithStdin runs `hlaunch exec ARGS -- child report CHECKS` with stdin as the child's fd 0.
func (e *env) execWithStdin(stdin *os.File, args []string, checks ...string) childReport {
	e.t.Helper()
	full := append([]string{"--root", e.Root, "--state-dir", e.State, "exec"}, args...)
	full = append(append(full, "--", selfBin, "child", "report"), checks...)
	cmd := exec.Command(hlaunchBin, full...)
	cmd.Env, cmd.Stdin = e.Launcher, stdin
	r := runResult(e.t, cmd)
	if r.Code != 0 {
		e.t.Fatalf("hlaunch %v: exit %d: %s", full, r.Code, r.Stderr)
	}
	var rep childReport
	must(e.t, json.Unmarshal([]byte(r.Stdout), &rep))
	return rep
}

// sidecarSpawnWithFDs asks the sidecar on sock for a worker (spec, stdio inherit) with fds as its stdin,
// stdout and stderr (SCM_RIGHTS), and returns the HTTP status and body.
func sidecarSpawnWithFDs(t *testing.T, sock, spec string, fds ...int) (int, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	must(t, err)
	defer c.Close()
	req := "POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(spec)) + "\r\n\r\n" + spec
	_, _, err = c.(*net.UnixConn).WriteMsgUnix([]byte(req), syscall.UnixRights(fds...), nil)
	must(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Class 2, the sidecar's side: a peer that is a worker - sandboxed (another pid namespace; a root
// launcher's sandboxed worker is its home's owner to SO_PEERCRED) or unsandboxed in a cgroup hlaunch made - is
// refused with 403 "forbidden" and gets no worker, however it reached the socket. The socket reaches the
// child as an O_PATH descriptor, so what the view hides does not matter here. None may get 201 and an
// unsandboxed worker.
func TestHostileSidecarRefusesWorkerPeers(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	// The socket is open to B's group: a root launcher's sandboxed worker runs as B's owner, and must get
	// as far as the sidecar's refusal.
	p := startSidecarProc(t, e, sock, "--socket-group", strconv.Itoa(profileUID("b")))
	const via = "sidecar:/proc/self/fd/0"
	before := len(p.list())
	for _, c := range []struct {
		name string
		args []string
	}{
		{"cli --sandbox", []string{"-p", "b", "--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent}},
		{"cli --sandbox --scope none", []string{"-p", "b", "--sandbox", "--scope", "none"}},
		{"cli unsandboxed in its cgroup", []string{"-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := e.with(t).execWithStdin(openPath(t, sock), c.args, via)
			if got := rep.Checks[via]; got != "ok:403 forbidden" {
				t.Errorf("a worker's request to the sidecar: %q, want \"ok:403 forbidden\"", got)
			}
		})
	}
	t.Run("through the sidecar, sandboxed", func(t *testing.T) {
		pr, pw, err := os.Pipe()
		must(t, err)
		defer pr.Close()
		spec := `{"profile":"b","sandbox":true,"stdio":"inherit","argv":["` + selfBin + `","child","report","` + via + `"]}`
		sockFD := openPath(t, sock)
		st, body := sidecarSpawnWithFDs(t, sock, spec, int(sockFD.Fd()), int(pw.Fd()), int(pw.Fd()))
		pw.Close()
		if st != 201 {
			t.Fatalf("spawn: %d %s", st, body)
		}
		out, _ := io.ReadAll(pr) // the worker's report; EOF once it and its shim have closed the pipe
		var rep childReport
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("report: %v: %q", err, out)
		}
		if got := rep.Checks[via]; got != "ok:403 forbidden" {
			t.Errorf("a sandboxed worker's request to the sidecar: %q, want \"ok:403 forbidden\"", got)
		}
	})
	// Only the one worker this test asked for through the sidecar exists: no peer obtained one.
	if n := len(p.list()); n != before+1 {
		t.Errorf("the sidecar has %d records, want %d: a refused peer got a worker", n, before+1)
	}
	// The pid namespace refused the sandboxed peers, not their uid: the sandbox's default identity is one
	// the uid check serves (the profile home's owner, root here), so this is the check that holds.
	if !strings.Contains(p.log.String(), "another pid namespace") {
		t.Errorf("the sidecar's log does not say why it refused the sandboxed peer:\n%s", p.log.String())
	}
}

// throwawayUser adds a user (and its group) for the test and removes it afterwards (or, when the run is
// killed, the next run does: sweepUsers).
func throwawayUser(t *testing.T) (uid, gid int) {
	t.Helper()
	name := throwawayUserName(t)
	out, err := exec.Command("useradd", "-M", "-U", "-s", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	must(t, err)
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// asUser runs cmd with uid and gid and no supplementary groups.
func asUser(cmd *exec.Cmd, uid, gid int) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: false}}
	return cmd
}

// Class 9: a directory hlaunch keeps records in is the launcher's alone, or it is refused (exit 125, one
// line naming the directory) before anything starts. Another user (a throwaway one) pre-creates the
// state directory, plants a symbolic link in its place, or owns the records' subdirectory; a root
// launcher and an unprivileged one (its default under $TMPDIR, which anyone can make first) both refuse.
// No launch may run and keep its records where the other user could forge or swap them.
func TestHostileStateDir(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	attacker, agid := throwawayUser(t)
	// A sticky, world-writable parent, as /tmp is.
	pub, err := os.MkdirTemp(tmpBase, "hlst-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(pub) })
	must(t, os.Chmod(pub, 0o777|os.ModeSticky))
	attackerDir := func(name string) string {
		d := filepath.Join(pub, name)
		must(t, os.Mkdir(d, 0o777))
		must(t, os.Chmod(d, 0o777))
		must(t, os.Chown(d, attacker, agid))
		return d
	}
	planted := attackerDir("planted")
	must(t, os.Symlink(attackerDir("elsewhere"), filepath.Join(pub, "link")))
	loose := filepath.Join(pub, "loose")
	must(t, os.Mkdir(loose, 0o700))
	must(t, os.Chmod(loose, 0o777))
	sub := filepath.Join(pub, "sub")
	must(t, os.Mkdir(sub, 0o700))
	must(t, os.Mkdir(filepath.Join(sub, "workers"), 0o700))
	must(t, os.Chown(filepath.Join(sub, "workers"), attacker, agid))

	for _, c := range []struct{ name, dir, blame string }{
		{"made by another user", planted, planted},
		{"a symbolic link", filepath.Join(pub, "link"), filepath.Join(pub, "link")},
		{"writable by others", loose, loose},
		{"records' subdirectory owned by another user", sub, filepath.Join(sub, "workers")},
	} {
		t.Run("root/"+c.name, func(t *testing.T) {
			for _, args := range [][]string{
				{"exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--", "sleep", "300"},
				{"exec", "-p", "b", "--scope", "none", "--", "true"},
				{"ps"},
			} {
				r := e.with(t).run(append([]string{"--state-dir", c.dir}, args...)...)
				if r.Code != 125 || !strings.Contains(r.Stderr, c.blame) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
					t.Errorf("%v: exit %d, stderr %q; want 125 and one line naming %s", args, r.Code, r.Stderr, c.blame)
				}
			}
			ents, _ := os.ReadDir(filepath.Join(c.dir, "workers"))
			if len(ents) != 0 {
				t.Errorf("records were written in the refused directory: %v", ents)
			}
		})
	}
	t.Run("root/ledger made by another user", func(t *testing.T) {
		ledger := attackerDir("ledger")
		r := e.with(t).run("--ledger-dir", ledger, "exec", "-p", "b", "--detach", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--", "sleep", "300")
		if r.Code != 125 || !strings.Contains(r.Stderr, ledger) {
			t.Errorf("exit %d, stderr %q; want 125 naming %s", r.Code, r.Stderr, ledger)
		}
		if ents, _ := os.ReadDir(ledger); len(ents) != 0 {
			t.Errorf("ledger records were written in the attacker's directory: %v", ents)
		}
	})
	if ents, _ := os.ReadDir(filepath.Join(requireCgroup2(t), e.Parent)); len(ents) != 0 {
		for _, d := range ents {
			if d.IsDir() {
				t.Errorf("a refused launch made cgroup %s", d.Name())
			}
		}
	}

	// An unprivileged launcher's default state dir is $TMPDIR/hlaunch-<uid>; the attacker makes it first.
	victim, vgid := throwawayUser(t)
	world, err := os.MkdirTemp(tmpBase, "hlsw-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(world) })
	must(t, os.Chmod(world, 0o755))
	bin := filepath.Join(world, "hlaunch")
	must(t, copyExecutable(hlaunchBin, bin))
	must(t, os.MkdirAll(filepath.Join(world, "hermes", "profiles", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(world, "hermes", "profiles", "b", ".env"), []byte("B_MARKER=b\n"), 0o644))
	victimRun := func(tmp string, args ...string) result {
		cmd := exec.Command(bin, append([]string{"--root", filepath.Join(world, "hermes")}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "LANG=C.UTF-8", "TMPDIR=" + tmp}
		return runResult(t, asUser(cmd, victim, vgid))
	}
	t.Run("unprivileged/default made by another user", func(t *testing.T) {
		d := attackerDir("hlaunch-" + strconv.Itoa(victim))
		r := victimRun(pub, "exec", "-p", "b", "--detach", "--scope", "none", "--", "true")
		if r.Code != 125 || !strings.Contains(r.Stderr, d) {
			t.Errorf("exit %d, stderr %q; want 125 naming %s", r.Code, r.Stderr, d)
		}
		if ents, _ := os.ReadDir(filepath.Join(d, "workers")); len(ents) != 0 {
			t.Errorf("records were written in the attacker's directory: %v", ents)
		}
	})
	t.Run("unprivileged/its own", func(t *testing.T) {
		own, err := os.MkdirTemp(tmpBase, "hlso-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(own) })
		must(t, os.Chmod(own, 0o777|os.ModeSticky))
		r := victimRun(own, "exec", "-p", "b", "--detach", "--scope", "none", "--", "true")
		if r.Code != 0 {
			t.Fatalf("exit %d, stderr %q: a state dir the launcher made itself is refused", r.Code, r.Stderr)
		}
		var rc receipt
		must(t, json.Unmarshal([]byte(r.Stdout), &rc))
		if w := victimRun(own, "wait", "--timeout", "30s", rc.ID); w.Code != 0 {
			t.Errorf("wait: %d %s", w.Code, w.Stderr)
		}
		// The worker's end is recorded before its shim exits: wait for the shim too, so that the throwaway
		// user has no process left when it is removed.
		for deadline := time.Now().Add(20 * time.Second); rc.ShimPID > 0 && alive(rc.ShimPID); {
			if time.Now().After(deadline) {
				t.Fatalf("the worker's shim %d still runs", rc.ShimPID)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// sdSidecar starts `hlaunch sidecar` inside the test manager's world (its cgroup subtree and namespaces),
// as a sidecar on a systemd host runs, and stops it at the end of the test.
func sdSidecar(t *testing.T, m *systemdtest.Manager, e *env, sock string) *scProc {
	t.Helper()
	p := &scProc{t: t, e: e, sock: sock, log: &testutil.Buffer{}, client: scUnixClient(sock), done: make(chan struct{})}
	p.cmd = m.Command(context.Background(), hlaunchBin, "--root", e.Root, "--state-dir", e.State, "sidecar",
		"--socket", sock, "--scope", "systemd", "--user", "--poll-interval", "20ms")
	p.cmd.Env = append(append([]string{}, e.Launcher...), m.Env()...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	must(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("sidecar output:\n%s", p.log.String())
		}
	})
	p.waitReady()
	return p
}

// An unsandboxed worker in a systemd scope (no mark of hlaunch's on it) is refused by the sidecar too:
// a foreground one by its generated scope name (it has no record), a detached one with its own --unit
// name by the record the sidecar's watcher has seen. Neither may get 201 and a worker.
func TestHostileSidecarRefusesScopedPeers(t *testing.T) {
	requireRoot(t)
	m := systemdtest.Start(t)
	// A root-owned home: its worker is root, the sidecar's uid, so the kernel lets it connect and what
	// refuses it is the sidecar's own check (a worker of a user's home is refused by the socket's mode).
	e := rootHomeEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := sdSidecar(t, m, e, sock)
	const via = "sidecar:/proc/self/fd/0"
	hl := func(stdin *os.File, args ...string) result {
		cmd := m.Command(context.Background(), hlaunchBin, append([]string{"--root", e.Root, "--state-dir", e.State}, args...)...)
		cmd.Env = append(append([]string{}, e.Launcher...), m.Env()...)
		cmd.Stdin = stdin
		if stdin == nil || !slices.Contains(args, "--detach") {
			return runResult(t, cmd)
		}
		// --stdio inherit: the shim keeps the caller's stdout, so it is a file here, not a pipe to wait on.
		out, err := os.CreateTemp(t.TempDir(), "receipt")
		must(t, err)
		defer out.Close()
		cmd.Stdout = out
		code := 0
		if err := cmd.Run(); err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		b, _ := os.ReadFile(out.Name())
		return result{Code: code, Stdout: string(b)}
	}

	r := hl(openPath(t, sock), "exec", "-p", "b", "--scope", "systemd", "--user", "--", selfBin, "child", "report", via)
	var rep childReport
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rep) != nil {
		t.Fatalf("foreground scoped exec: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	if got := rep.Checks[via]; got != "ok:403 forbidden" {
		t.Errorf("a foreground scoped worker's request to the sidecar: %q, want \"ok:403 forbidden\"", got)
	}

	// Detached, with a --unit name of its own: it asks once the sidecar lists it (a file the test makes).
	dir := t.TempDir()
	gate, log := filepath.Join(dir, "go"), filepath.Join(dir, "report.json")
	unit := "hermes-worker-" + randHex(3)
	// Bounded (about 60 s), and the gate is opened at cleanup too: a failing test leaves no waiting worker.
	script := `i=0; while [ ! -e "$1" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done; exec "$2" child report "$3"`
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	r = hl(openPath(t, sock), "exec", "-p", "b", "--detach", "--stdio", "inherit", "--log", log, "--scope", "systemd",
		"--user", "--unit", unit, "--", "sh", "-c", script, "sh", gate, selfBin, via)
	var rc receipt
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rc) != nil {
		t.Fatalf("detached scoped exec: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	p.waitAdopted(rc.ID) // the watcher has seen the record: its view has the worker's scope
	must(t, os.WriteFile(gate, nil, 0o600))
	if w := hl(nil, "wait", "--timeout", "30s", rc.ID); w.Code != 0 {
		t.Fatalf("wait: %d %s", w.Code, w.Stderr)
	}
	b, err := os.ReadFile(log)
	must(t, err)
	rep = childReport{}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v: %q", err, b)
	}
	if got := rep.Checks[via]; got != "ok:403 forbidden" {
		t.Errorf("a detached scoped worker's request to the sidecar: %q, want \"ok:403 forbidden\"", got)
	}
}

// waitAdopted reads the event stream from the start until the watcher reports id adopted (a worker it did
// not spawn, seen running in its records).
func (p *scProc) waitAdopted(id string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://sidecar/v1/events?since=0", nil)
	resp, err := p.client.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var e scEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.ID == id && e.Type == "adopted" {
			return
		}
	}
	p.t.Fatalf("the sidecar never reported %s adopted: %v", id, sc.Err())
}
