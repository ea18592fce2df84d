package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// parseExec parses args as `hlaunch exec` would and returns the spec.
func parseExec(t *testing.T, args []string, stdin string) (worker.Spec, error) {
	t.Helper()
	var f specFlags
	fs := pflag.NewFlagSet("exec", pflag.ContinueOnError)
	fs.SetInterspersed(false)
	f.addExecFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return f.spec(fs, fs.Args(), strings.NewReader(stdin))
}

func TestSpecFromFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want worker.Spec
	}{
		{
			name: "minimal: unset flags keep the zero values",
			args: []string{"-p", "b", "--", "env"},
			want: worker.Spec{Profile: "b", Argv: []string{"env"}},
		},
		{
			name: "command flags are the command's, with or without --",
			args: []string{"-p", "b", "env", "-i", "--scope", "x"},
			want: worker.Spec{Profile: "b", Argv: []string{"env", "-i", "--scope", "x"}},
		},
		{
			name: "environment flags",
			args: []string{"-p", "b", "--secrets", "none", "--pass", "OPENAI_API_KEY", "--pass", "X_KEY",
				"--env", "A=1", "--env", "B=x=y,z", "--env", "A=2", "--inherit", "EDITOR", "--cwd", "/w", "--", "true"},
			want: worker.Spec{Profile: "b", Argv: []string{"true"}, Secrets: "none",
				Pass: []string{"OPENAI_API_KEY", "X_KEY"}, Env: map[string]string{"A": "2", "B": "x=y,z"},
				Inherit: []string{"EDITOR"}, Cwd: "/w"},
		},
		{
			name: "placement flags",
			args: []string{"-p", "b", "--scope", "systemd", "--require-scope", "--unit", "hermes-worker-kanban-7-run-3",
				"--slice", "work.slice", "--user", "--cgroup-parent", "hl/test", "--", "true"},
			want: worker.Spec{Profile: "b", Argv: []string{"true"}, Scope: "systemd", RequireScope: true,
				Unit: "hermes-worker-kanban-7-run-3", Slice: "work.slice", UserManager: true, CgroupParent: "hl/test"},
		},
		{
			name: "limits",
			args: []string{"-p", "b", "--memory", "512M", "--memory-high", "1Gi", "--pids", "64",
				"--cpu-weight", "200", "--cpus", "0.5", "--", "true"},
			want: worker.Spec{Profile: "b", Argv: []string{"true"}, Limits: cgroup.Limits{
				Memory: 512 << 20, MemoryHigh: 1 << 30, Pids: 64, CPUWeight: 200, CPUs: 0.5}},
		},
		{
			name: "tty titles",
			args: []string{"-p", "b", "--sandbox", "--tty-titles", "--", "vim"},
			want: worker.Spec{Profile: "b", Argv: []string{"vim"}, Sandbox: true, TTYTitles: true},
		},
		{
			name: "sandbox and job flags",
			args: []string{"-p", "b", "--sandbox", "--net", "none", "--seccomp", "off", "--rw", "/srv/a", "--rw", "/srv/b",
				"--as", "1000:1000", "--key", "cron-7", "--timeout", "30s", "--grace", "2s", "--log", "/tmp/l",
				"--detach", "--", "sleep", "1"},
			want: worker.Spec{Profile: "b", Argv: []string{"sleep", "1"}, Sandbox: true, Net: "none", Seccomp: "off",
				RW: []string{"/srv/a", "/srv/b"}, User: "1000:1000", Key: "cron-7", Timeout: "30s", Grace: "2s",
				Log: "/tmp/l", Detach: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseExec(t, tt.args, "")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("spec:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSpecFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		flag string // the message must name it
	}{
		{[]string{"-p", "b", "--env", "NOEQUALS", "--", "true"}, "--env"},
		{[]string{"-p", "b", "--env", "=v", "--", "true"}, "--env"},
		{[]string{"-p", "b", "--env", "A B=v", "--", "true"}, "--env"},
		{[]string{"-p", "b", "--memory", "lots", "--", "true"}, "--memory"},
		{[]string{"-p", "b", "--memory-high", "-1M", "--", "true"}, "--memory-high"},
		{[]string{"-p", "b", "--pids", "-3", "--", "true"}, "--pids"},
		{[]string{"-p", "b", "--cpus", "-1", "--", "true"}, "--cpus"},
		{[]string{"-p", "b", "--timeout", "soon", "--", "true"}, "--timeout"},
		{[]string{"-p", "b", "--grace", "-1s", "--", "true"}, "--grace"},
		{[]string{"-p", "b", "--spec", "/nonexistent/spec.json", "--", "true"}, "--spec"},
	}
	for _, tt := range tests {
		_, err := parseExec(t, tt.args, "")
		if err == nil {
			t.Errorf("%q: no error", tt.args)
			continue
		}
		if !errors.Is(err, worker.ErrInvalid) {
			t.Errorf("%q: %v does not wrap launcher.ErrInvalid", tt.args, err)
		}
		if got := worker.ExitCode(err); got != worker.ExitInternal {
			t.Errorf("%q: exit code %d, want %d", tt.args, got, worker.ExitInternal)
		}
		if msg := err.Error(); !strings.Contains(msg, tt.flag) || strings.Contains(msg, "\n") {
			t.Errorf("%q: message %q must be one line naming %s", tt.args, msg, tt.flag)
		}
		if strings.Count(err.Error(), tt.flag) > 1 {
			t.Errorf("%q: message %q names %s twice", tt.args, err.Error(), tt.flag)
		}
	}
}

func TestSpecMerge(t *testing.T) {
	const doc = `{"profile":"a","argv":["sleep","9"],"scope":"cgroup","env":{"X":"spec","Y":"spec"},
		"pass":["P1"],"limits":{"memory":1048576,"pids":10},"require_scope":true,"timeout":"1m"}`
	tests := []struct {
		name string
		args []string
		want worker.Spec
	}{
		{
			name: "the spec alone",
			args: []string{"--spec", "-"},
			want: worker.Spec{Profile: "a", Argv: []string{"sleep", "9"}, Scope: "cgroup",
				Env: map[string]string{"X": "spec", "Y": "spec"}, Pass: []string{"P1"},
				Limits: cgroup.Limits{Memory: 1 << 20, Pids: 10}, RequireScope: true, Timeout: "1m"},
		},
		{
			name: "explicit flags override, --env adds per name, argv replaces",
			args: []string{"--spec", "-", "-p", "b", "--scope", "none", "--env", "X=flag", "--env", "Z=flag",
				"--pass", "P2", "--pids", "20", "--require-scope=false", "--", "true"},
			want: worker.Spec{Profile: "b", Argv: []string{"true"}, Scope: "none",
				Env: map[string]string{"X": "flag", "Y": "spec", "Z": "flag"}, Pass: []string{"P2"},
				Limits: cgroup.Limits{Memory: 1 << 20, Pids: 20}, RequireScope: false, Timeout: "1m"},
		},
		{
			name: "a default shown in --help never overrides the spec",
			args: []string{"--spec", "-", "--cwd", "/w"},
			want: worker.Spec{Profile: "a", Argv: []string{"sleep", "9"}, Scope: "cgroup", Cwd: "/w",
				Env: map[string]string{"X": "spec", "Y": "spec"}, Pass: []string{"P1"},
				Limits: cgroup.Limits{Memory: 1 << 20, Pids: 10}, RequireScope: true, Timeout: "1m"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseExec(t, tt.args, doc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("spec:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeSpecStrict(t *testing.T) {
	bad := map[string]string{
		"unknown field":      `{"profile":"b","argv":["true"],"memroy":1}`,
		"misspelt safety":    `{"profile":"b","argv":["true"],"requireScope":true}`,
		"unknown limit":      `{"profile":"b","argv":["true"],"limits":{"swap":1}}`,
		"wrong type":         `{"profile":"b","argv":"true"}`,
		"two documents":      `{"profile":"b"}{"profile":"a"}`,
		"trailing garbage":   `{"profile":"b"} x`,
		"not an object":      `["b"]`,
		"empty":              ``,
		"truncated":          `{"profile":"b"`,
		"bad size for limit": `{"limits":{"memory":"lots"}}`,
	}
	for name, doc := range bad {
		if _, err := decodeSpec([]byte(doc)); err == nil {
			t.Errorf("%s: %q accepted", name, doc)
		}
	}
	s, err := decodeSpec([]byte(" {\"profile\":\"b\",\"argv\":[\"true\"]}\n"))
	if err != nil || s.Profile != "b" || len(s.Argv) != 1 {
		t.Errorf("valid spec: %+v, %v", s, err)
	}
}

func TestLoadSpecTooLarge(t *testing.T) {
	big := `{"profile":"` + strings.Repeat("x", maxSpecBytes) + `"}`
	_, err := loadSpec("-", strings.NewReader(big))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized spec: %v", err)
	}
}

// FuzzDecodeSpec: the strict spec decoder never panics, and whatever it accepts survives a round trip.
func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(`{"profile":"b","argv":["true"],"env":{"A":"1"},"limits":{"memory":1,"cpus":0.5}}`))
	f.Add([]byte(`{"profile":"b","unknown":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{}{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSpec(b)
		if err != nil {
			return
		}
		again, err := jsonRoundTrip(s)
		if err != nil {
			t.Fatalf("accepted %q but its re-encoding is refused: %v", b, err)
		}
		if again.Profile != s.Profile || len(again.Argv) != len(s.Argv) || again.Limits != s.Limits {
			t.Fatalf("round trip changed the spec: %+v -> %+v", s, again)
		}
	})
}
