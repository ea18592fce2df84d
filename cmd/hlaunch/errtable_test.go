package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// goInternals are fragments of Go's own error texts that must never reach a user: parser names, syscall
// names, formatting verbs gone wrong, struct dumps.
var goInternals = regexp.MustCompile(`strconv\.|(?:^|[\s(])(?:time|json|cgroup|fingerprint|nsenv|profile|sandbox|launcher): |openat2|syscall|errno|%!|&\{|\{[A-Z][a-zA-Z]+:|invalid launch|\(\*`)

// Every flag's bad inputs: exit 125, one line that names the flag, says what was wrong and what is
// accepted, no Go internals, and nothing created - no state directory, no log file or its directory, no
// cgroup parent.
func TestEveryFlagsBadInputs(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "hermes")
	if err := os.MkdirAll(filepath.Join(root, "profiles", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	logDir := filepath.Join(dir, "logs")
	parent := testutil.RandName("hlaunch-test-")
	base := []string{"--root", root, "--state-dir", state}
	exec := func(flags ...string) []string {
		a := append(append([]string{}, base...), "exec", "-p", "b", "--log", filepath.Join(logDir, "x.log"),
			"--cgroup-parent", parent)
		return append(append(a, flags...), "--", "/bin/true")
	}
	cmd := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	tests := []struct {
		args []string
		want []string // each in the one line: the flag, what is accepted
	}{
		{exec("--memory", "512X"), []string{"--memory", `"512X"`, "want a size", "512M"}},
		{exec("--memory", "-5M"), []string{"--memory", "want a size"}},
		{exec("--memory-high", "lots"), []string{"--memory-high", "want a size"}},
		{exec("--pids", "many"), []string{"--pids", `"many"`, "want a whole number"}},
		{exec("--pids", "-1"), []string{"--pids -1", "must not be negative"}},
		{exec("--cpus", "0.001"), []string{"--cpus 0.001", "below the minimum 0.01"}},
		{exec("--cpus", "-1"), []string{"--cpus -1", "must not be negative"}},
		{exec("--cpus", "half"), []string{"--cpus", `"half"`, "want a number"}},
		{exec("--cpu-weight", "20000"), []string{"--cpu-weight 20000", "want 1..10000"}},
		{exec("--cpu-weight", "-3"), []string{"--cpu-weight", "want a whole number, 0 or more"}},
		{exec("--timeout", "10"), []string{"--timeout", `"10"`, "not a duration", "30s"}},
		{exec("--timeout", "-1s"), []string{"--timeout", "must not be negative", "30s"}},
		{exec("--grace", "soon"), []string{"--grace", "not a duration"}},
		{exec("--log-max", "0"), []string{"--log-max", "want a size"}},
		{exec("--scope", "vm"), []string{"--scope", `"vm"`, "want auto, systemd, cgroup or none"}},
		{exec("--scope", "none", "--require-scope"), []string{"--require-scope", "--scope none"}},
		{exec("--scope", "cgroup", "--unit", "x"), []string{"--unit", "--scope systemd or auto"}},
		{exec("--scope", "cgroup", "--slice", "x.slice"), []string{"--slice", "--scope systemd or auto"}},
		{exec("--unit", "a b"), []string{"--unit", "not allowed"}},
		{exec("--cgroup-parent", "system.slice"), []string{"--cgroup-parent", "systemd unit", "default hlaunch"}},
		{exec("--cgroup-parent", "../x"), []string{"--cgroup-parent", ".."}},
		{exec("--secrets", "some"), []string{"--secrets", "want profile or none"}},
		{exec("--pass", "X"), []string{"--pass", "--secrets none"}},
		{exec("--env", "NOEQUALS"), []string{"--env", "NAME=VALUE"}},
		{exec("--inherit", "OPENAI_API_KEY"), []string{"--inherit OPENAI_API_KEY", "credential"}},
		{exec("--net", "none"), []string{"--net none", "--sandbox"}},
		{exec("--net", "bridge", "--sandbox"), []string{"--net", "want host or none"}},
		{exec("--rw", "/tmp"), []string{"--rw", "--sandbox"}},
		{exec("--as", "1000"), []string{"--as", "want UID:GID"}},
		{exec("--as", "4294967296:4294967296"), []string{"--as", "out of range", "0..4294967294"}},
		{exec("--as", "1000", "--sandbox"), []string{"--as", "want UID:GID"}},
		{exec("--seccomp", "off"), []string{"--seccomp", "--sandbox"}},
		{exec("--seccomp", "strict", "--sandbox"), []string{"--seccomp", "want default or off"}},
		{exec("--stdio", "tty"), []string{"--stdio", "want inherit"}},
		{exec("--stdio", "inherit"), []string{"--stdio inherit", "--detach"}},
		{exec("--key", "k"), []string{"--key", "--detach"}},
		{exec("--tty-titles"), []string{"--tty-titles", "--sandbox in the foreground"}},
		{exec("--tty-titles", "--sandbox", "--detach"), []string{"--tty-titles", "--sandbox in the foreground"}},
		{exec("--key", "a/b", "--detach"), []string{"--key", "'/'"}},
		{exec("--detach=maybe"), []string{"--detach", "want true or false"}},
		{exec("--sandbox=2"), []string{"--sandbox", "want true or false"}},
		{exec("--spec", filepath.Join(dir, "nope.json")), []string{"--spec", "no such file", "JSON launch spec"}},
		{exec("--bogus"), []string{"unknown flag --bogus"}},
		{exec("--memroy", "1G"), []string{"unknown flag --memroy", "did you mean --memory?"}},
		{cmd("exec", "--", "/bin/true"), []string{"--profile"}},
		{cmd("exec", "-p", "b"), []string{"no command"}},
		{cmd("exec", "-p", "../b", "--", "/bin/true"), []string{"profile"}},
		{cmd("exec", "-p", "nosuch", "--", "/bin/true"), []string{"profile 'nosuch' does not exist"}},
		{[]string{"--root", filepath.Join(dir, "nope"), "--state-dir", state, "exec", "-p", "b", "--", "/bin/true"}, []string{"hermes root", "--root"}},
		{cmd("--policy", filepath.Join(dir, "nope.json"), "exec", "-p", "b", "--", "/bin/true"), []string{"--policy"}},
		{cmd("env", "-p", "b", "--env", "=x"), []string{"--env"}},
		{cmd("status", "w-1", "--pid", "x"), []string{"--pid", "want a process id"}},
		{cmd("status", "--fingerprint", "x"), []string{"--pid"}},
		{cmd("signal", "w-000000000000", "-s", "NOPE"), []string{"-s/--signal", `"NOPE"`, "want a name such as TERM"}},
		{cmd("signal", "--pid", "1", "--all"), []string{"--all"}},
		{cmd("stop", "w-000000000000", "--grace", "later"), []string{"--grace", "not a duration"}},
		{cmd("wait", "w-000000000000", "--timeout", "later"), []string{"--timeout", "not a duration"}},
		// Every duration flag takes what --timeout takes and says so in the same words (worker.ParseDuration).
		{cmd("gc", "--max-age", "-1s"), []string{"--max-age", `"-1s"`, "must not be negative", "30s"}},
		{cmd("gc", "--orphan-age", "soon"), []string{"--orphan-age", `"soon"`, "not a duration", "30s"}},
		{cmd("ledger", "--since", "yesterday"), []string{"--since", "RFC 3339"}},
		{cmd("events", "--since", "-1"), []string{"--since", "0 or more"}},
		{cmd("completion", "tcsh"), []string{"tcsh", "bash"}},
		{cmd("exce", "-p", "b"), []string{`unknown command "exce"`, `did you mean "exec"?`}},
	}
	for _, tc := range tests {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		name := strings.Join(tc.args[len(base):], " ")
		line := strings.TrimSuffix(stderr, "\n")
		switch {
		case code != 125:
			t.Errorf("%s: exit %d, want 125 (stderr %q)", name, code, stderr)
		case stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(line, "hlaunch: "):
			t.Errorf("%s: stdout %q, stderr %q: want exactly one line on stderr", name, stdout, stderr)
		case goInternals.MatchString(line):
			t.Errorf("%s: %q shows Go internals (%q)", name, line, goInternals.FindString(line))
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q does not say %q", name, line, w)
			}
		}
		for _, p := range []string{state, logDir} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s: created %s", name, p)
				os.RemoveAll(p)
			}
		}
		for _, h := range []string{"unified", "memory", "pids", "cpu", "systemd", ""} {
			p := filepath.Join("/sys/fs/cgroup", h, parent)
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s: created the cgroup parent %s", name, p)
				os.Remove(p)
			}
		}
	}
}
