package systemd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd"
	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// connect opens a connection to m's user bus from the test process (outside the manager's namespaces).
func connect(t testing.TB, m *systemdtest.Manager) *systemd.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := systemd.Connect(ctx, systemd.ConnectOptions{User: true, UID: os.Geteuid(), Getenv: m.Getenv})
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, m.Log())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctxT bounds one test step: generous, for the guest lane under TCG on a loaded machine.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// hostCgroup returns the cgroup2 line of /proc/<pid>/cgroup as the test process sees it.
func hostCgroup(t testing.TB, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p
		}
	}
	t.Fatalf("no cgroup2 line in /proc/%d/cgroup: %q", pid, b)
	return ""
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestStartScopeStopUnit(t *testing.T) {
	m := systemdtest.Start(t)
	c := connect(t, m)
	ctx := ctxT(t)
	unit := randName("hermes-worker-kanban-7-run-") + ".scope"
	p := m.StartParked(t, "exec sleep 600")

	info, err := c.StartScope(ctx, systemd.ScopeSpec{
		Unit: unit, Description: "hlaunch test worker", PIDs: []uint32{uint32(p.PID)},
		MemoryMax: 256 << 20, MemoryHigh: 200 << 20, TasksMax: 64, CPUWeight: 50, CPUQuotaPerSecUSec: 500000,
	})
	if err != nil {
		t.Fatalf("StartScope: %v\n%s", err, m.Log())
	}
	if info.Unit != unit || !hex32.MatchString(info.InvocationID) {
		t.Errorf("ScopeInfo = %+v; want unit %s and 32 hex digits", info, unit)
	}
	cg := "/app.slice/" + unit // the user manager's default slice
	// Placed before it runs: the parked process is in the scope while still blocked on its pipe.
	want := "/" + filepath.Base(m.CgroupV2) + cg
	if got := hostCgroup(t, p.PID); got != want {
		t.Errorf("parked process cgroup (host view) = %q, want %q", got, want)
	}
	if got, err := m.Show(ctx, unit, "InvocationID"); err != nil || got != info.InvocationID {
		t.Errorf("systemctl show InvocationID = %q, %v; want %s", got, err, info.InvocationID)
	}
	if got, err := m.Show(ctx, unit, "Description"); err != nil || got != "hlaunch test worker" {
		t.Errorf("Description = %q, %v", got, err)
	}
	for prop, want := range map[string]string{"TasksMax": "64", "CPUWeight": "50", "CollectMode": "inactive-or-failed", "MemoryMax": strconv.Itoa(256 << 20)} {
		if got, err := m.Show(ctx, unit, prop); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %s", prop, got, err, want)
		}
	}
	list, err := m.Systemctl(ctx, "list-units", "--all", "--no-legend", "--plain", unit)
	if err != nil || !strings.HasPrefix(list, unit+" loaded active running") {
		t.Errorf("list-units = %q, %v; want %s loaded active running", list, err, unit)
	}
	// The child's own view, from inside the manager's cgroup namespace.
	own, err := p.ReleaseAndReport()
	if err != nil || !strings.Contains(own, "0::"+cg+"\n") {
		t.Errorf("child sees its cgroup as %q (%v), want 0::%s", own, err, cg)
	}
	if st, err := c.UnitActive(ctx, unit); err != nil || st != "active" {
		t.Errorf("UnitActive = %q, %v; want active", st, err)
	}

	if err := c.StopUnit(ctx, unit); err != nil {
		t.Fatalf("StopUnit: %v", err)
	}
	if err := p.Wait(5 * time.Second); err == nil {
		t.Errorf("worker exited cleanly; want killed by the stop")
	}
	if _, err := os.Stat(m.HostCgroup(cg)); !os.IsNotExist(err) {
		t.Errorf("scope cgroup %s still exists after stop: %v", m.HostCgroup(cg), err)
	}
	if st, err := c.UnitActive(ctx, unit); err != nil || st != "inactive" {
		t.Errorf("UnitActive after stop = %q, %v; want inactive", st, err)
	}
	if list, _ := m.Systemctl(ctx, "list-units", "--all", "--no-legend", "--plain", unit); strings.Contains(list, unit) {
		t.Errorf("unit still listed after stop: %q", list)
	}
	if err := c.StopUnit(ctx, unit); !errors.Is(err, systemd.ErrNoSuchUnit) {
		t.Errorf("StopUnit of a gone unit = %v, want ErrNoSuchUnit", err)
	}
}

