package systemdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// systemdBinary is the user manager binary of Debian and most distributions.
const systemdBinary = "/lib/systemd/systemd"

// readyTimeout bounds how long Start waits for the manager to answer: a bound, not an expectation (a
// manager starts in ~0.2 s here, in 12-15 s in the guest lane under TCG on a loaded machine).
const readyTimeout = 90 * time.Second

// Manager is a running private systemd user manager. Its fields are read-only.
type Manager struct {
	// PID is the manager's PID (in the host's PID namespace, which it shares).
	PID int
	// RuntimeDir is the manager's XDG_RUNTIME_DIR: a private 0700 directory on the host filesystem holding
	// the bus socket (bus) and the manager's private socket (systemd/private).
	RuntimeDir string
	// BusAddress is the D-Bus address of its user bus, unix:path=<RuntimeDir>/bus.
	BusAddress string
	// CgroupV2 is the host path of the manager's subtree in the cgroup2 hierarchy.
	CgroupV2 string
	// CgroupSystemd is the host path of its subtree in the named v1 "systemd" hierarchy; "" on pure v2.
	CgroupSystemd string
	// Home is the manager's private HOME.
	Home string
	// LogFile receives the manager's stdout and stderr.
	LogFile string
	// UID and GID are the user the manager and Command's programs run as (0: root).
	UID, GID int

	base string
	done chan struct{}
	// waitErr is written before done is closed.
	waitErr error
}

// detectLayout says whether /sys/fs/cgroup is "hybrid" or "unified".
func detectLayout() (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "", &os.PathError{Op: "statfs", Path: "/sys/fs/cgroup", Err: err}
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "unified", nil
	}
	var u, s unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup/unified", &u) == nil && u.Type == unix.CGROUP2_SUPER_MAGIC &&
		unix.Statfs("/sys/fs/cgroup/systemd", &s) == nil && s.Type == unix.CGROUP_SUPER_MAGIC {
		return "hybrid", nil
	}
	return "", errors.New("no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified with a name=systemd hierarchy beside it")
}

// requireCapabilities skips t unless a private manager can be started here.
func requireCapabilities(t testing.TB) string {
	t.Helper()
	testutil.RequireRoot(t, "systemdtest creates cgroups and mount namespaces")
	if _, err := os.Stat(systemdBinary); err != nil {
		testutil.Skip(t, fmt.Sprintf("systemdtest: no systemd binary (%v); apt-get install -y systemd dbus dbus-user-session", err))
	}
	for _, b := range []string{"unshare", "nsenter", "mount", "systemctl"} {
		if _, err := exec.LookPath(b); err != nil {
			testutil.Skip(t, fmt.Sprintf("systemdtest: %s not found: %v", b, err))
		}
	}
	layout, err := detectLayout()
	if err != nil {
		testutil.Skip(t, fmt.Sprintf("systemdtest: unsupported cgroup layout: %v", err))
	}
	return layout
}

// Options changes how StartWith starts the manager. The zero value is Start's root manager.
type Options struct {
	// UID and GID, when UID is not 0, run the manager (and everything Command starts) as that user: the
	// subtree is delegated to it (the directories and cgroup.procs, cgroup.subtree_control, cgroup.threads,
	// tasks are chowned), and the runtime directory and HOME are its own. The test itself must be root.
	UID, GID int
}

