package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// Privilege follows the profile (docs/security.md, "Privilege follows the profile"): a root
// launcher runs every worker, sandboxed or not, as its profile home's owner, so what that owner (or its
// own hostile sandboxed worker) writes in the home or its .env chooses nothing a more privileged worker
// runs.

// hermesHome gives profile b of e to a throw-away hermes user (a real passwd entry, its own group), as
// production homes are, and returns the user's ids.
func hermesHome(t *testing.T, e *env) (uid, gid int, home string) {
	t.Helper()
	uid, gid = throwawayUser(t)
	home = filepath.Join(e.Root, "profiles", "b")
	must(t, exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, gid), home).Run())
	return uid, gid, home
}

// wantIDs fails unless rep says the worker ran as uid:gid with no supplementary group.
func wantIDs(t *testing.T, rep childReport, uid, gid int) {
	t.Helper()
	u, g := strconv.Itoa(uid), strconv.Itoa(gid)
	if rep.Status["Uid"] != strings.Repeat(u+"\t", 3)+u || rep.Status["Gid"] != strings.Repeat(g+"\t", 3)+g || rep.Status["Groups"] != "" {
		t.Errorf("worker ids: Uid %q Gid %q Groups %q; want %d:%d and no supplementary group", rep.Status["Uid"], rep.Status["Gid"], rep.Status["Groups"], uid, gid)
	}
}

