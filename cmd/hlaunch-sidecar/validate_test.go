package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// The sidecar's default placement is checked by the launcher's own checks before anything is made (the
// socket's directory does not even exist): the same sentence as `hlaunch exec` and a spec's field give,
// behind the sidecar's lead, exit 125. A bad --net or --cgroup-parent must not be taken at start-up and
// then refuse every spawn it applies to.
func TestSidecarPlacementCheckedByTheLauncher(t *testing.T) {
	for _, tt := range []struct {
		flag, value string
		spec        worker.Spec
	}{
		{"--scope", "bogus", worker.Spec{Scope: "bogus"}},
		{"--scope", "AUTO", worker.Spec{Scope: "AUTO"}},
		{"--scope", "vm", worker.Spec{Scope: "vm"}},
		{"--net", "bogus", worker.Spec{Net: "bogus", Sandbox: true}},
		{"--net", "NONE", worker.Spec{Net: "NONE", Sandbox: true}},
		{"--cgroup-parent", "../escape", worker.Spec{CgroupParent: "../escape"}},
		{"--cgroup-parent", "hl/system.slice", worker.Spec{CgroupParent: "hl/system.slice"}},
	} {
		cmd := newSidecarCmd()
		cmd.SetArgs([]string{"--socket", t.TempDir() + "/missing/s.sock", tt.flag, tt.value})
		err := cmd.Execute()
		if !errors.Is(err, worker.ErrInvalid) {
			t.Fatalf("%s %q: %v, want ErrInvalid", tt.flag, tt.value, err)
		}
		spec := tt.spec
		spec.Profile, spec.Argv = "b", []string{"true"}
		verr := spec.Validate()
		if verr == nil {
			t.Fatalf("Spec.Validate accepted %s %q", tt.flag, tt.value)
		}
		sentence := strings.TrimPrefix(verr.Error(), worker.ErrInvalid.Error()+": ")
		if want := worker.ErrInvalid.Error() + ": sidecar: " + sentence; err.Error() != want {
			t.Errorf("%s %q:\n got  %q\n want %q", tt.flag, tt.value, err, want)
		}
		if !strings.HasPrefix(sentence, tt.flag+" ") {
			t.Errorf("%s %q: the sentence %q does not name the flag first", tt.flag, tt.value, sentence)
		}
	}
	for _, v := range []worker.Scope{"", worker.ScopeAuto, worker.ScopeSystemd, worker.ScopeCgroup, worker.ScopeNone} {
		if err := worker.CheckScope(string(v)); err != nil {
			t.Errorf("CheckScope(%q) = %v", v, err)
		}
	}
}

// A limit that would serve nothing or wait for nothing is bad input: one line naming the flag, exit 125,
// before the socket is made.
func TestSidecarLimitFlagsChecked(t *testing.T) {
	for _, tt := range [][2]string{
		{"--max-conns", "0"}, {"--max-conns-per-uid", "-1"}, {"--max-streams", "0"}, {"--max-streams-per-uid", "0"}, {"--max-workers", "0"}, {"--max-workers-per-uid", "0"},
		{"--stream-queue", "0"}, {"--header-timeout", "0s"}, {"--body-timeout", "0"}, {"--idle-timeout", "0s"},
		{"--stream-write-timeout", "0s"},
	} {
		cmd := newSidecarCmd()
		cmd.SetArgs([]string{"--socket", t.TempDir() + "/missing/s.sock", tt[0], tt[1]})
		err := cmd.Execute()
		if !errors.Is(err, worker.ErrInvalid) || worker.ExitCode(err) != 125 {
			t.Fatalf("%s %s: %v, want ErrInvalid (exit 125)", tt[0], tt[1], err)
		}
		msg := strings.TrimPrefix(err.Error(), worker.ErrInvalid.Error()+": ")
		if !strings.HasPrefix(msg, "sidecar: "+tt[0]+" ") || strings.Contains(msg, "\n") {
			t.Errorf("%s %s: %q, want one line naming the flag", tt[0], tt[1], msg)
		}
	}
}

// A per-uid bound given larger than its total (set or default) is bad input: one line naming both flags,
// exit 125, before the socket is made. A total set below the default per-uid bound, or equal bounds, start.
func TestSidecarPerUIDAboveTotalRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--max-conns", "1024", "--max-conns-per-uid", "2000"},
		{"--max-conns-per-uid", "2000"},
		{"--max-streams", "8", "--max-streams-per-uid", "9"},
		{"--max-workers-per-uid", "5000"},
		{"--max-workers", "4", "--max-workers-per-uid", "5"},
	} {
		cmd := newSidecarCmd()
		cmd.SetArgs(append([]string{"--socket", t.TempDir() + "/missing/s.sock"}, args...))
		err := cmd.Execute()
		if !errors.Is(err, worker.ErrInvalid) || worker.ExitCode(err) != 125 {
			t.Fatalf("%q: %v, want ErrInvalid (exit 125)", args, err)
		}
		msg := strings.TrimPrefix(err.Error(), worker.ErrInvalid.Error()+": ")
		per := strings.TrimSuffix(strings.TrimPrefix(strings.Fields(msg)[1], "--"), "-per-uid")
		if !strings.HasPrefix(msg, "sidecar: --"+per+"-per-uid ") || !strings.Contains(msg, "more than --"+per+" ") || strings.Contains(msg, "\n") {
			t.Errorf("%q: %q, want one line naming the per-uid flag and its total", args, msg)
		}
	}
	// Accepted bounds get as far as the socket: its missing directory is the refusal.
	for _, args := range [][]string{
		{"--max-conns", "2"},
		{"--max-streams", "4", "--max-streams-per-uid", "4"},
		{"--max-workers", "8", "--max-workers-per-uid", "2"},
	} {
		cmd := newSidecarCmd()
		cmd.SetArgs(append([]string{"--socket", t.TempDir() + "/missing/s.sock"}, args...))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--socket") {
			t.Errorf("%q: %v, want the bounds accepted (and the missing socket directory refused)", args, err)
		}
	}
}
