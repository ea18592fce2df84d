package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// The red team's fourth round, its first theme: what a more privileged launch inherits from what a less
// privileged uid controls (docs/security.md, "What a privileged launch inherits, and what nothing
// bounds"); the second, what a worker or a peer can consume without bound, is in redteam4_bounds_test.go.
// Each test passes while the boundary holds.

// asOwner runs a shell command as uid:gid with no supplementary groups and fails the test when it fails.
func asOwner(t *testing.T, uid, gid int, script string) {
	t.Helper()
	cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", "--", "sh", "-c", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %s: %v: %s", uid, script, err, out)
	}
}

// searchable lets every uid walk down to dir (mode o+x on it and the test's directories above it, up to
// the temporary directory): the profile's owner acts on its home from outside, as a local user would.
func searchable(t *testing.T, dir string) {
	t.Helper()
	stop := filepath.Clean(os.TempDir())
	for d := dir; d != stop && d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		must(t, err)
		must(t, os.Chmod(d, st.Mode().Perm()|0o011))
	}
}

// A root launcher trusts the loader names (PATH, LD_PRELOAD, ...) of a .env that root owns. A profile's
// owner can make one: a root launcher creates a worker's --log (hermes' kanban logs live in the home's
// logs/) as a root-owned file holding what the worker printed, and the owner of the home renames it to
// .env (a rename needs write access to the directories, not ownership of the file); a "true" planted early
// in that PATH must not run as uid 0 at the root launcher's next plain `exec -p b -- true`. Who may write
// the home chooses which file is its .env: a .env in a home another uid owns, or that its group or others
// may write, counts as that uid's, and the launch is refused (exit 125, naming the file and the name).
func TestRedteam4RootLogRenamedToDotenv(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	searchable(t, filepath.Join(e.Root, "profiles"))
	bHome := filepath.Join(e.Root, "profiles", "b")
	uid := profileUID("b")
	ws := filepath.Join(bHome, "workspace")
	pwned := filepath.Join(bHome, "pwned")
	log := filepath.Join(bHome, "logs", "task-7.log")
	// The worker prints the .env it wants; the root launcher writes it to a root-owned file in B's home.
	r := e.run("exec", "-p", "b", "--scope", "none", "--log", log, "--", "printf", "B_MARKER=b\\nPATH="+ws+":/usr/bin:/bin\\n")
	if r.Code != 0 {
		t.Fatalf("the worker's launch: exit %d: %s", r.Code, r.Stderr)
	}
	st, err := os.Stat(log)
	must(t, err)
	if fileOwner(st) != 0 {
		t.Fatalf("%s is owned by uid %d; the attack needs root's file", log, fileOwner(st))
	}
	// The profile's owner, from outside: the root-owned log becomes the .env, and a "true" is planted.
	asOwner(t, uid, uid, "mv -f "+log+" "+bHome+"/.env && printf '#!/bin/sh\\nid -u > "+pwned+"\\n' > "+ws+"/true && chmod 755 "+ws+"/true")
	st, err = os.Stat(filepath.Join(bHome, ".env"))
	must(t, err)
	if fileOwner(st) != 0 {
		t.Fatalf("the renamed .env is owned by uid %d, want 0", fileOwner(st))
	}
	// B's next launch runs as B's owner (a root launcher's worker is its home's owner): the planted program
	// runs with nothing more than the owner who planted it.
	r = e.run("exec", "-p", "b", "--scope", "none", "--", "true")
	if b, err := os.ReadFile(pwned); r.Code != 0 || err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(uid) {
		t.Errorf("B's next launch: exit %d %q, the planted program wrote %q (%v); want it run as B's owner %d, never root", r.Code, r.Stderr, b, err, uid)
	}
	must(t, os.Remove(pwned))
	// Root, asked for: the root-owned .env in the owner's home is the owner's choice, and its PATH is refused.
	asRoot := []string{"exec", "-p", "b", "--scope", "none", "--as", "0:0", "--env", "TMPDIR=/tmp", "--env", "TMP=/tmp", "--env", "TEMP=/tmp"}
	r = e.run(append(asRoot, "--", "true")...)
	if b, err := os.ReadFile(pwned); err == nil {
		t.Errorf("B's owner (uid %d) had its planted %s/true run as uid %s by a root launch (a root-owned log renamed to .env)", uid, ws, strings.TrimSpace(string(b)))
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, ".env:") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("B's next launch as root: exit %d %q; want 125, one line naming the .env", r.Code, r.Stderr)
	}
	// The caller may still name it: --secrets none --pass takes the .env's PATH on purpose.
	must(t, os.Remove(filepath.Join(ws, "true")))
	if r := e.run(append(asRoot, "--secrets", "none", "--pass", "PATH", "--pass", "B_MARKER", "--", "sh", "-c", "echo $PATH")...); r.Code != 0 || !strings.Contains(r.Stdout, ws) {
		t.Errorf("--pass PATH: exit %d %q %q; want the .env's PATH", r.Code, r.Stdout, r.Stderr)
	}
}

