package worker

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
)

func TestSpecValidate(t *testing.T) {
	ok := Spec{Profile: "b", Argv: []string{"true"}}
	cases := []struct {
		name string
		edit func(*Spec)
		want string // "" = valid; else a word the error must name
	}{
		{"minimal", func(*Spec) {}, ""},
		{"no profile", func(s *Spec) { s.Profile = " " }, "--profile"},
		{"no argv", func(s *Spec) { s.Argv = nil }, "no command"},
		{"empty argv0", func(s *Spec) { s.Argv = []string{""} }, "no command"},
		{"bad secrets", func(s *Spec) { s.Secrets = "all" }, "--secrets"},
		{"pass without none", func(s *Spec) { s.Pass = []string{"X"} }, "--pass"},
		{"pass with none", func(s *Spec) { s.Secrets, s.Pass = SecretsNone, []string{"X"} }, ""},
		{"bad scope", func(s *Spec) { s.Scope = "vm" }, "--scope"},
		{"limits with none", func(s *Spec) { s.Scope, s.Limits = ScopeNone, cgroup.Limits{Pids: 3} }, "limits"},
		{"require with none", func(s *Spec) { s.Scope, s.RequireScope = ScopeNone, true }, "--require-scope"},
		{"unit with cgroup", func(s *Spec) { s.Scope, s.Unit = ScopeCgroup, "x" }, "--unit"},
		{"negative memory", func(s *Spec) { s.Limits.Memory = -2 }, "--memory: must not be negative"},
		{"weight too big", func(s *Spec) { s.Limits.CPUWeight = 10001 }, "--cpu-weight 10001: want 1..10000"},
		{"cpus below the kernel minimum", func(s *Spec) { s.Limits.CPUs = 0.001 }, "--cpus 0.001: below the minimum 0.01"},
		{"a systemd unit as cgroup parent", func(s *Spec) { s.Scope = ScopeCgroup; s.CgroupParent = "system.slice" }, "--cgroup-parent \"system.slice\""},
		{"a systemd unit as the last parent", func(s *Spec) { s.CgroupParent = "hl/app.scope" }, "systemd unit"},
		{"net none without sandbox", func(s *Spec) { s.Net = "none" }, "--net"},
		{"net none with sandbox", func(s *Spec) { s.Net, s.Sandbox = "none", true }, ""},
		{"bad net", func(s *Spec) { s.Net, s.Sandbox = "bridge", true }, "--net"},
		{"seccomp off without sandbox", func(s *Spec) { s.Seccomp = SeccompOff }, "--seccomp"},
		{"seccomp default without sandbox", func(s *Spec) { s.Seccomp = SeccompDefault }, "--seccomp"},
		{"seccomp off with sandbox", func(s *Spec) { s.Seccomp, s.Sandbox = SeccompOff, true }, ""},
		{"bad seccomp", func(s *Spec) { s.Seccomp, s.Sandbox = "strict", true }, "--seccomp"},
		{"rw without sandbox", func(s *Spec) { s.RW = []string{"/x"} }, "--rw"},
		{"user over 32 bits", func(s *Spec) { s.User = "4294967296:4294967296" }, "--as"},
		{"user (uid_t)-1", func(s *Spec) { s.User = "4294967295:0" }, "--as"},
		{"bad user", func(s *Spec) { s.User, s.Sandbox = "nobody", true }, "--as"},
		{"negative uid", func(s *Spec) { s.User, s.Sandbox = "-1:0", true }, "--as"},
		{"bad timeout", func(s *Spec) { s.Timeout = "soon" }, "--timeout"},
		{"negative grace", func(s *Spec) { s.Grace = "-1s" }, "--grace"},
		{"key without detach", func(s *Spec) { s.Key = "k" }, "--key"},
		{"key with slash", func(s *Spec) { s.Key, s.Detach = "a/b", true }, "--key"},
		{"key", func(s *Spec) { s.Key, s.Detach = "cron-1", true }, ""},
		{"key not utf-8", func(s *Spec) { s.Key, s.Detach = "k\xff", true }, "--key"},
		{"detached log not utf-8", func(s *Spec) { s.Log, s.Detach = "/tmp/l\xff", true }, "--log"},
		{"foreground log not utf-8", func(s *Spec) { s.Log = "/tmp/l\xff" }, ""},
		{"argv not utf-8", func(s *Spec) { s.Argv = []string{"cat", "\xff"} }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			s.Argv = append([]string(nil), ok.Argv...)
			c.edit(&s)
			err := s.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && err == nil:
				t.Fatal("accepted")
			case c.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %q: want ErrInvalid naming %q", err, c.want)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	d := Spec{Scope: ScopeSystemd, CgroupParent: "p", Slice: "s.slice", Net: "none", RequireScope: true, UserManager: true}
	got := Spec{Sandbox: true}.WithDefaults(d)
	if got.Scope != ScopeSystemd || got.CgroupParent != "p" || got.Slice != "s.slice" || got.Net != "none" || !got.RequireScope || !got.UserManager {
		t.Fatalf("defaults not applied: %+v", got)
	}
	// Each default only where it applies: no network without a sandbox, no slice for a raw cgroup. A
	// default must never make a valid spec invalid (a sidecar --net none must not refuse an unsandboxed spawn).
	got = Spec{Scope: ScopeCgroup, Profile: "b", Argv: []string{"x"}}.WithDefaults(d)
	if got.Net != "" || got.Slice != "" {
		t.Fatalf("defaults applied where they do not apply: %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("a valid spec with the defaults: %v", err)
	}
	got = Spec{Scope: ScopeNone, CgroupParent: "q"}.WithDefaults(d)
	if got.Scope != ScopeNone || got.CgroupParent != "q" {
		t.Fatalf("explicit fields overridden: %+v", got)
	}
	if got := (Spec{}).WithDefaults(Spec{}); got.Scope != ScopeAuto {
		t.Fatalf("zero scope = %q, want auto", got.Scope)
	}
}

func TestExitCodeAndCode(t *testing.T) {
	cases := []struct {
		err  error
		exit int
		code string
	}{
		{nil, 0, "internal"},
		{fmt.Errorf("x: %w", ErrInvalid), 125, "invalid"},
		{fmt.Errorf("x: %w", ErrRefused), 3, "refused"},
		{fmt.Errorf("x: %w", ErrUnverified), 4, "unverified"},
		{fmt.Errorf("x: %w", ErrKeyHeld), 73, "key_held"},
		{fmt.Errorf("x: %w", ErrDegraded), 75, "degraded"},
		{fmt.Errorf("x: %w", ErrNoSpace), 75, "no_space"},
		{fmt.Errorf("x: %w", ErrCannotRun), 126, "cannot_run"},
		{fmt.Errorf("x: %w", ErrCommandNotFound), 127, "command_not_found"},
		{fmt.Errorf("x: %w", ErrNotRunning), 1, "not_running"},
		{fmt.Errorf("x: %w", ErrNotFound), 125, "not_found"},
		{errors.New("anything else"), 125, "internal"},
	}
	for _, c := range cases {
		if got := ExitCode(c.err); got != c.exit {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.exit)
		}
		if c.err != nil {
			if got := Code(c.err); got != c.code {
				t.Errorf("Code(%v) = %q, want %q", c.err, got, c.code)
			}
		}
	}
}

func TestRedactArgv(t *testing.T) {
	pol := profile.DefaultPolicy()
	in := []string{"tool", "--api-key=sk-1", "--token", "tok-2", "OPENAI_API_KEY=sk-3", "--verbose", "file=x", "--password", "pw"}
	want := []string{"tool", "--api-key=***", "--token", "***", "OPENAI_API_KEY=***", "--verbose", "file=x", "--password", "***"}
	got := RedactArgv(in, pol)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("redactArgv = %q, want %q", got, want)
	}
	if in[1] != "--api-key=sk-1" {
		t.Fatal("redactArgv changed its input")
	}
	// Credentials in the shapes curl, git and database clients take them.
	in = []string{"curl", "-H", "Authorization: Bearer sk-4", "-H", "X-Api-Key: sk-5", "https://u:sk-6@h.example/p?q=1",
		"--apikey", "sk-7", "--passwd=sk-8", "-H", "Accept: text/plain", "https://h.example/a:b@c", "git@github.com:o/r"}
	want = []string{"curl", "-H", "Authorization: ***", "-H", "X-Api-Key: ***", "https://u:***@h.example/p?q=1",
		"--apikey", "***", "--passwd=***", "-H", "Accept: text/plain", "https://h.example/a:b@c", "git@github.com:o/r"}
	if got := RedactArgv(in, pol); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("redactArgv = %q, want %q", got, want)
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"TERM": syscall.SIGTERM, "sigkill": syscall.SIGKILL, "SIGHUP": syscall.SIGHUP, "10": syscall.SIGUSR1} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "NOPE", "0", "99", "-1", "SIG0", "SIG65", "SIG-1"} {
		if _, err := ParseSignal(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSignal(%q) accepted", in)
		}
	}
}

