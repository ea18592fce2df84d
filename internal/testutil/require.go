package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// InCI reports whether the tests run under CI (CI=true), where no test may skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Skip skips t saying why, or fails it under CI=true: there a test that cannot apply to the host must not
// have been run at all (scripts/guest/vm/hostkinds.sh decides that by name, before anything runs), so a
// skip is a defect of the lane, said loudly. With HLAUNCH_ALLOW_SKIP set it skips even under CI and leaves
// the exemption to scripts/test.sh, which matches that expression against the test's name.
func Skip(t testing.TB, why string) {
	t.Helper()
	if InCI() && os.Getenv("HLAUNCH_ALLOW_SKIP") == "" {
		t.Fatalf("cannot run here, and CI=true allows no skip: %s", why)
		return
	}
	t.Skip("skipping: " + why)
}

// RequireRoot skips t (fails it under CI=true) unless the test runs as root; why says what needs root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if euid := os.Geteuid(); euid != 0 {
		Skip(t, "needs root ("+why+"); euid is "+strconv.Itoa(euid))
	}
}

// Cgroup2 returns the mount point of the host's cgroup2 hierarchy - /sys/fs/cgroup/unified on a hybrid
// host, /sys/fs/cgroup on a pure v2 one - checked by its file system type. Without one it skips t (fails it
// under CI=true) naming both places it looked.
func Cgroup2(t testing.TB) string {
	t.Helper()
	if p := cgroup2Mount(); p != "" {
		return p
	}
	Skip(t, "no cgroup2 hierarchy at /sys/fs/cgroup/unified or /sys/fs/cgroup")
	return ""
}

// RequireCgroup2 is RequireRoot and Cgroup2: a test that creates cgroups in the v2 tree.
func RequireCgroup2(t testing.TB) string {
	t.Helper()
	RequireRoot(t, "it creates cgroups")
	return Cgroup2(t)
}

func cgroup2Mount() string {
	for _, p := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
				return p
			}
		}
	}
	return ""
}
