package sidecar

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

func intp(i int) *int { return &i }

func TestTransition(t *testing.T) {
	run := worker.Record{Receipt: worker.Receipt{ID: "w-1", PID: 7}, State: "running"}
	exited := worker.Record{Receipt: worker.Receipt{ID: "w-1"}, State: "exited", ExitCode: intp(3)}
	oom := worker.Record{Receipt: worker.Receipt{ID: "w-1"}, State: "exited", Signal: "SIGKILL", OOMKilled: true}
	recycled := worker.Record{Receipt: worker.Receipt{ID: "w-1"}, State: "recycled"}
	unverified := worker.Record{Receipt: worker.Receipt{ID: "w-1"}, State: "unverified"}
	corrupt := worker.Record{Receipt: worker.Receipt{ID: "w-1"}, State: worker.StateCorrupt, RecordError: "torn"}
	future := worker.Record{Receipt: worker.Receipt{ID: "w-1"}, State: worker.StateUnknownVersion, RecordError: "hl2"}
	tests := []struct {
		name  string
		prev  fingerprint.State
		known bool
		rec   worker.Record
		want  []string
	}{
		{"new running is adopted", "", false, run, []string{"adopted"}},
		{"known running stays quiet", "running", true, run, nil},
		{"running to exited", "running", true, exited, []string{"exited"}},
		{"exited while we were down", "", false, exited, []string{"exited"}},
		{"oom comes before exited", "running", true, oom, []string{"oom", "exited"}},
		{"known exited stays quiet", "exited", true, exited, nil},
		{"foreign at start-up", "", false, recycled, []string{"refused"}},
		{"unverified is refused", "", false, unverified, []string{"refused"}},
		{"running turned recycled", "running", true, recycled, []string{"refused"}},
		{"corrupt record, first seen", "", false, corrupt, []string{"corrupt"}},
		{"corrupt record, seen before", worker.StateCorrupt, true, corrupt, nil},
		{"newer record, first seen", "", false, future, []string{"corrupt"}},
		{"running record torn since", "running", true, corrupt, []string{"corrupt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := transition(tt.prev, tt.known, tt.rec, true)
			var got []string
			for _, e := range evs {
				got = append(got, e.Type)
				if e.ID != tt.rec.ID || !e.Initial {
					t.Errorf("event %+v: want id %s and initial", e, tt.rec.ID)
				}
				if e.Type == "corrupt" && (e.Reason != string(tt.rec.State)+": "+tt.rec.RecordError || e.State != tt.rec.State) {
					t.Errorf("corrupt event reason %q state %q, want the state and record error", e.Reason, e.State)
				}
				if e.Type == "refused" && (e.Reason != string(tt.rec.State) || e.State != tt.rec.State) {
					t.Errorf("refused event reason %q state %q, want the state %q", e.Reason, e.State, tt.rec.State)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("events %v, want %v", got, tt.want)
			}
		})
	}
	if e := transition("running", true, exited, false)[0]; e.ExitCode == nil || *e.ExitCode != 3 {
		t.Fatalf("exited event lost the exit code: %+v", e)
	}
}

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name, body string
		allowEmpty bool
		wantCode   string
	}{
		{"valid", `{"profile":"a","argv":["true"]}`, false, ""},
		{"valid with limits", `{"profile":"a","argv":["true"],"limits":{"memory":1048576,"pids":10}}`, false, ""},
		{"unknown field", `{"profile":"a","argv":["true"],"memroy":1}`, false, "invalid"},
		{"unknown nested field", `{"profile":"a","argv":["true"],"limits":{"mem":1}}`, false, "invalid"},
		{"wrong type", `{"profile":1}`, false, "invalid"},
		{"trailing data", `{"profile":"a"} {"profile":"b"}`, false, "invalid"},
		{"trailing garbage", `{"profile":"a"} x`, false, "invalid"},
		{"malformed", `{"profile":`, false, "invalid"},
		{"empty", ``, false, "invalid"},
		{"empty allowed", ``, true, ""},
		{"whitespace allowed", "  \n", true, ""},
		{"array", `[]`, false, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec worker.Spec
			err := decodeStrict(strings.NewReader(tt.body), &spec, tt.allowEmpty)
			got := ""
			if err != nil {
				got = Code(err)
			}
			if got != tt.wantCode {
				t.Fatalf("decodeStrict(%q) = %v (code %q), want code %q", tt.body, err, got, tt.wantCode)
			}
		})
	}
}