// Start starts a private systemd user manager as root (see the package doc) and registers its teardown
// with t.Cleanup. It skips t, saying why, when not root, when systemd is not installed, or when the cgroup
// layout is neither hybrid nor pure v2.
func Start(t testing.TB) *Manager {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options, e.g. a manager of an unprivileged user.
func StartWith(t testing.TB, o Options) *Manager {
	t.Helper()
	layout := requireCapabilities(t)
	if o.UID != 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			testutil.Skip(t, fmt.Sprintf("systemdtest: setpriv not found (needed for a non-root manager): %v", err))
		}
	}
	pid1Before, _ := os.ReadFile("/proc/1/cgroup")

	name := testutil.RandName("hlaunch-test-sd-")
	m := &Manager{done: make(chan struct{}), UID: o.UID, GID: o.GID}
	if layout == "hybrid" {
		m.CgroupV2 = filepath.Join("/sys/fs/cgroup/unified", name)
		m.CgroupSystemd = filepath.Join("/sys/fs/cgroup/systemd", name)
	} else {
		m.CgroupV2 = filepath.Join("/sys/fs/cgroup", name)
	}
	// The socket path must fit in sun_path (108 bytes): a short base under /tmp, not t.TempDir().
	base, err := os.MkdirTemp("/tmp", "hlsd-")
	if err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	m.base = base
	m.RuntimeDir, m.Home, m.LogFile = filepath.Join(base, "rt"), filepath.Join(base, "home"), filepath.Join(base, "manager.log")
	m.BusAddress = "unix:path=" + filepath.Join(m.RuntimeDir, "bus")
	t.Cleanup(func() { m.teardown(t) })

	for _, d := range []string{m.RuntimeDir, m.Home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatalf("systemdtest: %v", err)
		}
	}
	for _, d := range m.subtrees() {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("systemdtest: %v", err)
		}
		if err := os.Mkdir(filepath.Join(d, "clients"), 0o755); err != nil {
			t.Fatalf("systemdtest: %v", err)
		}
	}
	if o.UID != 0 {
		if err := m.delegate(); err != nil {
			t.Fatalf("systemdtest: %v", err)
		}
	}
	log, err := os.Create(m.LogFile)
	if err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	defer log.Close()

	start := time.Now()
	cmd := exec.Command("/bin/sh", "-euc", startScript, "systemdtest-start",
		layout, m.CgroupV2, m.CgroupSystemd, m.RuntimeDir, m.Home, innerScript, strconv.Itoa(o.UID), strconv.Itoa(o.GID), systemdBinary)
	// A minimal environment: the manager passes its own to every unit, and the test's must not leak there.
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	cmd.Stdout, cmd.Stderr = log, log
	// If the test binary dies without running Cleanup, the manager dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("systemdtest: start manager: %v", err)
	}
	// The PID survives sh -> unshare -> sh -> systemd: every step is an exec.
	m.PID = cmd.Process.Pid
	go func() {
		m.waitErr = cmd.Wait()
		close(m.done)
	}()

	if err := m.waitReady(); err != nil {
		t.Fatalf("systemdtest: manager not ready after %v: %v\n--- manager log:\n%s", time.Since(start), err, m.Log())
	}
	if after, _ := os.ReadFile("/proc/1/cgroup"); !bytes.Equal(pid1Before, after) {
		t.Fatalf("systemdtest: SAFETY: PID 1 changed cgroup while starting the manager:\nbefore:\n%safter:\n%s", pid1Before, after)
	}
	t.Logf("systemdtest: manager %d ready in %v (cgroup %s)", m.PID, time.Since(start).Round(time.Millisecond), m.CgroupV2)
	return m
}

// delegate hands the subtree, the runtime directory and HOME to m.UID, the way systemd delegates a
// subtree to a user manager. The base directory becomes traversable (0711) so the user can reach its own.
func (m *Manager) delegate() error {
	paths := []string{m.RuntimeDir, m.Home}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		paths = append(paths, filepath.Join(m.CgroupV2, f))
	}
	if m.CgroupSystemd != "" {
		for _, f := range []string{"", "cgroup.procs", "tasks"} {
			paths = append(paths, filepath.Join(m.CgroupSystemd, f))
		}
	}
	for _, p := range paths {
		if err := os.Chown(p, m.UID, m.GID); err != nil {
			return err
		}
	}
	return os.Chmod(m.base, 0o711)
}

// subtrees returns the manager's subtree in every hierarchy, cgroup2 first.
func (m *Manager) subtrees() []string {
	if m.CgroupSystemd == "" {
		return []string{m.CgroupV2}
	}
	return []string{m.CgroupV2, m.CgroupSystemd}
}

