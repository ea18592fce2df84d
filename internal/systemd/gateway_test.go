package systemd_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// procStart returns field 22 of /proc/<pid>/stat (start time in ticks), "" when the process is gone, so a
// recycled PID is not mistaken for the same process.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}

// readPID waits for a PID file written by a process in the manager.
func readPID(t *testing.T, p string) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		if b, err := os.ReadFile(p); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no PID in %s", p)
	return 0
}

// TestGatewayRestartKillMode is the control for the integration test
// TestSystemdWorkersSurviveGatewayRestart: a gateway run as a transient service with KillMode=mixed is
// restarted; a plain child of the gateway dies with it, while a worker the gateway placed in its own scope
// (here with systemd-run --user --scope, as hermes did; the integration test does the same through
// hlaunch) survives in that scope.
func TestGatewayRestartKillMode(t *testing.T) {
	m := systemdtest.Start(t)
	ctx := ctxT(t)
	gw := randName("gw-") + ".service"
	scope := randName("hermes-worker-kanban-7-run-") + ".scope"
	dir := t.TempDir()
	plainFile, scopedFile := filepath.Join(dir, "plain.pid"), filepath.Join(dir, "scoped.pid")
	script := `sleep 600 & echo $! > "$1"
systemd-run --user --scope --quiet --unit "$3" sleep 600 & echo $! > "$2"
exec sleep 600`
	if err := m.StartService(ctx, gw, []string{"KillMode=mixed"}, "/bin/sh", "-c", script, "gateway", plainFile, scopedFile, scope); err != nil {
		t.Fatal(err)
	}
	plain, scoped := readPID(t, plainFile), readPID(t, scopedFile)
	plainStart, scopedStart := procStart(plain), procStart(scoped)
	for i := 0; ; i++ {
		if st, _ := m.Systemctl(ctx, "is-active", scope); st == "active" {
			break
		}
		if i > 300 {
			t.Fatalf("worker scope %s never became active", scope)
		}
		time.Sleep(10 * time.Millisecond)
	}
	gwCgroup := "/" + filepath.Base(m.CgroupV2) + "/app.slice/" + gw
	if got := hostCgroup(t, plain); got != gwCgroup {
		t.Fatalf("plain child in %q, want the gateway's %q", got, gwCgroup)
	}
	oldMain, _ := m.Show(ctx, gw, "MainPID")

	if _, err := m.Systemctl(ctx, "restart", gw); err != nil {
		t.Fatal(err)
	}
	if newMain, _ := m.Show(ctx, gw, "MainPID"); newMain == oldMain || newMain == "0" {
		t.Errorf("gateway MainPID %s -> %s: not restarted", oldMain, newMain)
	}
	// KillMode=mixed: after the main process, everything left in the gateway's cgroup gets SIGKILL.
	for i := 0; procStart(plain) == plainStart && i < 200; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if procStart(plain) == plainStart {
		t.Errorf("plain child %d of the gateway survived the restart (KillMode=mixed should kill it)", plain)
	}
	if procStart(scoped) != scopedStart {
		t.Fatalf("scoped worker %d died with the gateway restart", scoped)
	}
	want := "/" + filepath.Base(m.CgroupV2) + "/app.slice/" + scope
	if got := hostCgroup(t, scoped); got != want {
		t.Errorf("scoped worker in %q after restart, want %q", got, want)
	}
}
