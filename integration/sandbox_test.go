package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// From inside a sandboxed child: only its own profile, its own processes, its own /tmp; the rest of the
// host read-only; nothing of the launcher's environment anywhere.
func TestSandboxView(t *testing.T) {
	requireRoot(t)
	for _, scope := range []string{"none", "cgroup"} {
		t.Run(scope, func(t *testing.T) {
			e := newEnv(t).with(t)
			aHome := filepath.Join(e.Root, "profiles", "a")
			bHome := filepath.Join(e.Root, "profiles", "b")
			must(t, os.Symlink(filepath.Join(aHome, ".env"), filepath.Join(bHome, "a-env-link")))
			rw := t.TempDir()
			cwd := t.TempDir()
			// The worker runs as B's owner: its writable paths are B's owner's too.
			must(t, os.Chown(rw, profileUID("b"), profileUID("b")))
			must(t, os.Chown(cwd, profileUID("b"), profileUID("b")))
			stranger := startStranger(t)
			checks := []string{
				"ls:" + filepath.Join(e.Root, "profiles"),
				"open:" + filepath.Join(aHome, ".env"),
				"open:" + filepath.Join(aHome, "state.db"),
				"open:" + filepath.Join(e.Root, ".env"),
				"open:" + filepath.Join(bHome, "a-env-link"),
				"open:" + filepath.Join(bHome, ".env"),
				"kill:" + strconv.Itoa(stranger.Process.Pid),
				"write:/etc", "write:/usr", "write:" + e.Root, "write:" + aHome,
				"write:" + bHome, "write:/tmp", "write:" + cwd, "write:" + rw,
				"ls:" + e.State,
			}
			flags := []string{"-p", "b", "--sandbox", "--scope", scope, "--cgroup-parent", e.Parent, "--rw", rw, "--cwd", cwd}
			rep, _ := e.report(flags, checks...)
			c := rep.Checks
			if got := c["ls:"+filepath.Join(e.Root, "profiles")]; got != "ok:b" {
				t.Errorf("profiles visible: %q, want only b", got)
			}
			for _, p := range []string{filepath.Join(aHome, ".env"), filepath.Join(aHome, "state.db"), filepath.Join(e.Root, ".env"), filepath.Join(bHome, "a-env-link")} {
				if c["open:"+p] == "ok" {
					t.Errorf("opened %s from inside B's sandbox", p)
				}
			}
			if c["open:"+filepath.Join(bHome, ".env")] != "ok" {
				t.Errorf("B's own .env unreadable: %s", c["open:"+filepath.Join(bHome, ".env")])
			}
			if got := c["kill:"+strconv.Itoa(stranger.Process.Pid)]; !strings.Contains(got, "no such process") {
				t.Errorf("kill(host pid of another process, 0) = %q, want ESRCH", got)
			}
			// PID 1 is the sandbox's init (the stub, which forwards signals); the target is its only child.
			if rep.PID == 1 || len(rep.Procs) != 2 || rep.Procs[0] != 1 || rep.Procs[1] != rep.PID || rep.PPID != 1 {
				t.Errorf("pid %d (ppid %d), visible pids %v: want the target under the sandbox's init, and nothing else", rep.PID, rep.PPID, rep.Procs)
			}
			for _, leak := range []string{"A_MARKER", "OPENAI_API_KEY", "HLAUNCH_STATE_DIR", "hermes_model", "a-fc"} {
				if strings.Contains(rep.PID1Env, leak) {
					t.Errorf("/proc/1/environ inside holds %q", leak)
				}
			}
			for _, p := range []string{"/etc", "/usr", e.Root, aHome} {
				if c["write:"+p] == "ok" {
					t.Errorf("wrote to %s", p)
				}
			}
			for _, p := range []string{bHome, "/tmp", cwd, rw} {
				if c["write:"+p] != "ok" {
					t.Errorf("cannot write to %s: %s", p, c["write:"+p])
				}
			}
			if got := c["ls:"+e.State]; got != "ok:" && !strings.Contains(got, "no such file") {
				t.Errorf("state dir visible inside: %q", got)
			}
			if rep.Status["NoNewPrivs"] != "1" || rep.Status["CapEff"] != "0000000000000000" {
				t.Errorf("hardening: %v", rep.Status)
			}
			if !strings.HasPrefix(rep.Cwd, cwd) {
				t.Errorf("cwd %q, want %q", rep.Cwd, cwd)
			}
			// The private /tmp is private: the host's /tmp entries are not there.
			if _, err := os.Stat(filepath.Join("/tmp", ".hlaunch-write-probe")); err == nil {
				t.Error("the sandbox's /tmp write reached the host's /tmp")
			}
		})
	}
}

// --as UID:GID drops root inside the sandbox with empty capability sets; --net none has no interfaces but lo.
func TestSandboxUserDropAndNet(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	must(t, exec.Command("chmod", "-R", "a+rX", e.Root).Run())
	// The home (its .env, its scratch) is the worker's own: a .env of another uid's sets only credentials.
	must(t, exec.Command("chown", "-R", "65534:65534", filepath.Join(e.Root, "profiles", "b")).Run())
	rep, _ := e.report([]string{"-p", "b", "--sandbox", "--scope", "none", "--as", "65534:65534", "--net", "none"}, "ls:/sys/class/net")
	if rep.UID != 65534 || !strings.HasPrefix(rep.Status["Uid"], "65534") {
		t.Errorf("uid %d (%s), want 65534", rep.UID, rep.Status["Uid"])
	}
	if rep.Status["CapEff"] != "0000000000000000" || rep.Status["CapPrm"] != "0000000000000000" {
		t.Errorf("capabilities: %v", rep.Status)
	}
	host, _ := os.Readlink("/proc/self/ns/net")
	if rep.NS["net"] == host {
		t.Error("--net none shares the host's network namespace")
	}
}