// waitReady waits until both sockets exist and the manager reports it finished starting up.
func (m *Manager) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-m.done:
			return fmt.Errorf("manager exited: %v", m.waitErr)
		default:
		}
		_, e1 := os.Stat(filepath.Join(m.RuntimeDir, "systemd", "private"))
		_, e2 := os.Stat(filepath.Join(m.RuntimeDir, "bus"))
		if e1 == nil && e2 == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no sockets in %s", m.RuntimeDir)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	out, err := m.Command(ctx, "systemctl", "--user", "is-system-running", "--wait").CombinedOutput()
	// "degraded" is a running manager with a failed unit (none of ours); still usable.
	if s := strings.TrimSpace(string(out)); s != "running" && s != "degraded" {
		return fmt.Errorf("systemctl --user is-system-running: %q: %v", s, err)
	}
	return nil
}

// Env returns XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS for a client of this manager.
func (m *Manager) Env() []string {
	return []string{"XDG_RUNTIME_DIR=" + m.RuntimeDir, "DBUS_SESSION_BUS_ADDRESS=" + m.BusAddress}
}

// Getenv is a getenv function that knows only Env's two variables, for systemd.ConnectOptions.Getenv.
func (m *Manager) Getenv(key string) string {
	switch key {
	case "XDG_RUNTIME_DIR":
		return m.RuntimeDir
	case "DBUS_SESSION_BUS_ADDRESS":
		return m.BusAddress
	}
	return ""
}

// ClientCgroups returns the host paths of the clients leaf (cgroup2 first, then the v1 systemd one).
func (m *Manager) ClientCgroups() []string {
	var out []string
	for _, d := range m.subtrees() {
		out = append(out, filepath.Join(d, "clients"))
	}
	return out
}

// Command returns a command that runs name with args inside the manager's world: its PID is first moved
// into the clients leaf of the manager's subtree, then it enters the manager's cgroup and mount
// namespaces with nsenter, with the test's environment plus Env. Exit status 125 means the move failed.
func (m *Manager) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	leaves := m.ClientCgroups()
	v1 := ""
	if len(leaves) > 1 {
		v1 = leaves[1]
	}
	argv := []string{"-c", clientScript, "systemdtest-client", strconv.Itoa(m.PID), leaves[0], v1}
	if m.UID != 0 {
		argv = append(argv, "setpriv", "--reuid="+strconv.Itoa(m.UID), "--regid="+strconv.Itoa(m.GID), "--clear-groups", "--")
	}
	argv = append(append(argv, name), args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", argv...)
	cmd.Env = append(os.Environ(), m.Env()...)
	return cmd
}

// Log returns what the manager wrote so far.
func (m *Manager) Log() string {
	b, _ := os.ReadFile(m.LogFile)
	return string(b)
}

// HostCgroup returns the host path (in the cgroup2 hierarchy) of a cgroup path as the manager sees it,
// such as a scope's ControlGroup.
func (m *Manager) HostCgroup(managerPath string) string {
	return filepath.Join(m.CgroupV2, managerPath)
}

// teardown kills everything in the subtree, waits for it to empty, and removes all it made.
func (m *Manager) teardown(t testing.TB) {
	t.Helper()
	if err := killTree(m.CgroupV2); err != nil {
		t.Errorf("systemdtest: teardown: %v", err)
	}
	if m.PID != 0 {
		select {
		case <-m.done:
		case <-time.After(5 * time.Second):
			t.Errorf("systemdtest: teardown: manager %d did not exit", m.PID)
		}
	}
	for _, d := range m.subtrees() {
		if err := removeTree(d); err != nil {
			t.Errorf("systemdtest: teardown: LEFT BEHIND: %v", err)
		}
	}
	if m.base != "" {
		if err := os.RemoveAll(m.base); err != nil {
			t.Errorf("systemdtest: teardown: %v", err)
		}
	}
}
