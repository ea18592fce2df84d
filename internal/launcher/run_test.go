package launcher_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// A foreground worker of B in its own cgroup: what it sees (B's environ only, HERMES_HOME, its cgroup
// under the test's parent from its first instruction), its exit code, and nothing left after it.
func TestRunCgroupWorker(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	code, out, err := w.run(spec(`cat /proc/self/cgroup; echo ---; env; exit 7`), launcher.Signals{})
	if err != nil || code != 7 {
		t.Fatalf("run: code %d, %v\n%s", code, err, out)
	}
	cg, envText, _ := strings.Cut(out, "---\n")
	if !strings.Contains(cg, "/"+w.parent+"/w-") {
		t.Errorf("the worker's cgroups are not under the test's parent %s:\n%s", w.parent, cg)
	}
	env := envOf(envText)
	want := map[string]string{"B_MARKER": "b", "FIRECRAWL_API_KEY": "b-fc", "HERMES_HOME": filepath.Join(w.root, "profiles", "b")}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q in the worker, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"A_MARKER", "OPENAI_API_KEY", "GH_TOKEN"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%q reached B's worker", k, v)
		}
	}
	if left := w.workerCgroups(); len(left) != 0 {
		t.Errorf("worker cgroups left after the run: %v", left)
	}
	if _, err := os.Stat(filepath.Join(w.state, "workers")); err == nil {
		if ents, _ := os.ReadDir(filepath.Join(w.state, "workers")); len(ents) != 0 {
			t.Errorf("a foreground run left records: %v", ents)
		}
	}
}

// Exit codes as a shell gives them: 128+N for a signal, 127 and 126 for a command that is missing or
// cannot run, 125 for a launch refused before anything started.
func TestRunExitCodes(t *testing.T) {
	w := newWorld(t, worker.ScopeNone, nil)
	noexec := filepath.Join(t.TempDir(), "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		spec worker.Spec
		code int
		err  error  // nil: the worker ran
		says string // in the error
	}{
		{"exit 0", spec("exit 0"), 0, nil, ""},
		{"exit 3", spec("exit 3"), 3, nil, ""},
		{"killed by TERM", spec("kill -TERM $$"), 128 + 15, nil, ""},
		{"killed by KILL", spec("kill -KILL $$"), 128 + 9, nil, ""},
		{"not found", worker.Spec{Profile: "b", Argv: []string{"hlaunch-no-such-command"}}, 127, worker.ErrCommandNotFound, "hlaunch-no-such-command"},
		{"not executable", worker.Spec{Profile: "b", Argv: []string{noexec}}, 126, worker.ErrCannotRun, noexec},
		{"no such profile", worker.Spec{Profile: "zz", Argv: []string{"true"}}, 125, worker.ErrInvalid, "zz"},
		{"bad scope", worker.Spec{Profile: "b", Argv: []string{"true"}, Scope: "vm"}, 125, worker.ErrInvalid, "--scope"},
		{"bad cwd", worker.Spec{Profile: "b", Argv: []string{"true"}, Cwd: "/nonexistent-dir"}, 125, worker.ErrInvalid, "--cwd"},
		{"detach in Run", worker.Spec{Profile: "b", Argv: []string{"true"}, Detach: true}, worker.ExitInternal, worker.ErrInvalid, "Start"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, err := w.run(c.spec, launcher.Signals{})
			if code != c.code {
				t.Errorf("code %d, want %d (%v)\n%s", code, c.code, err, out)
			}
			if c.err == nil && err != nil {
				t.Errorf("error %v for a worker that ran", err)
			}
			if c.err != nil && (!errors.Is(err, c.err) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n")) {
				t.Errorf("error %q: want one line wrapping %v naming %q", err, c.err, c.says)
			}
		})
	}
	if _, err := os.Stat(w.state); err == nil {
		if ents, _ := os.ReadDir(filepath.Join(w.state, "workers")); len(ents) != 0 {
			t.Errorf("foreground runs left records: %v", ents)
		}
	}
}

