package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// jsonRoundTrip re-encodes a spec and decodes it strictly again.
func jsonRoundTrip(s worker.Spec) (worker.Spec, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return worker.Spec{}, err
	}
	return decodeSpec(b)
}

// runCLI runs hlaunch in-process with files for its streams and returns the exit code, stdout and stderr.
// Only command lines that fail before the launcher touches the host are run this way.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	open := func(name, content string) *os.File {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	in, out, errf := open("stdin", stdin), open("stdout", ""), open("stderr", "")
	code := run(args, in, out, errf)
	read := func(f *os.File) string {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return code, read(out), read(errf)
}

func TestBadInputExits125WithOneLine(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the one error line
	}{
		{[]string{"exec", "-p", "b", "--env", "NOEQUALS", "--", "true"}, "--env"},
		{[]string{"exec", "-p", "b", "--memory", "lots", "--", "true"}, "--memory"},
		{[]string{"exec", "-p", "b", "--bogus", "--", "true"}, "unknown flag --bogus"},
		{[]string{"exec", "-p", "b", "--pids", "many", "--", "true"}, "--pids"},
		{[]string{"exec", "-p", "b", "--scope", "sometimes", "--", "true"}, "--scope"},
		{[]string{"exec", "-p", "b"}, "no command"},
		{[]string{"exec", "--", "true"}, "--profile"},
		{[]string{"exec", "--spec", "-", "--", "true"}, "--spec"},
		{[]string{"env"}, "--profile"},
		{[]string{"env", "-p", "b", "--env", "=x"}, "--env"},
		{[]string{"bogus"}, "unknown command"},
		{[]string{"status"}, "worker id"},
		{[]string{"status", "--fingerprint", "x"}, "--pid"},
		{[]string{"signal", "w-1", "-s", "NOPE"}, "NOPE"},
		{[]string{"signal", "--pid", "1", "--all"}, "--all"},
		{[]string{"stop", "w-1", "--grace", "later"}, "--grace"},
		{[]string{"wait", "w-1", "--timeout", "later"}, "--timeout"},
		{[]string{"ledger", "--since", "yesterday"}, "--since"},
		{[]string{"ps", "extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, `{"profile":"b","argv":["true"],"nope":1}`, tt.args...)
		if code != worker.ExitInternal {
			t.Errorf("%q: exit %d, want 125", tt.args, code)
		}
		if stdout != "" {
			t.Errorf("%q: stdout %q, want nothing", tt.args, stdout)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "hlaunch: ") || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: stderr %q, want one line \"hlaunch: ...%s...\"", tt.args, stderr, tt.want)
		}
	}
}

func TestJSONErrorOnStdout(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "--json", "exec", "-p", "b", "--env", "X", "--", "true")
	if code != 125 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	checkJSONError(t, stdout, "invalid", "--env")
}

func TestWriteJSONErrorShape(t *testing.T) {
	tests := []struct {
		err  error
		code string
	}{
		{fmt.Errorf("x: %w", worker.ErrRefused), "refused"},
		{fmt.Errorf("x: %w", worker.ErrUnverified), "unverified"},
		{fmt.Errorf("x: %w", worker.ErrKeyHeld), "key_held"},
		{invalidf("--env %q: bad\nsecond line", "X"), "invalid"},
		{fmt.Errorf("wait: %w", errWaitTimeout), "timeout"},
		{errors.New("disk on fire"), "internal"},
	}
	for _, tt := range tests {
		_, name := exitCodeFor(tt.err)
		var b strings.Builder
		writeJSONError(&b, name, message(tt.err))
		checkJSONError(t, b.String(), tt.code, "")
	}
}

