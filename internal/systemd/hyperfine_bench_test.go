package systemd_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// hyperfineEnv names the file of hyperfine arguments (one per line) that scripts/bench.sh hands to
// BenchmarkHyperfineAnchors.
const hyperfineEnv = "HLAUNCH_BENCH_HYPERFINE"

// sdPrefix in an argument is replaced by the nsenter prefix that enters the manager's cgroup and mount
// namespaces, so a command sees the manager's cgroup paths (hlaunch --scope systemd reads its scope's
// cgroup from /proc/<pid>/cgroup and opens it under its own cgroupfs mount).
const sdPrefix = "@SD@"

// BenchmarkHyperfineAnchors is scripts/bench.sh's one hyperfine run, started next to a private systemd
// user manager (systemdtest, the recipe in docs/testing.md) so that "systemd-run --user --scope" and
// "hlaunch exec --scope systemd" are measured in the same run as every other anchor. It is not a Go
// benchmark and skips unless HLAUNCH_BENCH_HYPERFINE is set; run it with -benchtime=1x.
//
// hyperfine itself is moved into the manager's clients leaf first (every hierarchy the manager uses), so
// each command it starts begins inside the manager's subtree (scopes may only adopt PIDs from there, see
// the systemdtest package doc) and the teardown reaches anything left behind. Commands that must talk to
// the manager carry @SD@, which becomes "nsenter -t <manager> --cgroup --mount --"; the file also asks
// for "nsenter ... /bin/true" as the anchor of that prefix's own cost.
func BenchmarkHyperfineAnchors(b *testing.B) {
	file := os.Getenv(hyperfineEnv)
	if file == "" {
		b.Skip("scripts/bench.sh sets " + hyperfineEnv + " to a file of hyperfine arguments; not a Go benchmark")
	}
	if _, err := exec.LookPath("hyperfine"); err != nil {
		b.Skip("hyperfine is not installed (apt-get install hyperfine)")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	m := systemdtest.Start(b)
	prefix := fmt.Sprintf("nsenter -t %d --cgroup --mount --", m.PID)
	args := []string{}
	for _, a := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		args = append(args, strings.ReplaceAll(a, sdPrefix, prefix))
	}
	// The wrapper shell writes its own PID into each clients leaf, then becomes hyperfine.
	const script = `for c in $HLB_CGROUPS; do echo $$ >"$c/cgroup.procs" || exit 125; done; exec "$@"`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "hyperfine-anchors", "hyperfine"}, args...)...)
	cmd.Env = append(append(os.Environ(), m.Env()...), "HLB_CGROUPS="+strings.Join(m.ClientCgroups(), " "))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	b.ResetTimer()
	if err := cmd.Run(); err != nil {
		b.Fatalf("hyperfine: %v\nmanager log:\n%s", err, m.Log())
	}
}
