package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	ePERM  = "operation not permitted"
	eNOSYS = "function not implemented"
)

// absentProbes fail with ENOSYS under the filter (libc falls back to clone and openat).
var absentProbes = map[string]bool{"clone3": true, "openat2": true}

// syscallChecks are the `syscall:NAME` checks of every probe and everyday call, sorted.
func syscallChecks() []string {
	var out []string
	for _, m := range []map[string]probe{probes, probesArch} {
		for name := range m {
			out = append(out, "syscall:"+name)
		}
	}
	for name := range everyday {
		out = append(out, "syscall:"+name)
	}
	slices.Sort(out)
	return out
}

func isProbe(name string) (probe, bool) {
	if p, ok := probes[name]; ok {
		return p, true
	}
	p, ok := probesArch[name]
	return p, ok
}

// checkFiltered asserts a report of a worker under the default filter: every denied call EPERM (clone3
// and openat2 ENOSYS), every everyday call fine.
func checkFiltered(t *testing.T, rep childReport) {
	t.Helper()
	if rep.Status["Seccomp"] != "2" || rep.Status["Seccomp_filters"] != "1" {
		t.Errorf("Seccomp %q, Seccomp_filters %q: want one filter (mode 2)", rep.Status["Seccomp"], rep.Status["Seccomp_filters"])
	}
	for _, c := range syscallChecks() {
		name := strings.TrimPrefix(c, "syscall:")
		got := rep.Checks[c]
		_, denied := isProbe(name)
		want := "ok"
		switch {
		case absentProbes[name]:
			want = eNOSYS
		case denied:
			want = ePERM
		}
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// From inside a sandboxed child, every call the filter denies fails with EPERM (clone3 and openat2 with
// ENOSYS), and what a worker needs still works - as root, dropped to another uid with --as, and started by
// an unprivileged launcher through a user namespace. Without the filter (--seccomp off) the
// probes that are not "plain" answer something else: the kernel's own error for their bad arguments, or
// success.
func TestSeccompDeniesFromInside(t *testing.T) {
	requireRoot(t)
	checks := syscallChecks()
	t.Run("root", func(t *testing.T) {
		e := newEnv(t)
		rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none"}, checks...)
		checkFiltered(t, rep)
	})
	t.Run("as", func(t *testing.T) {
		e := newEnv(t)
		must(t, exec.Command("chmod", "-R", "a+rX", e.Root).Run())
		// The home (its .env, its scratch) is the worker's own: a .env of another uid's sets only credentials.
		must(t, exec.Command("chown", "-R", "65534:65534", filepath.Join(e.Root, "profiles", "b")).Run())
		rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none", "--as", "65534:65534", "--net", "none"}, checks...)
		if rep.UID != 65534 {
			t.Fatalf("uid %d, want 65534", rep.UID)
		}
		checkFiltered(t, rep)
	})
	t.Run("unprivileged", func(t *testing.T) {
		w := nobodyEnv(t)
		args := append([]string{"exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report"}, checks...)
		r := w.asNobody(args...)
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		checkFiltered(t, decodeReport(t, r.Stdout))
	})
}

// --seccomp off really turns the filter off: no filter on the worker, and the probes get the kernel's own
// answers. The same probes under the filter are EPERM (TestSeccompDeniesFromInside), so each one that
// differs here is refused by the filter and by nothing else.
func TestSeccompOff(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none", "--seccomp", "off"}, syscallChecks()...)
	if rep.Status["Seccomp"] != "0" {
		t.Errorf("--seccomp off: Seccomp %q, want 0 (no filter)", rep.Status["Seccomp"])
	}
	for _, c := range syscallChecks() {
		name := strings.TrimPrefix(c, "syscall:")
		p, ok := isProbe(name)
		got := rep.Checks[c]
		switch {
		case !ok:
			if got != "ok" {
				t.Errorf("%s: %q without the filter", name, got)
			}
		case absentProbes[name]:
			if got == eNOSYS {
				t.Errorf("%s: ENOSYS without the filter", name)
			}
		case !p.plain && got == ePERM:
			t.Errorf("%s: EPERM without the filter: the probe cannot tell the filter's refusal from the kernel's", name)
		}
	}
	// The set-ID modes really are set without the filter: what the filter stops is real.
	for _, name := range []string{"fchmodat+S_ISUID", "openat+O_CREAT+S_ISUID", "unshare", "personality"} {
		if rep.Checks["syscall:"+name] != "ok" {
			t.Errorf("%s without the filter: %q, want ok", name, rep.Checks["syscall:"+name])
		}
	}
}

// A worker that is not the test binary: sh and Python (threads, which glibc starts with clone3 and, on
// ENOSYS, clone; subprocess; a socket; os.fork) run under the filter as they do without it.
func TestSeccompEverydayWorker(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	py := `import os, socket, subprocess, threading
out = []
t = threading.Thread(target=lambda: out.append("thread")); t.start(); t.join()
out.append(subprocess.run(["sh", "-c", "echo sub | cat"], capture_output=True, text=True).stdout.strip())
s = socket.socket(); s.close(); out.append("socket")
pid = os.fork()
if pid == 0:
    os._exit(7)
out.append("fork%d" % os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(" ".join(out))`
	for _, mode := range []string{"default", "off"} {
		r := e.run("exec", "-p", "b", "--sandbox", "--scope", "none", "--seccomp", mode, "--", "python3", "-c", py)
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "thread sub socket fork7" {
			t.Errorf("--seccomp %s: python3: exit %d, %q, stderr %s", mode, r.Code, r.Stdout, r.Stderr)
		}
		r = e.run("exec", "-p", "b", "--sandbox", "--scope", "none", "--seccomp", mode, "--", "sh", "-c",
			"echo a | tr a b; ls / >/dev/null && echo ls; grep Seccomp: /proc/self/status")
		want := map[string]string{"default": "b\nls\nSeccomp:\t2\n", "off": "b\nls\nSeccomp:\t0\n"}[mode]
		if r.Code != 0 || r.Stdout != want {
			t.Errorf("--seccomp %s: sh: exit %d, %q, want %q; stderr %s", mode, r.Code, r.Stdout, want, r.Stderr)
		}
	}
}

// Through a real sidecar: a sandboxed spawn runs under the filter and its receipt says so; a spec that
// turns the filter off is refused (400 invalid, nothing started) unless the sidecar was started with
// --allow-seccomp-off, and then the worker really runs without it and its receipt says "off".
func TestSeccompThroughSidecar(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	checks := syscallChecks()
	spawn := func(p *scProc, extra map[string]any) (receipt, childReport) {
		t.Helper()
		spec := map[string]any{"profile": "b", "sandbox": true, "argv": append([]string{selfBin, "child", "report"}, checks...)}
		for k, v := range extra {
			spec[k] = v
		}
		body, _ := json.Marshal(spec)
		var rc receipt
		p.mustDo("POST", "/v1/workers", string(body), 201, &rc)
		p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, nil)
		out, err := os.ReadFile(rc.Log)
		must(t, err)
		return rc, decodeReport(t, string(out))
	}
	t.Run("default", func(t *testing.T) {
		e := newEnv(t)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
		rc, rep := spawn(p, nil)
		if rc.Seccomp != "default" {
			t.Errorf("receipt seccomp %q, want default", rc.Seccomp)
		}
		checkFiltered(t, rep)
		before := len(p.list())
		st, b := p.do("POST", "/v1/workers", `{"profile":"b","sandbox":true,"seccomp":"off","argv":["/bin/true"]}`)
		if st != 400 || scErrCode(b) != "invalid" || !strings.Contains(string(b), "--allow-seccomp-off") {
			t.Errorf(`"seccomp":"off" without --allow-seccomp-off: %d %s, want 400 invalid naming the flag`, st, b)
		}
		if n := len(p.list()); n != before {
			t.Errorf("the refused spawn left %d workers, want %d", n, before)
		}
	})
	t.Run("allowed off", func(t *testing.T) {
		e := newEnv(t)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--allow-seccomp-off")
		rc, rep := spawn(p, map[string]any{"seccomp": "off"})
		if rc.Seccomp != "off" || rep.Status["Seccomp"] != "0" {
			t.Errorf("receipt seccomp %q, worker's Seccomp %q: want off and 0", rc.Seccomp, rep.Status["Seccomp"])
		}
		if got := rep.Checks["syscall:unshare"]; got != "ok" {
			t.Errorf("unshare(0) without the filter: %q", got)
		}
	})
}