// Every signal's one written form (SignalName: "SIGTERM", "SIG34") is taken back by ParseSignal as that
// signal, so an answer's signal can be sent again as it is.
func TestSignalNameRoundTrip(t *testing.T) {
	for n := 1; n <= 64; n++ {
		sig := syscall.Signal(n)
		name := SignalName(sig)
		if !strings.HasPrefix(name, "SIG") {
			t.Errorf("SignalName(%d) = %q, want the SIG form", n, name)
		}
		if got, err := ParseSignal(name); err != nil || got != sig {
			t.Errorf("ParseSignal(SignalName(%d) = %q) = %v, %v", n, name, got, err)
		}
	}
	if got := SignalName(34); got != "SIG34" {
		t.Errorf("SignalName(34) = %q, want SIG34", got)
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewWorkerID()
		if !IsID(id) || seen[id] {
			t.Fatalf("NewWorkerID %q: valid %v, repeated %v", id, IsID(id), seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "w-", "w-123", "w-zzzzzzzzzzzz", "x-0123456789ab", "hl1.AQAB", "w-0123456789abc"} {
		if IsID(bad) {
			t.Errorf("IsID(%q)", bad)
		}
	}
}

func TestEnvLookupLastWins(t *testing.T) {
	get := EnvLookup([]string{"A=1", "B=2", "A=3", "AB=4"})
	if get("A") != "3" || get("B") != "2" || get("AB") != "4" || get("C") != "" {
		t.Fatal("EnvLookup")
	}
}
