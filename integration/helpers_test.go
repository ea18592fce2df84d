package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// hlaunchBin is the binary under test: $HLAUNCH_BIN, or one built by TestMain.
var hlaunchBin string

// selfBin is this test binary, which acts as the child when its first argument is "child".
var selfBin string

// hostBase is the test run's directory on the host's read-only rest (/opt/hlaunch-itest-<pid>-<start>-*,
// 0755; in the temporary directory for a run without root): selfBin lives there, and tests make the host
// directories a sandboxed worker must see (but not write) below it with os.MkdirTemp(hostBase, ...).
// /tmp, /var/tmp, /dev/shm and /run are private or covered inside a sandbox.
var hostBase string

// tmpBase is the test run's directory in the temporary directory ($TMPDIR/hlaunch-itmp-<pid>-<start>-*,
// 0755): what a test makes outside t.TempDir that a worker of another uid must reach or that must be
// short (a socket's path) goes below it, with os.MkdirTemp(tmpBase, ...), never directly in /tmp.
var tmpBase string

// The prefixes of hostBase and tmpBase. Their names carry the owning test process's tag
// (testutil.OwnedTempDir): a run that was killed leaves them behind, and the next run removes them.
const (
	hostBasePrefix = "hlaunch-itest-"
	tmpBasePrefix  = "hlaunch-itmp-"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		os.Exit(childMain(os.Args[2:]))
	}
	// Descriptors this test process inherited (a CI runner's, a shell's) must not reach what it starts:
	// the descriptor tests pass their leaks explicitly.
	_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	os.Exit(runMain(m))
}