// A refused launch creates nothing: no state directory entry, no cgroup parent.
func TestRunRefusedCreatesNothing(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	for _, s := range []worker.Spec{
		{Profile: "zz", Argv: []string{"true"}},
		{Profile: "b", Argv: []string{"true"}, Limits: cgroup.Limits{Pids: -2}}, // -1 is "no limit"
		{Profile: "b", Argv: []string{"true"}, Timeout: "soon"},
	} {
		if code, _, err := w.run(s, launcher.Signals{}); code != 125 || !errors.Is(err, worker.ErrInvalid) {
			t.Errorf("%+v: code %d, %v; want 125", s, code, err)
		}
	}
	if _, err := os.Stat(filepath.Join(w.v2(), w.parent)); !os.IsNotExist(err) {
		t.Errorf("a refused launch created the cgroup parent: %v", err)
	}
}

// Signals received by hlaunch reach the worker, which can handle them.
func TestRunForwardsSignals(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ready := filepath.Join(t.TempDir(), "ready")
	c := make(chan os.Signal, 1)
	go func() {
		waitFile(t, ready)
		c <- syscall.SIGUSR1
	}()
	s := spec(`trap 'echo got-usr1; exit 9' USR1; echo up > ` + ready + `; while :; do sleep 0.05; done`)
	s.Timeout = "60s" // a signal that never arrives ends the worker (124), not the test run
	code, out, err := w.run(s, launcher.Signals{C: c})
	if err != nil || code != 9 || !strings.Contains(out, "got-usr1") {
		t.Fatalf("code %d, %v, output %q: want the worker's own 9 after USR1", code, err, out)
	}
}

// --timeout: SIGTERM at the deadline, the whole cgroup killed after the grace (a worker that ignores
// SIGTERM too), exit 124 and ErrTimedOut, the cgroup gone.
func TestRunTimeout(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	for name, script := range map[string]string{
		"ends on TERM": `sleep 1000 & wait`,
		"ignores TERM": `trap '' TERM; sleep 1000 & while :; do wait; done`,
	} {
		t.Run(name, func(t *testing.T) {
			s := spec(script)
			s.Timeout, s.Grace = "300ms", "200ms"
			code, _, err := w.run(s, launcher.Signals{})
			if code != worker.ExitTimeout || !errors.Is(err, worker.ErrTimedOut) || !strings.Contains(err.Error(), "--timeout 300ms") {
				t.Fatalf("code %d, %v; want 124 and ErrTimedOut naming --timeout", code, err)
			}
			if left := w.workerCgroups(); len(left) != 0 {
				t.Errorf("cgroups left after the timeout: %v", left)
			}
		})
	}
}

// --log: stdout and stderr appended to the file; at LogMax the old content moves to <log>.1.
func TestRunLogRotates(t *testing.T) {
	w := newWorld(t, worker.ScopeNone, nil)
	log := filepath.Join(t.TempDir(), "w.log")
	if err := os.WriteFile(log, []byte(strings.Repeat("old\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := spec(`echo to-out; echo to-err >&2`)
	s.Log, s.LogMax = log, 64
	if code, out, err := w.run(s, launcher.Signals{}); code != 0 || err != nil || out != "" {
		t.Fatalf("code %d, %v, stdout %q: the output must go to the log only", code, err, out)
	}
	got, _ := os.ReadFile(log)
	if string(got) != "to-out\nto-err\n" {
		t.Errorf("log %q, want the new run's output only", got)
	}
	old, _ := os.ReadFile(log + ".1")
	if !strings.HasPrefix(string(old), "old\n") || len(old) != 400 {
		t.Errorf("rotated log holds %d bytes, want the 400 old ones", len(old))
	}
	// Below the limit a run appends.
	s.LogMax = 1 << 20
	if code, _, err := w.run(s, launcher.Signals{}); code != 0 || err != nil {
		t.Fatal(code, err)
	}
	if got, _ := os.ReadFile(log); string(got) != "to-out\nto-err\nto-out\nto-err\n" {
		t.Errorf("log %q, want both runs appended", got)
	}
	// A log that is not a regular file is refused by name, and nothing runs.
	s.Log = t.TempDir()
	if code, _, err := w.run(s, launcher.Signals{}); code != 125 || err == nil || !strings.Contains(err.Error(), s.Log) {
		t.Errorf("a directory as --log: code %d, %v", code, err)
	}
}