// fileOwner is the uid that owns the file st describes.
func fileOwner(st os.FileInfo) int { return int(st.Sys().(*syscall.Stat_t).Uid) }

// A root sidecar runs every spawn's shim as the hlaunch binary beside its own, by path, and `hlaunch
// sidecar` execs the hlaunch-sidecar beside it. Installed in a directory another uid may write (a
// deployment's /opt/hermes/bin owned by the hermes user), that uid could replace the file between two
// spawns and have the next spawn run its program as root. The sidecar refuses to start from such a place
// (exit 125, one line naming the path and its owner), as `hlaunch sidecar` does before it execs, so the
// replaced hlaunch never writes uid 0.
func TestRedteam4SidecarBinaryBesideIsOthers(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	uid, gid := throwawayUser(t)
	dir, err := os.MkdirTemp(hostBase, "hl-rt4-bin-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, name := range []string{"hlaunch", "hlaunch-sidecar"} {
		must(t, copyExecutable(filepath.Join(filepath.Dir(hlaunchBin), name), filepath.Join(dir, name)))
	}
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chown(dir, uid, gid)) // the binaries stay root's; the directory is the other uid's
	marker := filepath.Join(dir, "ran-as")
	for _, how := range []struct {
		name string
		argv []string
	}{
		{"hlaunch sidecar", []string{filepath.Join(dir, "hlaunch"), "--root", e.Root, "--state-dir", e.State, "sidecar"}},
		{"hlaunch-sidecar", []string{filepath.Join(dir, "hlaunch-sidecar"), "--root", e.Root, "--state-dir", e.State}},
	} {
		t.Run(how.name, func(t *testing.T) {
			sock := filepath.Join(scSocketDir(t), "s.sock")
			log := &testutil.Buffer{}
			cmd := exec.Command(how.argv[0], append(how.argv[1:], "--socket", sock, "--scope", "cgroup", "--cgroup-parent", e.Parent)...)
			cmd.Env = e.Launcher
			cmd.Stdout, cmd.Stderr = log, log
			must(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			client := scUnixClient(sock)
			var exitErr error
			served, exited := false, false
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !served && !exited; time.Sleep(5 * time.Millisecond) {
				select {
				case exitErr = <-done:
					exited = true
					continue
				default:
				}
				if resp, err := client.Get("http://sidecar/v1/health"); err == nil {
					resp.Body.Close()
					served = resp.StatusCode == 200
				}
			}
			if !served && !exited {
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("the sidecar neither served nor exited within 15 s: %s", log.String())
			}
			if served {
				// The other uid swaps the hlaunch the sidecar runs for each spawn.
				asOwner(t, uid, gid, "mv "+dir+"/hlaunch "+dir+"/hlaunch.real && printf '#!/bin/sh\\nid -u > "+marker+"\\nexec "+dir+"/hlaunch.real \"$@\"\\n' > "+dir+"/hlaunch && chmod 755 "+dir+"/hlaunch")
				resp, err := client.Post("http://sidecar/v1/workers", "application/json", strings.NewReader(scSpec("b", "true")))
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					t.Logf("spawn after the swap: %d %s", resp.StatusCode, body)
				}
				_ = cmd.Process.Signal(syscall.SIGTERM)
				<-done
				asOwner(t, uid, gid, "mv -f "+dir+"/hlaunch.real "+dir+"/hlaunch")
				if b, err := os.ReadFile(marker); err == nil {
					t.Errorf("uid %d replaced %s/hlaunch and the sidecar's next spawn ran it as uid %s", uid, dir, strings.TrimSpace(string(b)))
					os.Remove(marker)
				}
				t.Fatalf("the sidecar served from %s, a directory uid %d owns; want it refused at start", dir, uid)
			}
			var ee *exec.ExitError
			if err := exitErr; !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(log.String(), dir) || !strings.Contains(log.String(), "owned by uid "+strconv.Itoa(uid)) {
				t.Errorf("the sidecar from %s: %v, output %q; want exit 125 naming the directory and its owner", dir, err, log.String())
			}
		})
	}
}