// makeFailedScope leaves a failed scope named unit behind, the way an older launcher could: systemd-run
// --scope without CollectMode, a process that ignores SIGTERM, and a stop that times out into SIGKILL.
func makeFailedScope(t *testing.T, m *systemdtest.Manager, ctx context.Context, unit string) string {
	t.Helper()
	cmd := m.Command(ctx, "systemd-run", "--user", "--scope", "--quiet", "--unit", unit, "-p", "TimeoutStopSec=200ms",
		"/bin/sh", "-c", `trap "" TERM; while :; do sleep 0.05; done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	for i := 0; ; i++ {
		if st, _ := m.Systemctl(ctx, "is-active", unit); st == "active" {
			break
		}
		if i > 200 {
			t.Fatalf("leftover scope %s never became active", unit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	id, _ := m.Show(ctx, unit, "InvocationID")
	_, _ = m.Systemctl(ctx, "stop", unit) // exits non-zero: the stop job times out
	if st, _ := m.Systemctl(ctx, "is-active", unit); st != "failed" {
		t.Fatalf("could not make a failed leftover: %s is %q", unit, st)
	}
	return id
}

func TestStartScopeResetsFailedLeftover(t *testing.T) {
	m := systemdtest.Start(t)
	c := connect(t, m)
	ctx := ctxT(t)
	unit := randName("cron-nightly-exec-") + ".scope"
	oldID := makeFailedScope(t, m, ctx, unit)
	if st, err := c.UnitActive(ctx, unit); err != nil || st != "failed" {
		t.Fatalf("UnitActive(leftover) = %q, %v; want failed", st, err)
	}

	// The leftover blocks a naive start (what hermes' systemd-run did).
	if out, err := m.Command(ctx, "systemd-run", "--user", "--scope", "--unit", unit, "true").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "already loaded") {
		t.Fatalf("systemd-run over the failed leftover: %v %s; want \"already loaded\"", err, out)
	}
	p := m.StartParked(t, "")
	info, err := c.StartScope(ctx, systemd.ScopeSpec{Unit: unit, PIDs: []uint32{uint32(p.PID)}})
	if err != nil {
		t.Fatalf("StartScope over a failed leftover: %v", err)
	}
	if info.InvocationID == oldID || !hex32.MatchString(info.InvocationID) {
		t.Errorf("InvocationID %q, leftover had %q: want a new one", info.InvocationID, oldID)
	}
	if own, err := p.ReleaseAndReport(); err != nil || !strings.Contains(own, "0::/app.slice/"+unit+"\n") {
		t.Errorf("child sees %q (%v), want 0::/app.slice/%s", own, err, unit)
	}
}

func TestStartScopeRefusesActiveUnit(t *testing.T) {
	m := systemdtest.Start(t)
	c := connect(t, m)
	ctx := ctxT(t)
	unit := randName("proc_") + ".scope"
	a := m.StartParked(t, "")
	if _, err := c.StartScope(ctx, systemd.ScopeSpec{Unit: unit, PIDs: []uint32{uint32(a.PID)}}); err != nil {
		t.Fatal(err)
	}
	b := m.StartParked(t, "")
	_, err := c.StartScope(ctx, systemd.ScopeSpec{Unit: unit, PIDs: []uint32{uint32(b.PID)}})
	if !errors.Is(err, systemd.ErrUnitExists) {
		t.Fatalf("second StartScope = %v, want ErrUnitExists", err)
	}
	// The refused process was not moved, and the running scope was not reset.
	if got := hostCgroup(t, b.PID); !strings.HasSuffix(got, "/clients") {
		t.Errorf("refused process moved to %q", got)
	}
	if st, _ := c.UnitActive(ctx, unit); st != "active" {
		t.Errorf("first scope is %q after the refused start, want active", st)
	}
	if err := c.KillUnit(ctx, unit, syscall.SIGKILL); err != nil {
		t.Fatalf("KillUnit: %v", err)
	}
	if err := a.Wait(5 * time.Second); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("worker after KillUnit(SIGKILL): %v, want killed", err)
	}
}

func TestStartScopeInvalid(t *testing.T) {
	m := systemdtest.Start(t)
	c := connect(t, m)
	ctx := ctxT(t)
	for _, s := range []systemd.ScopeSpec{
		{Unit: "x.service", PIDs: []uint32{1}},
		{Unit: "a@b.scope", PIDs: []uint32{1}},
		{Unit: "x.scope"},
		{Unit: "x.scope", PIDs: []uint32{1}, MemoryMax: -1},
		{Unit: "x.scope", PIDs: []uint32{1}, Slice: "nope"},
	} {
		if _, err := c.StartScope(ctx, s); !errors.Is(err, systemd.ErrBadSpec) && !errors.Is(err, systemd.ErrBadUnitName) {
			t.Errorf("StartScope(%+v) = %v, want ErrBadSpec or ErrBadUnitName", s, err)
		}
	}
}

// TestStartScopeAdoptsOutsidePID records a property of this kind of host that the harness doc relies on:
// without the nsdelegate mount option on the host's cgroup2 hierarchy, the kernel lets the manager move a
// process that is outside its cgroup namespace into its subtree (with nsdelegate it gets ENOENT). So a
// harness test must never pass a PID it did not start: the process would be pulled in and killed at
// teardown. The process here is a sleep the test started itself, outside the clients leaf.
func TestStartScopeAdoptsOutsidePID(t *testing.T) {
	m := systemdtest.Start(t)
	c := connect(t, m)
	ctx := ctxT(t)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	unit := randName("outside-") + ".scope"
	info, err := c.StartScope(ctx, systemd.ScopeSpec{Unit: unit, PIDs: []uint32{uint32(cmd.Process.Pid)}})
	if nsDelegate(t) {
		if err == nil {
			t.Errorf("nsdelegate host: StartScope of a PID outside the manager's namespace succeeded: %+v", info)
		}
		return
	}
	if err != nil {
		t.Fatalf("StartScope of an outside PID failed on a host without nsdelegate: %v", err)
	}
	if got, want := hostCgroup(t, cmd.Process.Pid), "/"+filepath.Base(m.CgroupV2)+"/app.slice/"+unit; got != want {
		t.Errorf("outside process now in %q, want %q", got, want)
	}
}

// nsDelegate reports whether the host's cgroup2 mount has nsdelegate.
func nsDelegate(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " - cgroup2 ") && strings.Contains(l, "nsdelegate") {
			return true
		}
	}
	return false
}

func TestConnectNoBus(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "hlsd-nobus-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	getenv := func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return dir
		}
		return ""
	}
	_, err = systemd.Connect(context.Background(), systemd.ConnectOptions{User: true, UID: os.Geteuid(), Getenv: getenv})
	if !errors.Is(err, systemd.ErrNoBus) || !strings.Contains(err.Error(), filepath.Join(dir, "bus")) ||
		!strings.Contains(err.Error(), "loginctl enable-linger") {
		t.Errorf("Connect with no bus = %v; want ErrNoBus naming %s/bus and the remedy", err, dir)
	}
}

// TestConnectSystemNoBus checks the root path's failure on a host without a system manager: both the
// system bus and /run/systemd/private are named.
func TestConnectSystemNoBus(t *testing.T) {
	if _, err := os.Stat("/run/systemd/private"); err == nil {
		t.Skip("this host runs a systemd system manager; its failure path cannot be forced")
	}
	getenv := func(k string) string {
		if k == "DBUS_SYSTEM_BUS_ADDRESS" {
			return "unix:path=/nonexistent/system_bus_socket"
		}
		return ""
	}
	_, err := systemd.Connect(context.Background(), systemd.ConnectOptions{UID: 0, Getenv: getenv})
	if !errors.Is(err, systemd.ErrNoBus) || !strings.Contains(err.Error(), "/nonexistent/system_bus_socket") ||
		!strings.Contains(err.Error(), "/run/systemd/private") {
		t.Errorf("Connect(system) = %v; want ErrNoBus naming both sockets", err)
	}
}

// NoInfo: the scope is made and holds the process, but StartScope does not read the InvocationID back,
// so only Unit is set.
func TestStartScopeNoInfo(t *testing.T) {
	m := systemdtest.Start(t)
	c := connect(t, m)
	ctx := ctxT(t)
	unit := randName("noinfo-") + ".scope"
	p := m.StartParked(t, "exec sleep 600")
	info, err := c.StartScope(ctx, systemd.ScopeSpec{Unit: unit, PIDs: []uint32{uint32(p.PID)}, NoInfo: true})
	if err != nil {
		t.Fatalf("StartScope: %v\n%s", err, m.Log())
	}
	if info != (systemd.ScopeInfo{Unit: unit}) {
		t.Errorf("ScopeInfo = %+v, want only Unit %s", info, unit)
	}
	if got, want := hostCgroup(t, p.PID), "/"+filepath.Base(m.CgroupV2)+"/app.slice/"+unit; got != want {
		t.Errorf("parked process cgroup (host view) = %q, want %q", got, want)
	}
	if st, err := c.UnitActive(ctx, unit); err != nil || st != "active" {
		t.Errorf("UnitActive = %q, %v; want active", st, err)
	}
	if err := c.StopUnit(ctx, unit); err != nil {
		t.Errorf("StopUnit: %v", err)
	}
}

// RuntimeMax and StopTimeout are the manager's backstop for a detached worker's deadline (launcher:
// scopeBackstop): the manager stops the scope RuntimeMax after it started, SIGTERM first, and kills what
// ignores it StopTimeout later. The parked shell ignores SIGTERM, so only the kill ends it. RuntimeMax is
// 15 s, not 1 s: under TCG a guest's manager can stop a 1 s scope before its properties are read back.
func TestStartScopeRuntimeMax(t *testing.T) {
	m := systemdtest.Start(t)
	c := connect(t, m)
	ctx := ctxT(t)
	unit := randName("hlaunch-runtimemax-") + ".scope"
	p := m.StartParked(t, "trap '' TERM; sleep 600")
	if _, err := c.StartScope(ctx, systemd.ScopeSpec{
		Unit: unit, PIDs: []uint32{uint32(p.PID)}, RuntimeMax: 15 * time.Second, StopTimeout: time.Second,
	}); err != nil {
		t.Fatalf("StartScope: %v\n%s", err, m.Log())
	}
	for prop, want := range map[string]string{"RuntimeMaxUSec": "15s", "TimeoutStopUSec": "1s"} {
		if got, err := m.Show(ctx, unit, prop); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %s", prop, got, err, want)
		}
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	err := p.Wait(90 * time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the scope's process after RuntimeMax: %v, want it killed\n%s", err, m.Log())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the scope's process ended with %v, want SIGKILL (it ignores the stop's SIGTERM)", ee)
	}
}