func FuzzDecodeSpec(f *testing.F) {
	f.Add(`{"profile":"a","argv":["true"],"env":{"A":"b"},"limits":{"cpus":0.5}}`)
	f.Add(`{"profile":"a"}{}`)
	f.Add(`{"x":1}`)
	f.Fuzz(func(t *testing.T, body string) {
		var spec worker.Spec
		err := decodeStrict(strings.NewReader(body), &spec, false)
		if err != nil && Code(err) != "invalid" {
			t.Fatalf("decode error %v has code %q, want invalid", err, Code(err))
		}
	})
}

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in      string
		want    syscall.Signal
		wantErr bool
	}{
		{"", syscall.SIGTERM, false},
		{"TERM", syscall.SIGTERM, false},
		{"SIGKILL", syscall.SIGKILL, false},
		{"hup", syscall.SIGHUP, false},
		{" usr1 ", syscall.SIGUSR1, false},
		{"15", syscall.SIGTERM, false},
		{"64", syscall.Signal(64), false},
		{"0", 0, true},
		{"65", 0, true},
		{"-9", 0, true},
		{"SIGNOPE", 0, true},
		{"TERM;KILL", 0, true},
	}
	for _, tt := range tests {
		got, err := parseSignal(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseSignal(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && Code(err) != "invalid" {
			t.Errorf("parseSignal(%q) error code %q, want invalid", tt.in, Code(err))
		}
	}
}

func FuzzParseSignal(f *testing.F) {
	for _, s := range []string{"TERM", "9", "sigusr2", "", "999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := parseSignal(s)
		if err == nil && (sig <= 0 || sig > 64) {
			t.Fatalf("parseSignal(%q) = %d, outside 1..64", s, sig)
		}
	})
}

func TestParseDuration(t *testing.T) {
	if d, err := parseDuration("grace", "", 5*time.Second); err != nil || d != 5*time.Second {
		t.Fatalf("empty: %v %v", d, err)
	}
	if d, err := parseDuration("grace", "1.5s", 0); err != nil || d != 1500*time.Millisecond {
		t.Fatalf("1.5s: %v %v", d, err)
	}
	for _, bad := range []string{"-1s", "5", "soon"} {
		if _, err := parseDuration("grace", bad, 0); Code(err) != "invalid" {
			t.Errorf("parseDuration(%q) = %v, want invalid", bad, err)
		}
	}
}

func TestCodeAndStatus(t *testing.T) {
	tests := []struct {
		err    error
		code   string
		status int
	}{
		{worker.ErrInvalid, "invalid", http.StatusBadRequest},
		{worker.ErrNotFound, "not_found", http.StatusNotFound},
		{worker.ErrRefused, "refused", http.StatusConflict},
		{worker.ErrUnverified, "unverified", http.StatusConflict},
		{worker.ErrNotRunning, "not_running", http.StatusConflict},
		{worker.ErrKeyHeld, "key_held", http.StatusConflict},
		{worker.ErrDegraded, "degraded", http.StatusServiceUnavailable},
		{worker.ErrNoSpace, "no_space", http.StatusServiceUnavailable},
		{worker.ErrNotEmpty, "not_empty", http.StatusInternalServerError},
		{worker.ErrCannotRun, "cannot_run", http.StatusUnprocessableEntity},
		{worker.ErrCommandNotFound, "command_not_found", http.StatusUnprocessableEntity},
		{ErrForbidden, "forbidden", http.StatusForbidden},
		{ErrTooLarge, "too_large", http.StatusRequestEntityTooLarge},
		{ErrTimeout, "timeout", http.StatusRequestTimeout},
		{ErrNotImplemented, "not_implemented", http.StatusNotImplemented},
		{ErrNoRoute, "not_found", http.StatusNotFound},
		{ErrMethod, "method_not_allowed", http.StatusMethodNotAllowed},
		{ErrTooMany, "too_many", http.StatusTooManyRequests},
		{ErrBusy, "busy", http.StatusServiceUnavailable},
		{ErrSlowBody, "too_slow", http.StatusRequestTimeout},
		{errors.New("boom"), "internal", http.StatusInternalServerError},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("ctx: %w", tt.err)
		if c := Code(wrapped); c != tt.code {
			t.Errorf("Code(%v) = %q, want %q", tt.err, c, tt.code)
		}
		if s := statusOf(Code(wrapped)); s != tt.status {
			t.Errorf("status for %v = %d, want %d", tt.err, s, tt.status)
		}
	}
}