// A policy's "base" entries copy names from the launcher's own environment, which holds the launch
// profile's settings (the gateway mirrors A's .env into it). The load refuses a credential or a gate there,
// and a launch setting too: "base": ["TERMINAL_*", "HERMES_MODEL"] would give B's child A's
// TERMINAL_ENV=docker and HERMES_MODEL, the seed bug --inherit refuses. Such an entry is refused (exit 125
// naming --policy and the entry), and a wider pattern ("TERM*") never copies a launch setting: B's child
// never reports A's values.
func TestRedteam4PolicyBaseCopiesLaunchSettings(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(doc), 0o600))
		return p
	}
	for _, entry := range []string{`"TERMINAL_*"`, `"HERMES_MODEL"`, `"hermes_model"`, `"HERMES_*"`} {
		pol := write("p.json", `{"base":[`+entry+`]}`)
		r := e.run("--policy", pol, "exec", "-p", "b", "--scope", "none", "--", "env")
		if strings.Contains(r.Stdout, "TERMINAL_ENV=docker") || strings.Contains(r.Stdout, "a-model") {
			t.Errorf("policy base %s: B's child got the launch profile's settings: %q", entry, r.Stdout)
		}
		if r.Code != 125 || !strings.Contains(r.Stderr, "--policy") || !strings.Contains(r.Stderr, strings.Trim(entry, `"`)) {
			t.Errorf("policy base %s: exit %d %q; want 125 naming --policy and the entry", entry, r.Code, r.Stderr)
		}
	}
	pol := write("wide.json", `{"base":["TERM*"]}`)
	r := e.run("--policy", pol, "exec", "-p", "b", "--scope", "none", "--", "env")
	if r.Code != 0 || !strings.Contains(r.Stdout, "TERM=xterm") || strings.Contains(r.Stdout, "TERMINAL_ENV") {
		t.Errorf("policy base TERM*: exit %d %q %q; want TERM=xterm and no TERMINAL_ENV", r.Code, r.Stdout, r.Stderr)
	}
}

