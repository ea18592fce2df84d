package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hostile sandbox suite (docs/security.md, "The sandbox view", "The terminal and the
// session", "The child's identity", "The cgroup..."): a sandboxed worker attacks its view, its launcher's
// terminal and session, the host's files and its own cgroup, from inside, through the CLI and through the
// sidecar. Each attack is a check of the child reporter (child_test.go, child_hostile_test.go).

// runIn is e.run from working directory dir, with argv prefix before hlaunch (nil: none).
func (e *env) runIn(dir string, prefix []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append(append(append([]string{}, prefix...), hlaunchBin, "--root", e.Root, "--state-dir", e.State), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = e.Launcher
	return runResult(e.t, cmd)
}

// reportIn runs the child reporter through `hlaunch exec` from dir, behind prefix.
func (e *env) reportIn(dir string, prefix, execArgs []string, checks ...string) childReport {
	e.t.Helper()
	args := append(append([]string{"exec"}, execArgs...), "--", selfBin, "child", "report")
	r := e.runIn(dir, prefix, append(args, checks...)...)
	if r.Code != 0 {
		e.t.Fatalf("hlaunch %v: exit %d\nstderr: %s", args, r.Code, r.Stderr)
	}
	return decodeReport(e.t, r.Stdout)
}

// report spawns the child reporter through the sidecar with spec (profile, argv filled in), waits for it
// and decodes its log.
func (p *scProc) report(spec map[string]any, checks ...string) childReport {
	p.t.Helper()
	full := map[string]any{"profile": "b", "argv": append([]string{selfBin, "child", "report"}, checks...)}
	for k, v := range spec {
		full[k] = v
	}
	body, _ := json.Marshal(full)
	var rc struct{ ID, Log string }
	p.mustDo("POST", "/v1/workers", string(body), 201, &rc)
	p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, nil)
	out, err := os.ReadFile(rc.Log)
	must(p.t, err)
	return decodeReport(p.t, string(out))
}

// noFilter (--seccomp off, "seccomp":"off") tests what must hold without the system-call filter.
var noFilter = struct {
	flags []string
	spec  map[string]any
}{[]string{"--seccomp", "off"}, map[string]any{"seccomp": "off"}}

// launchPaths runs fn for the CLI and the sidecar launch paths; each returns the report of one sandboxed
// child of profile b with checks, started from dir with extra exec flags (CLI) or spec fields (sidecar).
func launchPaths(t *testing.T, dir string, prefix []string, flags []string, spec map[string]any,
	fn func(t *testing.T, e *env, report func(checks ...string) childReport)) {
	t.Run("cli", func(t *testing.T) {
		e := newEnv(t)
		fn(t, e, func(checks ...string) childReport {
			return e.reportIn(dir, prefix, append([]string{"-p", "b", "--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent}, flags...), checks...)
		})
	})
	t.Run("sidecar", func(t *testing.T) {
		requireCgroup2(t)
		e := newEnv(t)
		var extra []string
		if spec["seccomp"] == "off" {
			extra = append(extra, "--allow-seccomp-off")
		}
		p := startSidecarProcIn(t, e, filepath.Join(scSocketDir(t), "s.sock"), scStart{Dir: dir, Prefix: prefix}, extra...)
		fn(t, e, func(checks ...string) childReport {
			full := map[string]any{"sandbox": true}
			for k, v := range spec {
				full[k] = v
			}
			return p.report(full, checks...)
		})
	})
}

// Class 1: a launcher whose working directory is / (systemd's default for every service, the shipped
// sidecar unit) gives its sandboxed worker nothing more than one anywhere else. It must not make / a
// writable clone on top of the root, under which every later mount would go: the host, writable, at /..
func TestHostileSandboxLauncherInSlash(t *testing.T) {
	requireRoot(t)
	launchPaths(t, "/", nil, nil, nil, func(t *testing.T, e *env, report func(...string) childReport) {
		aHome := filepath.Join(e.Root, "profiles", "a")
		bHome := filepath.Join(e.Root, "profiles", "b")
		rep := report("ls:/.."+filepath.Join(e.Root, "profiles"), "open:/.."+filepath.Join(aHome, ".env"),
			"write:/.."+aHome, "write:/..", "write:/", "ls:/.."+e.State)
		c := rep.Checks
		if got := c["ls:/.."+filepath.Join(e.Root, "profiles")]; got != "ok:b" {
			t.Errorf("profiles seen through /..: %q, want only b", got)
		}
		for _, k := range []string{"open:/.." + filepath.Join(aHome, ".env"), "write:/.." + aHome, "write:/..", "write:/"} {
			if c[k] == "ok" {
				t.Errorf("%s succeeded from inside B's sandbox", k)
			}
		}
		if got := c["ls:/.."+e.State]; got != "ok:" && !strings.Contains(got, "no such file") {
			t.Errorf("state dir through /..: %q", got)
		}
		// The launcher's directory is not in the view: the worker starts in its home.
		if rep.Cwd != bHome {
			t.Errorf("cwd %q, want the home %s", rep.Cwd, bHome)
		}
	})
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		w.profile("a", "A_MARKER=a\n")
		must(t, exec.Command("chown", "-R", "65534:65534", w.Root).Run())
		aHome, bHome := filepath.Join(w.Root, "profiles", "a"), filepath.Join(w.Root, "profiles", "b")
		r := w.asNobodyIn("/", "exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report",
			"ls:/.."+filepath.Join(w.Root, "profiles"), "write:/.."+aHome, "write:/..")
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		rep := decodeReport(t, r.Stdout)
		if got := rep.Checks["ls:/.."+filepath.Join(w.Root, "profiles")]; got != "ok:b" || rep.Checks["write:/.."+aHome] == "ok" || rep.Checks["write:/.."] == "ok" || rep.Cwd != bHome {
			t.Errorf("unprivileged launcher in /: profiles %q, write A %q, write /.. %q, cwd %q", got,
				rep.Checks["write:/.."+aHome], rep.Checks["write:/.."], rep.Cwd)
		}
	})
}

// Class 1: a writable path that is / or holds the hermes root, or lies in /proc or /sys (a writable
// cgroupfs lets a worker leave its cgroup), is refused before anything starts: exit 125, naming the flag.
func TestHostileSandboxWritablePathRefused(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	marker := filepath.Join(e.Root, "profiles", "b", "ran") // the worker's home: visible on the host
	cases := [][]string{
		{"--cwd", "/"}, {"--rw", "/"}, {"--rw", filepath.Dir(e.Root)}, {"--rw", "/sys/fs/cgroup"}, {"--rw", "/proc/sys"},
	}
	for _, flags := range cases {
		args := append([]string{"exec", "-p", "b", "--sandbox", "--scope", "none"}, flags...)
		r := e.run(append(args, "--", "/bin/touch", marker)...)
		if r.Code != 125 || !strings.Contains(r.Stderr, flags[0]) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 125 and one line naming %s", flags, r.Code, r.Stderr, flags[0])
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%v: the target ran", flags)
		}
	}
	requireCgroup2(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	for _, spec := range []string{`"cwd":"/"`, `"rw":["/"]`, `"rw":["/sys/fs/cgroup"]`} {
		st, b := p.do("POST", "/v1/workers", `{"profile":"b","sandbox":true,`+spec+`,"argv":["/bin/touch","`+marker+`"]}`)
		if st != 400 || scErrCode(b) == "" {
			t.Errorf("sidecar spawn with %s: %d %s, want 400 with an error", spec, st, b)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused sidecar spawn ran")
	}
}

// Class 4: a root launcher's sandboxed worker is not host root. By default it runs as the owner of the
// profile home (a home owned by root is refused without --as); it cannot read a 0600 root file, and sees
// none of the host's terminals. --as picks another identity (--as 0:0 is the explicit way to root); an
// unprivileged launcher's worker is that user, mapped to 0 in a user namespace.
func TestHostileSandboxIdentity(t *testing.T) {
	requireRoot(t)
	secretDir, err := os.MkdirTemp(hostBase, "hl-secret-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(secretDir) })
	must(t, os.Chmod(secretDir, 0o755))
	secret := filepath.Join(secretDir, "secret")
	must(t, os.WriteFile(secret, []byte("root only"), 0o600))
	// A terminal of the host's, open while the workers look.
	ptm, pts := openPTY(t)
	defer ptm.Close()
	defer pts.Close()
	hostPTS := pts.Name()
	checks := []string{"open:" + secret, "ls:/dev/pts", "open:" + hostPTS, "open:/etc/shadow"}
	look := func(t *testing.T, rep childReport, wantUID int) {
		t.Helper()
		for _, k := range []string{"open:" + secret, "open:" + hostPTS, "open:/etc/shadow"} {
			if rep.Checks[k] == "ok" {
				t.Errorf("%s from inside the sandbox", k)
			}
		}
		if got := rep.Checks["ls:/dev/pts"]; got != "ok:ptmx" {
			t.Errorf("/dev/pts inside: %q, want a new devpts (ptmx only)", got)
		}
		if want := strings.Repeat(strconv.Itoa(wantUID)+"\t", 3) + strconv.Itoa(wantUID); rep.Status["Uid"] != want || rep.UID != wantUID {
			t.Errorf("uid %d, status Uid %q; want %d", rep.UID, rep.Status["Uid"], wantUID)
		}
		if rep.Status["CapEff"] != "0000000000000000" {
			t.Errorf("capabilities %s", rep.Status["CapEff"])
		}
	}
	launchPaths(t, "", nil, nil, nil, func(t *testing.T, e *env, report func(...string) childReport) {
		look(t, report(checks...), profileUID("b"))
	})
	t.Run("as", func(t *testing.T) {
		e := newEnv(t)
		must(t, exec.Command("chown", "-R", "65534:65534", filepath.Join(e.Root, "profiles", "b")).Run())
		look(t, e.reportIn("", nil, []string{"-p", "b", "--sandbox", "--scope", "none", "--as", "65534:65534"}, checks...), 65534)
	})
	t.Run("root-owned home", func(t *testing.T) {
		e := newEnv(t)
		// The whole home root's, its .env too: a root worker reads no .env of another uid's but credentials.
		must(t, exec.Command("chown", "-R", "0:0", filepath.Join(e.Root, "profiles", "b")).Run())
		r := e.run("exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report")
		if r.Code != 125 || !strings.Contains(r.Stderr, "--as") {
			t.Errorf("root-owned home without --as: exit %d %q; want 125 naming --as", r.Code, r.Stderr)
		}
		rep := e.reportIn("", nil, []string{"-p", "b", "--sandbox", "--scope", "none", "--as", "0:0"})
		if rep.UID != 0 {
			t.Errorf("--as 0:0: uid %d", rep.UID)
		}
	})
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		must(t, os.Chmod(hostPTS, 0o666)) // even a terminal nobody could open on the host is not there
		r := w.asNobody(append([]string{"exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report"}, checks...)...)
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		look(t, decodeReport(t, r.Stdout), 0)
	})
}

// Class 6: a worker cannot leave a set-user-ID or set-group-ID file that is of any use outside: it is
// never host uid 0, so what it makes and marks is its own (an unprivileged uid's); and every writable
// mount of its view is nosuid,nodev.
func TestHostileSandboxSetuidFiles(t *testing.T) {
	requireRoot(t)
	// Without the filter, which also refuses the set-ID modes: what holds is the identity and nosuid.
	launchPaths(t, "", nil, noFilter.flags, noFilter.spec, func(t *testing.T, e *env, report func(...string) childReport) {
		bHome := filepath.Join(e.Root, "profiles", "b")
		sh, mine := filepath.Join(bHome, "sh"), filepath.Join(bHome, "mine")
		must(t, os.WriteFile(mine, []byte("#!/bin/sh\n"), 0o755))
		must(t, os.Chown(mine, profileUID("b"), profileUID("b")))
		rep := report("copy:/bin/sh:"+sh, "chmod:6755:"+sh, "chmod:6755:"+mine, "mounts")
		if got := rep.Checks["mounts"]; got != "ok" {
			t.Errorf("view mounts: %s", got)
		}
		for _, p := range []string{sh, mine} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v (copy: %s)", p, err, rep.Checks["copy:/bin/sh:"+sh])
			}
			uid, gid := ownerOf(st)
			if st.Mode()&os.ModeSetuid != 0 && uid == 0 || st.Mode()&os.ModeSetgid != 0 && gid == 0 {
				t.Errorf("%s is %v, owned %d:%d: a set-ID file of root's, planted by a worker", p, st.Mode(), uid, gid)
			}
			if uid != profileUID("b") {
				t.Errorf("%s owned by %d, want B's owner %d", p, uid, profileUID("b"))
			}
		}
	})
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		bHome := filepath.Join(w.Root, "profiles", "b")
		sh := filepath.Join(bHome, "sh")
		r := w.asNobody("exec", "-p", "b", "--sandbox", "--scope", "none", "--seccomp", "off", "--", selfBin, "child", "report",
			"copy:/bin/sh:"+sh, "chmod:6755:"+sh, "mounts")
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		rep := decodeReport(t, r.Stdout)
		if got := rep.Checks["mounts"]; got != "ok" {
			t.Errorf("view mounts: %s", got)
		}
		st, err := os.Stat(sh)
		must(t, err)
		if uid, gid := ownerOf(st); uid != 65534 || gid != 65534 {
			t.Errorf("%s is %v, owned %d:%d: want the launcher's own 65534", sh, st.Mode(), uid, gid)
		}
	})
}

