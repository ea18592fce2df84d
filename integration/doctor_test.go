package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// doctorReport is the part of `hlaunch doctor --json` the tests read.
type doctorReport struct {
	CgroupMode  string `json:"cgroup_mode"`
	CgroupKill  bool   `json:"cgroup_kill"`
	Pidfd       bool   `json:"pidfd"`
	AutoChoice  string `json:"auto_choice"`
	AutoReason  string `json:"auto_reason"`
	RestartSafe bool   `json:"restart_safe"`
	Delegated   struct {
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"delegated"`
	UserBus   Check `json:"user_bus"`
	SystemBus Check `json:"system_bus"`
}

func decodeDoctor(t *testing.T, r result) doctorReport {
	t.Helper()
	var d doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor --json: %v: %q %q", err, r.Stdout, r.Stderr)
	}
	if strings.Contains(d.AutoReason, "\n") || strings.Contains(d.UserBus.Detail, "\n") {
		t.Errorf("a reason spans lines: %q / %q", d.AutoReason, d.UserBus.Detail)
	}
	return d
}

// doctor says what this host offers and what --scope auto would choose, and its exit code says whether a
// restart-safe placement exists; each answer matches what a launch then does.
func TestDoctor(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	// Root: a raw cgroup where no system manager answers (the build machine), a scope where one does
	// (the guest lane's systemd host); either way what doctor says auto picks is what a launch gets.
	t.Run("root", func(t *testing.T) {
		r := e.with(t).run("doctor", "--json")
		d := decodeDoctor(t, r)
		// (Where systemd owns the tree, a raw cgroup needs a delegated unit, which the test's caller may not
		// be: the delegated line matters only where auto would use it.)
		want := "cgroup"
		if d.SystemBus.OK {
			want = "scoped"
		}
		if r.Code != 0 || !d.RestartSafe || d.AutoChoice != want || (want == "cgroup" && !d.Delegated.OK) || !d.CgroupKill || !d.Pidfd {
			t.Fatalf("exit %d, %+v; want auto %s", r.Code, d, want)
		}
		if !d.UserBus.OK && !strings.Contains(d.UserBus.Detail, "enable-linger") {
			t.Errorf("user bus without a session names no remedy: %+v", d.UserBus)
		}
		rc := e.with(t).detach([]string{"--cgroup-parent", e.Parent}, "true")
		if rc.Mode != d.AutoChoice {
			t.Errorf("doctor said %s, a launch got %q", d.AutoChoice, rc.Mode)
		}
	})
	t.Run("unprivileged, nothing available", func(t *testing.T) {
		w := nobodyEnv(t)
		r := w.asNobody("doctor", "--json")
		d := decodeDoctor(t, r)
		if r.Code != 1 || d.RestartSafe || d.AutoChoice != "degraded" {
			t.Fatalf("exit %d, %+v", r.Code, d)
		}
		if r := w.asNobody("doctor"); r.Code != 1 || !strings.Contains(r.Stdout, "degraded") {
			t.Fatalf("plain doctor: %d %q", r.Code, r.Stdout)
		}
	})
	t.Run("with a user manager", func(t *testing.T) {
		m := systemdtest.Start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := m.Command(ctx, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "doctor", "--json")
		cmd.Env = append(e.Launcher, m.Env()...)
		d := decodeDoctor(t, runResult(t, cmd))
		if !d.UserBus.OK {
			t.Fatalf("the test manager's bus was not found: %+v", d.UserBus)
		}
	})
}