// The same sandbox for an unprivileged launcher, through a user namespace.
func TestSandboxAsNonRoot(t *testing.T) {
	requireRoot(t)
	w := nobodyEnv(t)
	aHome := w.profile("a", "A_MARKER=a\n")
	must(t, exec.Command("chown", "-R", "65534:65534", w.Root).Run())
	r := w.asNobody("exec", "-p", "b", "--sandbox", "--scope", "none", "--", "/bin/sh", "-c",
		"ls "+filepath.Join(w.Root, "profiles")+"; cat "+filepath.Join(aHome, ".env")+" 2>/dev/null && echo LEAK; echo procs: /proc/[0-9]*; echo pid=$$")
	if r.Code != 0 {
		t.Fatalf("non-root sandbox: exit %d: %s", r.Code, r.Stderr)
	}
	var pid string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "pid="); ok {
			pid = v
		}
	}
	if strings.Contains(r.Stdout, "LEAK") || !strings.Contains(r.Stdout, "procs: /proc/1 /proc/"+pid+"\n") || strings.Contains(r.Stdout, "a\n") {
		t.Fatalf("non-root sandbox view:\n%s", r.Stdout)
	}
}

// A sandboxed worker hears a plain SIGTERM: the sandbox's init forwards it (a target that were PID 1
// itself would ignore it, and every stop would wait out its grace).
func TestSandboxForwardsSignals(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	rc := e.detach([]string{"--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent}, "sleep", "300")
	if r := e.run("signal", "-s", "TERM", rc.ID); r.Code != 0 {
		t.Fatalf("signal: %d %s", r.Code, r.Stderr)
	}
	r := e.run("wait", "--json", "--timeout", "60s", rc.ID)
	var rec receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rec))
	if rec.ExitCode != nil || rec.Signal != "SIGTERM" {
		t.Fatalf("sandboxed sleep after SIGTERM: exit %v signal %q (%s)", rec.ExitCode, rec.Signal, r.Stdout)
	}
	// stop ends it with its SIGTERM, not with the kill after the grace.
	rc = e.detach([]string{"--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent}, "sleep", "300")
	r = e.run("stop", "--json", "--grace", "20s", rc.ID)
	if r.Code != 0 {
		t.Fatalf("stop: %d %s", r.Code, r.Stderr)
	}
	rec = receipt{}
	must(t, json.Unmarshal([]byte(r.Stdout), &rec))
	if rec.Signal != "SIGTERM" || rec.ExitCode != nil {
		t.Fatalf("stopped sandboxed sleep: exit %v signal %q: SIGTERM was not heard", rec.ExitCode, rec.Signal)
	}
}

// A whole-worker signal reaches a sandboxed target once: the sweep signals it directly and leaves out the
// init (the leader), which would forward a second copy. The target counts its SIGUSR1s and, at stop's
// single SIGTERM, exits with 10 + the count. After each SIGUSR1 the test sends the leader a SIGUSR2, which
// the init forwards: a second copy the init forwarded would reach the target before that marker, so once
// the target has counted the marker, its count of SIGUSR1s is final.
func TestSandboxWholeWorkerSignalArrivesOnce(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	rc := e.detach([]string{"--sandbox", "--scope", "cgroup", "--cgroup-parent", e.Parent}, selfBin, "child", "countsig")
	if !rc.Sandbox {
		t.Fatalf("receipt of a sandboxed worker does not say sandbox: %+v", rc)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(e.Root, "profiles", "b", name))
		return string(b)
	}
	// Count 0: the target has subscribed (a USR1 before that is dropped by the Go runtime).
	awaitFile := func(name, want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); read(name) != want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s is %q, want %s", name, read(name), want)
			}
		}
	}
	awaitFile("sigcount", "0")
	for i := 1; i <= 3; i++ {
		if r := e.run("signal", "--all", "-s", "USR1", rc.ID); r.Code != 0 {
			t.Fatalf("signal --all: %d %s", r.Code, r.Stderr)
		}
		if r := e.run("signal", "-s", "USR2", rc.ID); r.Code != 0 {
			t.Fatalf("signal the leader: %d %s", r.Code, r.Stderr)
		}
		awaitFile("sigmark", strconv.Itoa(i))
		if c := read("sigcount"); c != strconv.Itoa(i) {
			t.Fatalf("after signal %d and its marker the target counted %s SIGUSR1s, want %d", i, c, i)
		}
	}
	r := e.run("stop", "--json", "--grace", "20s", rc.ID)
	if r.Code != 0 {
		t.Fatalf("stop: %d %s", r.Code, r.Stderr)
	}
	var rec receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rec))
	if rec.ExitCode == nil || *rec.ExitCode != 13 {
		t.Fatalf("target counted %s SIGUSR1s for 3 signals (signal %q, %s); want 3 (exit 13)",
			countOf(rec.ExitCode), rec.Signal, r.Stdout)
	}
}

// countOf turns countsig's exit code back into its count, for messages.
func countOf(code *int) string {
	if code == nil {
		return "nothing"
	}
	return strconv.Itoa(*code - 10)
}
