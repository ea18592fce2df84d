package integration

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// The hermes invariant, from inside a real child: B's worker gets B's world and nothing of A's or the
// launcher's, whatever the launcher's environment holds.
func TestExecEnvIsBuiltOnlyFromTargetProfile(t *testing.T) {
	for _, scope := range []string{"none", "cgroup"} {
		t.Run(scope, func(t *testing.T) {
			if scope == "cgroup" {
				requireRoot(t)
			}
			e := newEnv(t)
			rep, _ := e.report([]string{"-p", "b", "--scope", scope, "--cgroup-parent", e.Parent})
			bHome := filepath.Join(e.Root, "profiles", "b")
			want := map[string]string{
				"B_MARKER": "b", "FIRECRAWL_API_KEY": "b-fc",
				"HERMES_HOME": bHome, "HERMES_PROFILE": "b", "HERMES_REAL_HOME": "/root",
				"TMPDIR": bHome + "/cache/scratch", "TMP": bHome + "/cache/scratch", "TEMP": bHome + "/cache/scratch",
				"PATH": os.Getenv("PATH"), "HOME": "/root", "LANG": "C.UTF-8", "TERM": "xterm",
			}
			if os.Geteuid() == 0 {
				// A root launcher's worker runs as the home's owner (a uid without a passwd entry here): its
				// HOME is the profile's home/, and nothing names root's account.
				want["HOME"] = filepath.Join(bHome, "home")
				delete(want, "HERMES_REAL_HOME")
			}
			if !mapsEqual(rep.Env, want) {
				t.Fatalf("child environ:\n got %v\nwant %v", sortedKV(rep.Env), sortedKV(want))
			}
		})
	}
}

// Every flag's contribution arrives, and nothing else.
func TestExecEnvFlags(t *testing.T) {
	e := newEnv(t)
	e.Launcher = append(e.Launcher, "TZ=UTC", "MY_SETTING=from-launcher")
	rep, _ := e.report([]string{"-p", "b", "--scope", "none", "--secrets", "none", "--pass", "FIRECRAWL_API_KEY",
		"--env", "LITERAL=x=y", "--inherit", "MY_SETTING"})
	for k, v := range map[string]string{"LITERAL": "x=y", "MY_SETTING": "from-launcher", "FIRECRAWL_API_KEY": "b-fc", "TZ": "UTC"} {
		if rep.Env[k] != v {
			t.Errorf("%s = %q, want %q", k, rep.Env[k], v)
		}
	}
	if _, ok := rep.Env["GH_TOKEN"]; ok {
		t.Error("Tier-1 GH_TOKEN from B's .env reached the child")
	}
	// --secrets none without --pass: no credential of B either.
	rep, _ = e.report([]string{"-p", "b", "--scope", "none", "--secrets", "none"})
	if _, ok := rep.Env["FIRECRAWL_API_KEY"]; ok {
		t.Error("--secrets none passed FIRECRAWL_API_KEY")
	}
}