// Class 1: B's sandboxed worker plants a Python .pth in B's user site, and B's owner points B's .env's
// HOME at the home and adds a git pager. The next UNSANDBOXED launch of B by a root launcher (CLI, and a
// root sidecar) must not run as uid 0 with that HOME (Python would run the .pth as root): it runs as B's
// owner, and with --as 0:0 the foreign .env's HOME is refused, naming it, before anything starts.
func TestPrivilegeFollowsProfileUnsandboxed(t *testing.T) {
	requireRoot(t)
	// The system's Python, which any uid may run (a root's PATH may lead to one under /root).
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("python3: %v", err) // installed on every host the suite runs on (.ci/run, the guest image)
	}
	e := newEnv(t)
	uid, gid, home := hermesHome(t, e)
	site := strings.TrimSpace(runOut(t, exec.Command(py, "-c", "import site; print(site.getusersitepackages())"), "HOME="+home))
	pwned := filepath.Join(home, "pwned")
	pth := "import os; open(" + strconv.Quote(pwned) + ", 'a').write('%d:%d ' % (os.getuid(), os.getgid()))\n"
	mkdir, plant := "sh:mkdir -p "+site, "plant:"+filepath.Join(site, "hl.pth")+"="+pth
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none"}, mkdir, plant)
	if rep.Checks[plant] != "ok" {
		t.Fatalf("B's sandboxed worker could not plant its .pth: %s %s", rep.Checks[mkdir], rep.Checks[plant])
	}
	// B's owner rewrites B's .env (a sandboxed worker cannot: it is read-only in its view).
	dotenv := "HOME=" + home + "\nGIT_CONFIG_COUNT=1\nGIT_CONFIG_KEY_0=core.pager\nGIT_CONFIG_VALUE_0=touch " + pwned + "\nB_MARKER=b\nFIRECRAWL_API_KEY=b-fc\n"
	write := asUser(exec.Command("sh", "-c", "cat > "+filepath.Join(home, ".env")), uid, gid)
	write.Stdin = strings.NewReader(dotenv)
	if out, err := write.CombinedOutput(); err != nil {
		t.Fatalf("B's owner rewriting its .env: %v %s", err, out)
	}
	noRoot := func(t *testing.T) {
		t.Helper()
		b, _ := os.ReadFile(pwned)
		for _, w := range strings.Fields(string(b)) {
			if strings.HasPrefix(w, "0:") {
				t.Errorf("the planted .pth ran as root: %q", b)
			}
		}
	}

	t.Run("cli", func(t *testing.T) {
		for _, scope := range []string{"none", "cgroup"} {
			args := []string{"exec", "-p", "b", "--scope", scope}
			if scope == "cgroup" {
				args = append(args, "--cgroup-parent", e.Parent)
			}
			r := e.run(append(args, "--", py, "-c", "pass")...)
			if r.Code != 0 {
				t.Fatalf("%v: exit %d %s", args, r.Code, r.Stderr)
			}
			noRoot(t)
			rep, _ := e.report(args[1:], "open:/etc/shadow")
			wantIDs(t, rep, uid, gid)
			if rep.Env["HOME"] != home || rep.Cwd != home {
				t.Errorf("HOME %q, cwd %q; want B's own %s for a worker of B's owner", rep.Env["HOME"], rep.Cwd, home)
			}
			if rep.Checks["open:/etc/shadow"] == "ok" {
				t.Error("B's worker read /etc/shadow")
			}
		}
		// Detached too: the shim stays root, the worker drops.
		must(t, os.MkdirAll(e.State, 0o700))
		r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--log", filepath.Join(e.State, "w.log"), "--", selfBin, "child", "report")
		if r.Code != 0 {
			t.Fatalf("detached: exit %d %s", r.Code, r.Stderr)
		}
		var rc struct{ ID string }
		must(t, json.Unmarshal([]byte(r.Stdout), &rc))
		if w := e.run("wait", "--timeout", "60s", rc.ID); w.Code != 0 {
			t.Fatalf("wait: %d %s", w.Code, w.Stderr)
		}
		out, err := os.ReadFile(filepath.Join(e.State, "w.log"))
		must(t, err)
		wantIDs(t, decodeReport(t, string(out)), uid, gid)

		// --as 0:0: the explicit root worker reads no code-choosing name from B's owner's .env.
		r = e.run("exec", "-p", "b", "--scope", "none", "--as", "0:0", "--", py, "-c", "pass")
		if r.Code != 125 || !strings.Contains(r.Stderr, "HOME") || !strings.Contains(r.Stderr, "uid "+strconv.Itoa(uid)) ||
			!strings.Contains(r.Stderr, "--pass HOME") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("--as 0:0 with B's owner's .env: exit %d %q; want 125, one line naming HOME, the owner and --pass", r.Code, r.Stderr)
		}
		noRoot(t)
	})

	t.Run("sidecar", func(t *testing.T) {
		requireCgroup2(t)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
		wantIDs(t, p.report(map[string]any{}), uid, gid)
		body := `{"profile":"b","argv":["` + py + `","-c","pass"]}`
		var rc struct{ ID string }
		p.mustDo("POST", "/v1/workers", body, 201, &rc)
		p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, nil)
		noRoot(t)
		// A spec naming root is refused by a sidecar not started with --allow-as, naming the field.
		st, b := p.do("POST", "/v1/workers", `{"profile":"b","user":"0:0","argv":["`+py+`","-c","pass"]}`)
		if st != 400 || !strings.Contains(string(b), "spec field user") || !strings.Contains(string(b), "--allow-as") {
			t.Errorf("user 0:0 without --allow-as: %d %s; want 400 naming the field user and --allow-as", st, b)
		}
		// Its own owner's ids are what it runs as anyway: accepted.
		wantIDs(t, p.report(map[string]any{"user": fmt.Sprintf("%d:%d", uid, gid)}), uid, gid)
		noRoot(t)
	})

	t.Run("sidecar warm", func(t *testing.T) {
		requireCgroup2(t)
		// A warm slot's shim is made before the spec is known; its worker drops all the same.
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--warm", "1")
		wantIDs(t, p.report(map[string]any{}), uid, gid)
		wantIDs(t, p.report(map[string]any{}), uid, gid)
	})

	t.Run("sidecar allow-as", func(t *testing.T) {
		requireCgroup2(t)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--allow-as")
		st, b := p.do("POST", "/v1/workers", `{"profile":"b","user":"0:0","argv":["`+py+`","-c","pass"]}`)
		if st != 400 || !strings.Contains(string(b), "HOME") || !strings.Contains(string(b), "uid "+strconv.Itoa(uid)) {
			t.Errorf("user 0:0 with --allow-as and B's owner's .env: %d %s; want 400 naming HOME", st, b)
		}
		noRoot(t)
	})
}

// runOut runs cmd with the extra environment and returns its stdout; a failure fails the test.
func runOut(t *testing.T, cmd *exec.Cmd, env ...string) string {
	t.Helper()
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return string(out)
}