// runMain removes what killed runs left, makes this run's directories, runs the tests and removes the
// directories again; it returns the exit code.
func runMain(m *testing.M) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// The child is a copy that any uid may execute, in a directory of the test run's own under /opt:
	// a sandbox's /tmp, /var/tmp, /dev/shm and /run are its own (and a home is covered), so the copy
	// must live on the host's read-only rest, in a place where nobody's sockets live (a socket the
	// tests plant next to it would otherwise share its directory with whatever the host keeps there).
	// A run as a user without root (the guest lane's alice and bob) cannot make a directory in /opt: its
	// tests start no sandboxed copy of the child, so the copy lives in the temporary directory.
	base := "/opt"
	if os.Geteuid() != 0 {
		base = os.TempDir()
	}
	if err := sweepLeftovers(base); err != nil {
		// Said, and not fatal: what stays is a killed run's, and this run does not depend on it.
		fmt.Fprintln(os.Stderr, "integration: leftovers of a killed run not removed:", err)
	}
	for _, d := range []struct {
		dir          *string
		base, prefix string
	}{{&hostBase, base, hostBasePrefix}, {&tmpBase, os.TempDir(), tmpBasePrefix}} {
		dir, err := testutil.OwnedTempDir(d.base, d.prefix)
		if err == nil {
			defer os.RemoveAll(dir)
			*d.dir = dir
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	selfBin = filepath.Join(hostBase, "child.test")
	if err := copyExecutable(self, selfBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	code, err := setupAndRun(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration setup:", err)
		return 2
	}
	return code
}

func setupAndRun(m *testing.M) (int, error) {
	hlaunchBin = os.Getenv("HLAUNCH_BIN")
	if hlaunchBin == "" {
		dir, err := os.MkdirTemp(tmpBase, "bin-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		hlaunchBin = filepath.Join(dir, "hlaunch")
		cmd := exec.Command("go", "build", "-o", dir+"/", "../cmd/hlaunch", "../cmd/hlaunch-sidecar")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as `make build` does
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("build hlaunch: %w", err)
		}
	} else if abs, err := filepath.Abs(hlaunchBin); err == nil {
		hlaunchBin = abs
	}
	before := defaultParents()
	code := m.Run()
	if left := newEntries(defaultParents(), before); len(left) > 0 && code == 0 && !systemdIsPID1() { // a guest's shipped units use the default on purpose
		// Every test places its workers under a parent of its own (env.Parent), removed after it; the
		// default parent of a launch without --cgroup-parent is the host's, and a test must not leave it.
		fmt.Fprintf(os.Stderr, "integration: the tests left the default cgroup parent behind (a launch without --cgroup-parent): %v\n", left)
		code = 1
	}
	return code, nil
}

// defaultParents lists the default cgroup parent (hlaunch) in every hierarchy where it exists now.
func defaultParents() []string {
	found, _ := filepath.Glob("/sys/fs/cgroup/hlaunch")
	more, _ := filepath.Glob("/sys/fs/cgroup/*/hlaunch")
	return append(found, more...)
}

// newEntries is what now holds that before did not.
func newEntries(now, before []string) []string {
	var out []string
	for _, p := range now {
		if !slices.Contains(before, p) {
			out = append(out, p)
		}
	}
	return out
}

func copyExecutable(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// requireRoot skips a test that needs root, saying so (testutil: under CI=true it fails instead).
func requireRoot(t testing.TB) {
	t.Helper()
	testutil.RequireRoot(t, "real cgroups, namespaces")
}

// requireCgroup2 returns the cgroup2 mount point (testutil.Cgroup2).
func requireCgroup2(t testing.TB) string {
	t.Helper()
	return testutil.Cgroup2(t)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// env is one hermes world for a test: a root with profiles, a state dir, and a cgroup parent of its own.
type env struct {
	t        *testing.T
	Root     string
	State    string
	Parent   string // cgroup parent, relative to every hierarchy root
	Launcher []string
}

// newEnv makes the hermes invariant world of docs/hermes-contract.md: launch profile A (the root's "a" profile,
// mirrored into the launcher's environment) and served profile B. Everything is removed at the end, and
// every cgroup under Parent is killed and removed, even when the test fails.
func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	// Before t.TempDir's own removal (cleanups run last first): after the cgroups' cleanup below, a shim
	// that had recorded its worker's end may still be writing its last files for a moment.
	t.Cleanup(func() { removeAllSettled(t, dir) })
	e := &env{t: t, Root: filepath.Join(dir, "hermes"), State: filepath.Join(dir, "state"), Parent: ownedParent(t)}
	// The path down to the homes is root's and searchable by all, as a hermes root is: an unsandboxed
	// worker runs as its home's owner and must reach its home (t.TempDir's directories are 0700).
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o755))
	must(t, os.MkdirAll(filepath.Join(e.Root, "profiles"), 0o755))
	e.profile("a", "A_MARKER=a\nHERMES_MODEL=a-model\nTERMINAL_ENV=docker\nFIRECRAWL_API_KEY=a-fc\n")
	e.profile("b", "B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\nGH_TOKEN=b-gh-tier1\n")
	must(t, os.WriteFile(filepath.Join(e.Root, ".env"), []byte("ROOT_MARKER=root\n"), 0o600))
	aHome := filepath.Join(e.Root, "profiles", "a")
	e.Launcher = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=/root", "LANG=C.UTF-8", "TERM=xterm",
		"HERMES_HOME=" + aHome, "A_MARKER=a", "HERMES_MODEL=a-model", "TERMINAL_ENV=docker",
		"FIRECRAWL_API_KEY=a-fc", "hermes_model=a-model-lc", "firecrawl_api_key=a-fc-lc",
		"OPENAI_API_KEY=ambient-only", "GITHUB_TOKEN=ambient-gh", "HLAUNCH_STATE_DIR=" + e.State,
	}
	t.Cleanup(func() { cleanupCgroups(t, e.Parent) })
	return e
}

// rootHomeEnv is newEnv with profile b's home (its .env too) root's: its unsandboxed worker runs as root,
// the uid of its shim, which it can then kill or stop, and writes where root may (a worker of a home of
// another owner runs as that owner: docs/security.md, "Privilege follows the profile").
func rootHomeEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	must(t, exec.Command("chown", "-R", "0:0", filepath.Join(e.Root, "profiles", "b")).Run())
	return e
}