// `hlaunch env` shows the same environ the child gets, with provenance, and masks credentials.
func TestEnvCommandMatchesChild(t *testing.T) {
	e := newEnv(t)
	r := e.run("env", "-p", "b", "--explain")
	if r.Code != 0 {
		t.Fatalf("env: %d %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "FIRECRAWL_API_KEY=***") || strings.Contains(r.Stdout, "b-fc") {
		t.Errorf("credential not masked:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "profile:") || !strings.Contains(r.Stdout, "derived") || !strings.Contains(r.Stdout, "launcher") {
		t.Errorf("--explain lacks sources:\n%s", r.Stdout)
	}
	r = e.run("env", "-p", "b", "--show-secrets")
	if !strings.Contains(r.Stdout, "FIRECRAWL_API_KEY=b-fc") {
		t.Errorf("--show-secrets:\n%s", r.Stdout)
	}
}

// Bad input: one line naming the flag or file, exit 125, and nothing started.
func TestExecBadInputStartsNothing(t *testing.T) {
	e := newEnv(t)
	must(t, os.MkdirAll(filepath.Join(e.Root, "profiles", ".deleted"), 0o700))
	e.profile("gone", "X=1\n")
	must(t, os.WriteFile(filepath.Join(e.Root, "profiles", ".deleted", "gone"), nil, 0o600))
	evil := e.profile("evil", "")
	must(t, os.Remove(filepath.Join(evil, ".env")))
	must(t, os.Symlink(filepath.Join(e.Root, "profiles", "a", ".env"), filepath.Join(evil, ".env")))
	badPolicy := filepath.Join(t.TempDir(), "policy.json")
	must(t, os.WriteFile(badPolicy, []byte(`{"tier1":["X"],"no_such_key":[]}`), 0o600))
	marker := filepath.Join(t.TempDir(), "started")
	cases := []struct {
		name string
		args []string
		want string // a word the one-line message must hold
	}{
		{"invalid name", []string{"-p", "B!"}, "B!"},
		{"reserved", []string{"-p", "root"}, "root"},
		{"traversal", []string{"-p", "../x"}, "../x"},
		{"missing", []string{"-p", "nobody"}, "nobody"},
		{"tombstoned", []string{"-p", "gone"}, "gone"},
		{"env symlink escape", []string{"-p", "evil"}, ".env"},
		{"malformed --env", []string{"-p", "b", "--env", "NOEQUALS"}, "--env"},
		{"inherit credential", []string{"-p", "b", "--inherit", "OPENAI_API_KEY"}, "OPENAI_API_KEY"},
		{"inherit launch setting", []string{"-p", "b", "--inherit", "TERMINAL_ENV"}, "TERMINAL_ENV"},
		{"unknown policy key", []string{"--policy", badPolicy, "-p", "b"}, "no_such_key"},
		{"bad scope", []string{"-p", "b", "--scope", "bogus"}, "--scope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"exec"}, c.args...)
			args = append(args, "--scope", "none", "--", "touch", marker)
			if slices.Contains(c.args, "--scope") {
				args = append(append([]string{"exec"}, c.args...), "--", "touch", marker)
			}
			r := e.with(t).run(args...)
			if r.Code != 125 {
				t.Fatalf("exit %d, want 125; stderr %q", r.Code, r.Stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("want one line naming %q, got %q", c.want, r.Stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
}

// Exit codes: the child's own, 128+N for a signal, 126 cannot run, 127 not found.
func TestExecExitCodes(t *testing.T) {
	e := newEnv(t)
	notExec := filepath.Join(t.TempDir(), "script")
	must(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600))
	cases := []struct {
		argv []string
		want int
	}{
		{[]string{selfBin, "child", "exit", "0"}, 0},
		{[]string{selfBin, "child", "exit", "7"}, 7},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"no-such-command-hlaunch"}, 127},
		{[]string{notExec}, 126},
	}
	// "cgroup" takes the clone3 fast path; with a limit on a hybrid host it holds the target at its exec
	// until the v1 joins are done (proc.Hold).
	placements := map[string][]string{"none": {"--scope", "none"}, "cgroup": {"--scope", "cgroup"},
		"cgroup with a v1 limit": {"--scope", "cgroup", "--pids", "100"}}
	for name, flags := range placements {
		for _, c := range cases {
			if name != "none" && os.Geteuid() != 0 {
				continue
			}
			args := append(append([]string{"exec", "-p", "b", "--cgroup-parent", e.Parent}, flags...), "--")
			if r := e.run(append(args, c.argv...)...); r.Code != c.want {
				t.Errorf("%s %v: exit %d, want %d (stderr %q)", name, c.argv, r.Code, c.want, r.Stderr)
			}
		}
	}
}

// As an argv prefix, stdio passes through untouched (a JSON handshake over the child's stdin/stdout).
func TestExecStdioPassThrough(t *testing.T) {
	e := newEnv(t)
	in := []byte(`{"jsonrpc":"2.0","id":1,"method":"hello"}` + "\n")
	r := e.runCtx(context.Background(), in, "exec", "-p", "b", "--scope", "none", "--", selfBin, "child", "echo")
	if r.Code != 0 || r.Stdout != string(in) {
		t.Fatalf("exit %d, stdout %q, want %q", r.Code, r.Stdout, in)
	}
}

// Signals sent to hlaunch reach the child, which decides its own exit.
func TestExecForwardsSignals(t *testing.T) {
	e := newEnv(t)
	// The second placement holds the target at its traced exec until its v1 join (root only): after the
	// detach it must be an ordinary process that handles its own signals.
	placements := map[string][]string{"none": {"--scope", "none"}}
	if os.Geteuid() == 0 {
		placements["held at its exec"] = []string{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--pids", "100"}
	}
	for name, flags := range placements {
		t.Run(name, func(t *testing.T) {
			args := append(append([]string{"--root", e.Root, "--state-dir", e.State, "exec", "-p", "b"}, flags...),
				"--", selfBin, "child", "trap")
			cmd := exec.Command(hlaunchBin, args...)
			cmd.Env = e.Launcher
			out, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			buf := make([]byte, 6)
			if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("child not ready: %q %v", buf, err)
			}
			must(t, cmd.Process.Signal(syscall.SIGTERM))
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("hlaunch did not end after SIGTERM")
			}
			if code := cmd.ProcessState.ExitCode(); code != 42 {
				t.Fatalf("exit %d, want the child's 42 (its SIGTERM handler ran)", code)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sortedKV(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// A foreground child dies with hlaunch (parent-death signal), and gc removes the cgroup hlaunch could not.
func TestExecChildDiesWithLauncher(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	cmd := exec.Command(hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--scope", "cgroup",
		"--cgroup-parent", e.Parent, "--", selfBin, "child", "trap")
	cmd.Env = e.Launcher
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(v2, e.Parent))
	var worker string
	for _, d := range ents {
		if d.IsDir() && strings.HasPrefix(d.Name(), "w-") {
			worker = filepath.Join(v2, e.Parent, d.Name())
		}
	}
	if worker == "" {
		t.Fatal("no worker cgroup")
	}
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(worker, "cgroup.procs"))
		if strings.TrimSpace(string(b)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child outlived its SIGKILLed launcher: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := e.run("gc", "--orphan-age", "0", "--cgroup-parent", e.Parent); r.Code != 0 {
		t.Fatalf("gc: %d %s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(worker); err == nil {
		t.Fatalf("gc left the orphaned empty cgroup %s", worker)
	}
}

// argv, the environ and the working directory are bytes to the kernel: every start path hands them to the
// target exactly, including bytes that are not UTF-8 (the init stub's and the shim's config once went
// through JSON, which turned them into U+FFFD).
func TestExecPassesBytesExactly(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	const arg, val = "a\xffb\xc3(", "v\xfe"
	want := "x" + hex.EncodeToString([]byte(val)) + " x" + hex.EncodeToString([]byte(arg)) + " x"
	cg := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent}
	for _, flags := range [][]string{{"--scope", "none"}, cg, append([]string{"--sandbox"}, cg...), {"--sandbox", "--scope", "none"}} {
		args := append(append([]string{"exec", "-p", "b", "--env", "HL_BYTES=" + val}, flags...), "--", selfBin, "child", "hexargs", arg, "")
		r := e.run(args...)
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != want {
			t.Errorf("%v: exit %d, child saw %q, want %q (%s)", flags, r.Code, strings.TrimSpace(r.Stdout), want, r.Stderr)
		}
	}
	// A systemd scope: the held child is the init stub too.
	m := systemdtest.Start(t)
	r := e.sd(m, "exec", "-p", "b", "--scope", "systemd", "--user", "--env", "HL_BYTES="+val, "--", selfBin, "child", "hexargs", arg, "")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != want {
		t.Errorf("--scope systemd: exit %d, child saw %q, want %q (%s)", r.Code, strings.TrimSpace(r.Stdout), want, r.Stderr)
	}
	// Detached, through the shim (and, sandboxed, its init stub); the worker reports into its log.
	for _, sb := range [][]string{nil, {"--sandbox"}} {
		log := filepath.Join(t.TempDir(), "w.log")
		args := append(append(append([]string{"exec", "-p", "b", "--detach", "--log", log, "--env", "HL_BYTES=" + val}, sb...), cg...),
			"--", selfBin, "child", "hexargs", arg, "")
		r := e.run(args...)
		if r.Code != 0 {
			t.Fatalf("detach %v: %d %s", sb, r.Code, r.Stderr)
		}
		var rc receipt
		must(t, json.Unmarshal([]byte(r.Stdout), &rc))
		e.run("wait", "--timeout", "60s", rc.ID)
		b, err := os.ReadFile(log)
		must(t, err)
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("detached %v: worker saw %q, want %q", sb, got, want)
		}
	}
}