// Class 2: a root worker (--as 0:0) is given no directory B's owner could swap under it: the derived
// TMPDIR (B's scratch), a --cwd in B's home, a --log in a directory B's owner may write. Each is refused
// before anything starts, one line naming the flag or name, the path, its owner and the worker's uid.
func TestPrivilegeRootWorkerDirs(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	uid, _, home := hermesHome(t, e)
	// A .env of credentials only, which a foreign .env may set: what is left to refuse is the directories.
	must(t, os.WriteFile(filepath.Join(home, ".env"), []byte("FIRECRAWL_API_KEY=b-fc\n"), 0o600))
	must(t, os.Chown(filepath.Join(home, ".env"), uid, uid))
	ran := filepath.Join(e.State, "ran")
	must(t, os.MkdirAll(e.State, 0o700))
	tmps := []string{"--env", "TMPDIR=/tmp", "--env", "TMP=/tmp", "--env", "TEMP=/tmp"}
	for _, tc := range []struct {
		name  string
		flags []string
		what  string // the flag or name refused
		path  string
	}{
		{"tmpdir derived", nil, "TMPDIR", filepath.Join(home, "cache", "scratch")},
		{"tmpdir from env", []string{"--env", "TMPDIR=" + filepath.Join(home, "workspace")}, "TMPDIR", filepath.Join(home, "workspace")},
		{"cwd", append([]string{"--cwd", filepath.Join(home, "workspace")}, tmps...), "--cwd", filepath.Join(home, "workspace")},
		{"log", append([]string{"--log", filepath.Join(home, "logs", "root.log")}, tmps...), "--log", filepath.Join(home, "logs")},
		{"log detached", append([]string{"--detach", "--log", filepath.Join(home, "logs", "root.log")}, tmps...), "--log", filepath.Join(home, "logs")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"exec", "-p", "b", "--scope", "none", "--as", "0:0"}, tc.flags...), "--", "sh", "-c", ": > "+ran)
			r := e.run(args...)
			msg := strings.TrimSpace(r.Stderr)
			if r.Code != 125 || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.what+" "+tc.path) ||
				!strings.Contains(msg, "uid "+strconv.Itoa(uid)) || !strings.Contains(msg, "worker runs as uid 0") {
				t.Errorf("%v: exit %d %q; want 125, one line naming %s %s, its owner uid %d and the worker's uid 0", args, r.Code, msg, tc.what, tc.path, uid)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("the worker ran")
				os.Remove(ran)
			}
		})
	}
	// The same directories for B's own worker (no --as): the normal layout passes.
	r := e.run("exec", "-p", "b", "--scope", "none", "--log", filepath.Join(home, "logs", "b.log"), "--cwd", filepath.Join(home, "workspace"), "--", "true")
	if r.Code != 0 {
		t.Errorf("B's own worker in B's directories: exit %d %s", r.Code, r.Stderr)
	}
	// A root-owned sticky /tmp passes for root.
	rep, _ := e.report(append([]string{"-p", "b", "--scope", "none", "--as", "0:0", "--cwd", "/tmp"}, tmps...))
	if rep.UID != 0 || rep.Cwd != "/tmp" {
		t.Errorf("--as 0:0 --cwd /tmp: uid %d cwd %q", rep.UID, rep.Cwd)
	}
}

// Item 3: an id over 32 bits was truncated (4294967296 is 0: root), and 4294967295 is (uid_t)-1, which
// setresuid takes as "unchanged". Every spelling but canonical decimal in 0..4294967294 is refused: the
// CLI, --spec and the sidecar, one line naming the flag or field, nothing started.
func TestPrivilegeAsRange(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	ran := filepath.Join(e.State, "ran")
	must(t, os.MkdirAll(e.State, 0o700))
	argv := []string{"sh", "-c", "id -u > " + ran}
	bad := []string{"4294967296:4294967296", "4294967295:4294967295", "0:4294967296", "+0:+0", "-0:0", "00:00", " 0:0", "0:0 ", "0x0:0", "1e3:0"}
	noRun := func(t *testing.T, what string) {
		t.Helper()
		if _, err := os.Stat(ran); err == nil {
			b, _ := os.ReadFile(ran)
			t.Errorf("%s: the worker ran as uid %s", what, strings.TrimSpace(string(b)))
			os.Remove(ran)
		}
	}
	for _, as := range bad {
		for _, sb := range []bool{false, true} {
			args := []string{"exec", "-p", "b", "--scope", "none", "--as", as}
			if sb {
				args = append(args, "--sandbox")
			}
			r := e.run(append(append(args, "--"), argv...)...)
			msg := strings.TrimSpace(r.Stderr)
			if r.Code != 125 || strings.Contains(msg, "\n") || !strings.Contains(msg, "--as") || !strings.Contains(msg, "0..4294967294") {
				t.Errorf("--as %q (sandbox %v): exit %d %q; want 125, one line naming --as and the accepted form", as, sb, r.Code, msg)
			}
			noRun(t, "--as "+as)
		}
		spec, _ := json.Marshal(map[string]any{"profile": "b", "user": as, "sandbox": true, "argv": argv})
		specFile := filepath.Join(e.State, "spec.json")
		must(t, os.WriteFile(specFile, spec, 0o600))
		r := e.run("exec", "--spec", specFile)
		if msg := strings.TrimSpace(r.Stderr); r.Code != 125 || strings.Contains(msg, "\n") || !strings.Contains(msg, "0..4294967294") {
			t.Errorf("--spec user %q: exit %d %q; want 125, one line with the accepted form", as, r.Code, msg)
		}
		noRun(t, "--spec user "+as)
	}
	t.Run("sidecar", func(t *testing.T) {
		requireCgroup2(t)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--allow-as")
		for _, as := range bad {
			body, _ := json.Marshal(map[string]any{"profile": "b", "user": as, "sandbox": true, "argv": argv})
			st, b := p.do("POST", "/v1/workers", string(body))
			if st != 400 || !strings.Contains(string(b), "spec field user") || !strings.Contains(string(b), "0..4294967294") {
				t.Errorf("sidecar user %q: %d %s; want 400 naming the field user and the accepted form", as, st, b)
			}
			noRun(t, "sidecar user "+as)
		}
	})
}

