package integration

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// throwawayUserPrefix starts the name of each user a test adds (throwawayUser): "hlt<pid>-<start>-<hex>",
// with the owner tag of the test process, so that the users of a killed run are removed by the next one.
const throwawayUserPrefix = "hlt"

// sweepLeftovers removes what integration runs that were killed (no cleanup ran) left behind: their
// hostBase in base, their tmpBase, and as root their cgroup parents (newEnv's) with what still runs in
// them, and the throwaway users they added. What a live run owns stays.
func sweepLeftovers(base string) error {
	var errs []error
	for _, d := range [][2]string{{base, hostBasePrefix}, {os.TempDir(), tmpBasePrefix}} {
		removed, err := testutil.SweepStale(d[0], d[1])
		errs = append(errs, err)
		for _, p := range removed {
			fmt.Fprintln(os.Stderr, "integration: removed", p, "(its test run is gone)")
		}
	}
	if os.Geteuid() == 0 {
		removed, err := testutil.SweepStaleCgroups(testutil.CgroupParentPrefix)
		for _, p := range removed {
			fmt.Fprintln(os.Stderr, "integration: removed cgroup", p, "(its test run is gone)")
		}
		errs = append(errs, err, sweepUsers())
	}
	return errors.Join(errs...)
}

// sweepUsers deletes each throwaway user (and its group) of a test process that no longer runs.
func sweepUsers() error {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return err
	}
	defer f.Close()
	var errs []error
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), ":")
		if !testutil.Stale(name, throwawayUserPrefix) {
			continue
		}
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("userdel %s: %w: %s", name, err, out))
			continue
		}
		fmt.Fprintln(os.Stderr, "integration: removed user", name, "(its test run is gone)")
	}
	return errors.Join(append(errs, sc.Err())...)
}

// throwawayUserName is a new name for a throwaway user, carrying this test process's owner tag.
func throwawayUserName(t *testing.T) string {
	t.Helper()
	tag, err := testutil.OwnerTag()
	must(t, err)
	return throwawayUserPrefix + tag + "-" + randHex(2)
}

// ownedParent is a new cgroup parent name for an env, hlaunch-test-<owner tag>-<hex> (testutil.OwnedName),
// for the sweep of a later run to remove if this one is killed. The env removes it at the end.
func ownedParent(t *testing.T) string {
	t.Helper()
	p, err := testutil.OwnedName(testutil.CgroupParentPrefix)
	must(t, err)
	return p
}