// checkJSONError asserts one line holding exactly {"error":{"code":code,"message":...}}.
func checkJSONError(t *testing.T, s, code, inMessage string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("JSON error %q is not exactly one line", s)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		t.Fatalf("JSON error %q: %v", s, err)
	}
	body, ok := raw["error"]
	if len(raw) != 1 || !ok || len(body) != 2 {
		t.Fatalf("JSON error %q: want exactly {\"error\":{\"code\",\"message\"}}", s)
	}
	if body["code"] != code {
		t.Errorf("code %v, want %s", body["code"], code)
	}
	msg, _ := body["message"].(string)
	if msg == "" || !strings.Contains(msg, inMessage) || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one non-empty line containing %q", msg, inMessage)
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{exitStatus(7), 7},
		{fmt.Errorf("wrapped: %w", exitStatus(130)), 130},
		{fmt.Errorf("w: %w", errWaitTimeout), exitTimeout},
		{invalidf("bad"), 125},
		{fmt.Errorf("x: %w", worker.ErrDegraded), 75},
		{fmt.Errorf("x: %w", worker.ErrKeyHeld), 73},
		{fmt.Errorf("x: %w", worker.ErrCommandNotFound), 127},
	}
	for _, tt := range tests {
		a := &app{stderr: devNull(t), stdout: devNull(t)}
		if got := a.finish(tt.err); got != tt.want {
			t.Errorf("%v: exit %d, want %d", tt.err, got, tt.want)
		}
	}
}

func devNull(t *testing.T) *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestStateExitCode(t *testing.T) {
	want := map[fingerprint.State]int{
		"running": 0, "exited": 1, "foreign-boot": 3, "foreign-machine": 3, "recycled": 3,
		"unverified": 4, "malformed": 125, "": 125, "something-new": 125,
	}
	for state, code := range want {
		if got := stateExitCode(state); got != code {
			t.Errorf("state %q: exit %d, want %d", state, got, code)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-11-28T10:00:00Z", time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)},
		{"2026-11-28T10:00:00+01:00", time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)},
		{"2026-11-28", time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)},
		{"24h", now.Add(-24 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
	}
	for _, tt := range tests {
		got, err := parseSince(tt.in, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("%q: %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-1h", "2026-13-01"} {
		if _, err := parseSince(bad, now); !errors.Is(err, worker.ErrInvalid) {
			t.Errorf("%q: %v, want an invalid error", bad, err)
		}
	}
}

func TestFormatting(t *testing.T) {
	if got := humanBytes(512); got != "512B" {
		t.Errorf("humanBytes(512) = %s", got)
	}
	if got := humanBytes(3 << 20); got != "3.0M" {
		t.Errorf("humanBytes(3M) = %s", got)
	}
	if got := oneLine("a\nb\r\nc\n"); got != "a; b; c" {
		t.Errorf("oneLine = %q", got)
	}
	zero, three := 0, 3
	for _, tt := range []struct {
		r    worker.Record
		want string
	}{
		{worker.Record{}, "-"},
		{worker.Record{ExitCode: &zero}, "exit 0"},
		{worker.Record{ExitCode: &three, TimedOut: true}, "exit 3, timed out"},
		{worker.Record{Signal: "SIGKILL", OOMKilled: true}, "SIGKILL, oom-killed"},
	} {
		if got := outcome(tt.r); got != tt.want {
			t.Errorf("outcome(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
	if got := shortTime("2026-11-29T10:38:44.799098629Z"); got != "2026-11-29 10:38:44" {
		t.Errorf("shortTime = %q", got)
	}
}

func TestEnvRedaction(t *testing.T) {
	environ := profile.Environ{
		{Name: "B_MARKER", Value: "b", Source: "profile:/h/.env:1"},
		{Name: "FIRECRAWL_API_KEY", Value: "b-fc", Source: "profile:/h/.env:2", Secret: true},
	}
	for _, tt := range []struct {
		show    bool
		explain bool
		want    string
	}{
		{false, false, "B_MARKER=b\nFIRECRAWL_API_KEY=***\n"},
		{true, false, "B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\n"},
		{false, true, "SOURCE             NAME=VALUE\nprofile:/h/.env:1  B_MARKER=b\nprofile:/h/.env:2  FIRECRAWL_API_KEY=***\n"},
	} {
		var b strings.Builder
		if err := writeEnv(&b, envEntries(environ, tt.show), tt.explain); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("show=%v explain=%v: %q, want %q", tt.show, tt.explain, b.String(), tt.want)
		}
	}
}

func TestMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: profile name %q: reserved", worker.ErrInvalid, "root"), `profile name "root": reserved`},
		{fmt.Errorf("%w: leader gone", worker.ErrRefused), "refused: identity does not match: leader gone"},
		{errors.New("two\nlines"), "two; lines"},
	}
	for _, tt := range tests {
		if got := message(tt.err); got != tt.want {
			t.Errorf("message(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