// Item 4: an unsandboxed worker of a root launcher that were root could write its PID into its parent's
// cgroup.procs in every hierarchy, leaving the cgroup that `stop` would then find empty and call verified.
// Run as its home's owner it cannot, in the v2 hierarchy and in each v1 hierarchy it was placed in.
func TestPrivilegeWorkerCannotLeaveCgroup(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	uid, gid, _ := hermesHome(t, e)
	// The parent exists only once a worker has been placed in it: place one first.
	if r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "100", "--", "true"); r.Code != 0 {
		t.Fatalf("first launch: exit %d %s", r.Code, r.Stderr)
	}
	var checks []string
	for _, root := range cgroupRootsOf(t) {
		if st, err := os.Stat(filepath.Join(root, e.Parent)); err == nil && st.IsDir() {
			checks = append(checks, "writeto:"+filepath.Join(root, e.Parent, "cgroup.procs")+"=0")
		}
	}
	if len(checks) == 0 {
		t.Fatal("the worker's parent is in no hierarchy")
	}
	for _, detach := range []bool{false, true} {
		args := []string{"-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "100"}
		var rep childReport
		if !detach {
			rep, _ = e.report(args, checks...)
		} else {
			rep = e.detachedReport(nil, args, checks...)
		}
		wantIDs(t, rep, uid, gid)
		for _, c := range checks {
			if rep.Checks[c] == "ok" {
				t.Errorf("detached %v: the worker left its cgroup: %s", detach, c)
			}
		}
	}
}

// cgroupRootsOf is every cgroup hierarchy's mount point here.
func cgroupRootsOf(t *testing.T) []string {
	t.Helper()
	roots := testutil.CgroupRoots()
	if len(roots) == 0 {
		t.Fatal("no cgroup hierarchy mounted")
	}
	return roots
}

// An unprivileged launcher cannot give an unsandboxed worker other ids than its own: --as naming another
// uid or gid is refused before anything starts (exit 125, one line naming --as); its own ids run, and a
// sandbox still takes --as (ids inside its user namespace). The refusal is not "--as needs --sandbox",
// and its own ids are not refused.
func TestPrivilegeUnprivilegedAs(t *testing.T) {
	requireRoot(t) // to become uid 65534 (setpriv)
	w := nobodyEnv(t)
	ran := filepath.Join(w.State, "ran")
	for _, as := range []string{"0:0", "65534:0", "0:65534", "1000:1000"} {
		r := w.asNobody("exec", "-p", "b", "--scope", "none", "--as", as, "--", "sh", "-c", ": > "+ran)
		if msg := strings.TrimSpace(r.Stderr); r.Code != 125 || strings.Contains(msg, "\n") || !strings.Contains(msg, "--as "+as) || !strings.Contains(msg, "unprivileged") {
			t.Errorf("unprivileged --as %s: exit %d %q; want 125, one line naming --as", as, r.Code, msg)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("unprivileged --as %s: the worker ran", as)
			os.Remove(ran)
		}
	}
	if r := w.asNobody("exec", "-p", "b", "--scope", "none", "--as", "65534:65534", "--", "sh", "-c", ": > "+ran); r.Code != 0 {
		t.Errorf("unprivileged --as of its own ids: exit %d %s", r.Code, r.Stderr)
	}
}