// Class 8 (sandbox side): a sandboxed worker has a cgroup namespace rooted at its own cgroup and a
// read-only cgroupfs: it cannot move itself into its parent.
func TestHostileSandboxCgroup(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	launchPaths(t, "", nil, nil, nil, func(t *testing.T, e *env, report func(...string) childReport) {
		procs := filepath.Join(v2, e.Parent, "cgroup.procs")
		rep := report("writeto:" + procs + "=0")
		if rep.Checks["writeto:"+procs+"=0"] == "ok" {
			t.Errorf("the worker wrote itself into its parent's cgroup.procs")
		}
		var v2line string
		for _, l := range rep.Cgroup {
			if strings.HasPrefix(l, "0::") {
				v2line = l
			}
		}
		if v2line != "0::/" {
			t.Errorf("cgroup as the worker sees it: %q, want 0::/ (its own cgroup namespace)", rep.Cgroup)
		}
		host, _ := os.Readlink("/proc/self/ns/cgroup")
		if rep.NS["cgroup"] == host {
			t.Error("the worker shares the host's cgroup namespace")
		}
	})
}

// ownerOf is a file's uid and gid.
func ownerOf(st os.FileInfo) (uid, gid int) {
	sys := st.Sys().(*syscall.Stat_t)
	return int(sys.Uid), int(sys.Gid)
}