// with returns e bound to t (a subtest), so failures are reported where they happen.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

func (e *env) profile(name, dotenv string) string {
	home := filepath.Join(e.Root, "profiles", name)
	for _, d := range []string{"cache/scratch", "home", "logs", "workspace"} {
		must(e.t, os.MkdirAll(filepath.Join(home, d), 0o700))
	}
	must(e.t, os.WriteFile(filepath.Join(home, ".env"), []byte(dotenv), 0o600))
	must(e.t, os.WriteFile(filepath.Join(home, "state.db"), []byte("state of "+name), 0o600))
	// Each profile belongs to a user of its own, as hermes homes do: a root launcher's sandboxed worker
	// runs as its home's owner (a home owned by root is refused without --as).
	if os.Geteuid() == 0 {
		uid := profileUID(name)
		must(e.t, filepath.WalkDir(home, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		}))
	}
	return home
}

// profileUID is the uid (and gid) that owns profile name's home in a test's hermes root: one without a
// passwd entry, so nothing on the host is it, and distinct for each profile.
func profileUID(name string) int { return 64100 + int(crc32.ChecksumIEEE([]byte(name))%800) }

// result is one finished hlaunch run.
type result struct {
	Code           int
	Stdout, Stderr string
}

// run runs hlaunch with the env's root and state dir and the launcher environment e.Launcher.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runCtx(context.Background(), nil, args...)
}

func (e *env) runCtx(ctx context.Context, stdin []byte, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	full := append([]string{"--root", e.Root, "--state-dir", e.State}, args...)
	cmd := exec.CommandContext(ctx, hlaunchBin, full...)
	cmd.Env = e.Launcher
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return runResult(e.t, cmd)
}

// runResult runs cmd and collects its exit code and output; a failure to start it fails the test.
func runResult(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

// report runs the child reporter through `hlaunch exec` and decodes what it saw.
func (e *env) report(execArgs []string, checks ...string) (childReport, result) {
	e.t.Helper()
	args := append([]string{"exec"}, execArgs...)
	args = append(args, "--", selfBin, "child", "report")
	args = append(args, checks...)
	r := e.run(args...)
	if r.Code != 0 {
		e.t.Fatalf("hlaunch %v: exit %d\nstderr: %s", args, r.Code, r.Stderr)
	}
	return decodeReport(e.t, r.Stdout), r
}

// decodeReport reads a child's report from its stdout.
func decodeReport(t testing.TB, stdout string) childReport {
	t.Helper()
	var rep childReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("child report: %v\n%s", err, stdout)
	}
	return rep
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mountEntry is one line of /proc/self/mountinfo: the mount point, its per-mount options, its fs type.
type mountEntry struct{ point, opts, fstype string }

// mounts parses /proc/self/mountinfo (nil when it cannot be read).
func mounts() []mountEntry {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 6 || sep+1 >= len(f) {
			continue
		}
		out = append(out, mountEntry{point: f[4], opts: f[5], fstype: f[sep+1]})
	}
	return out
}

// cgroupRoots are this host's hierarchy mount points (v2 and each v1).
func cgroupRoots() []string { return testutil.CgroupRoots() }

// cleanupCgroups kills everything under parent in every hierarchy and removes it bottom-up. It touches
// nothing outside parent, which the test created.
// removeAllSettled removes dir, again while something still writes into it (a shim ending just now),
// for at most 10 s; what is still there then fails the test.
func removeAllSettled(t testing.TB, dir string) {
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
	}
	t.Errorf("cleanup: %v", err)
}

func cleanupCgroups(t testing.TB, parent string) {
	if err := testutil.RemoveCgroups(parent); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// killDir kills the members of one cgroup directory (testutil.KillCgroup).
func killDir(dir string) { testutil.KillCgroup(dir) }