// A --spec file says what runs (argv, sandbox or not, --as), a --policy file which of the launcher's own
// names reach every child ("base"). Read by a root launcher (a root cron, `sudo hlaunch`, a system
// sidecar) from a place another uid may write - the gateway's directory, a profile's cron/ - that uid
// would choose what root runs: its spec would run `id -u` as uid 0 unsandboxed, its policy's "base":
// ["A_MARKER"] give B's child launch profile A's value, and a spec that is a FIFO hang the launcher for
// ever. Each is refused (exit 125, one line naming the flag and the owner or mode at fault), as is a spec
// that is not a regular file; a spec on stdin (--spec -) is the caller's own.
func TestRedteam4OrdersFromAnotherUid(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	uid, gid := throwawayUser(t)
	dir, err := os.MkdirTemp(hostBase, "hl-rt4-orders-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chown(dir, uid, gid))
	marker := filepath.Join(dir, "ran-as")
	spec := filepath.Join(dir, "job.json")
	policy := filepath.Join(dir, "policy.json")
	asOwner(t, uid, gid, `printf '{"profile":"b","scope":"none","argv":["sh","-c","id -u > `+marker+`"]}' > `+spec+
		` && printf '{"base":["A_MARKER"]}' > `+policy)
	ownedBy := "owned by uid " + strconv.Itoa(uid)

	r := e.run("exec", "--spec", spec)
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("uid %d's --spec ran as uid %s under a root launcher", uid, strings.TrimSpace(string(b)))
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, "--spec") || !strings.Contains(r.Stderr, ownedBy) {
		t.Errorf("--spec of uid %d: exit %d %q; want 125 naming --spec and its owner", uid, r.Code, r.Stderr)
	}
	r = e.run("--policy", policy, "exec", "-p", "b", "--scope", "none", "--", "env")
	if strings.Contains(r.Stdout, "A_MARKER=a") {
		t.Errorf("uid %d's --policy gave B's child the launcher's A_MARKER=a", uid)
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, "--policy") || !strings.Contains(r.Stderr, ownedBy) {
		t.Errorf("--policy of uid %d: exit %d %q; want 125 naming --policy and its owner", uid, r.Code, r.Stderr)
	}
	// Root's own files in that directory: the other uid can rename them away and put its own in place.
	rootDir := t.TempDir()
	rootSpec := filepath.Join(rootDir, "job.json")
	must(t, os.WriteFile(rootSpec, []byte(`{"profile":"b","scope":"none","argv":["true"]}`), 0o644))
	inOthers := filepath.Join(dir, "root-job.json")
	must(t, os.WriteFile(inOthers, []byte(`{"profile":"b","scope":"none","argv":["true"]}`), 0o644))
	if r := e.run("exec", "--spec", inOthers); r.Code != 125 || !strings.Contains(r.Stderr, dir+": not trusted") {
		t.Errorf("root's --spec in uid %d's directory: exit %d %q; want 125 naming the directory", uid, r.Code, r.Stderr)
	}
	// A link from there to root's own file is root's file: the link is resolved once and the target opened.
	link := filepath.Join(rootDir, "link.json")
	must(t, os.Symlink(rootSpec, link))
	if r := e.run("exec", "--spec", link); r.Code != 0 {
		t.Errorf("a --spec link to root's own file: exit %d %q; want it run", r.Code, r.Stderr)
	}
	fifo := filepath.Join(rootDir, "fifo.json")
	must(t, unix.Mkfifo(fifo, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r := e.runCtx(ctx, nil, "exec", "--spec", fifo); r.Code != 125 || !strings.Contains(r.Stderr, "not a regular file") {
		t.Errorf("a FIFO as --spec: exit %d %q; want 125 saying it is not a regular file (not a launcher blocked on it)", r.Code, r.Stderr)
	}
	// The caller's own stdin stays the caller's.
	if r := e.runCtx(context.Background(), []byte(`{"profile":"b","scope":"none","argv":["true"]}`), "exec", "--spec", "-"); r.Code != 0 {
		t.Errorf("--spec -: exit %d %q", r.Code, r.Stderr)
	}
}

// A root sidecar makes its socket in a fresh 0700 directory beside --socket and sets the socket's mode and
// group before renaming it into place. In a socket directory another uid may write (a /run/hermes the
// gateway's user owns, so that the gateway reaches the socket), that uid can rename the fresh directory
// away and put its own under the name, with a symbolic link to any file: a chmod 0660 and a chown to the
// socket group by path would follow it, giving the group /etc/shadow or /etc/sudoers. The window is a few
// system calls wide; the sidecar runs under strace, which delays its fchmodat calls by 0.3 s (as a
// preemption there would), and the attacker, a throwaway user owning the directory, swaps on the
// directory's inotify event. The target is a root-owned 0600 file of the test's: it must not become 0660
// and of the attacker's group.
func TestRedteam4SocketDirSwap(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (apt-get install strace)")
	}
	e := newEnv(t)
	uid, gid := throwawayUser(t)
	dir, err := os.MkdirTemp(tmpBase, "rt4s-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chown(dir, uid, gid))
	target := filepath.Join(t.TempDir(), "shadow")
	must(t, os.WriteFile(target, []byte("root:secret\n"), 0o600))
	attacker := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", "--",
		selfBin, "child", "swap-socket-dir", dir, target, "60s")
	var aout bytes.Buffer
	attacker.Stdout, attacker.Stderr = &aout, &aout
	must(t, attacker.Start())
	t.Cleanup(func() { _ = attacker.Process.Kill(); _ = attacker.Wait(); t.Logf("attacker: %s", aout.String()) })
	sock := filepath.Join(dir, "s.sock")
	for i := range 3 {
		log := &testutil.Buffer{}
		cmd := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=fchmodat", "-e", "inject=fchmodat:delay_enter=300000",
			hlaunchBin, "--root", e.Root, "--state-dir", e.State, "sidecar", "--socket", sock,
			"--socket-group", strconv.Itoa(gid), "--scope", "cgroup", "--cgroup-parent", e.Parent)
		cmd.Env = e.Launcher
		cmd.Stdout, cmd.Stderr = log, log
		must(t, cmd.Start())
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		client := scUnixClient(sock)
		client.Timeout = 2 * time.Second
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if resp, err := client.Get("http://sidecar/v1/health"); err == nil {
				resp.Body.Close()
				break
			}
			select {
			case <-done:
				deadline = time.Time{}
			default:
			}
		}
		// The sidecar is strace's child: end it (strace then exits), else strace itself.
		if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)); err == nil {
			for _, k := range strings.Fields(string(kids)) {
				if pid, err := strconv.Atoi(k); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		client.CloseIdleConnections()
		t.Logf("start %d: %s", i+1, log.String())
		st, err := os.Stat(target)
		must(t, err)
		if gotGID := st.Sys().(*syscall.Stat_t).Gid; st.Mode().Perm() != 0o600 || gotGID != 0 {
			t.Fatalf("start %d: the attacker (uid %d) had the root sidecar chmod/chown %s: now mode %04o gid %d (sidecar output %q)",
				i+1, uid, target, st.Mode().Perm(), gotGID, log.String())
		}
	}
}
