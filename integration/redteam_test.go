package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The red team (issue 15): attacks a hostile worker makes on purpose, from inside a real child, each
// kept as a test. The attacks that hold guard the boundary from now on; docs/security.md names them.

// A sandboxed worker can neither trace nor write into its init (PID 1 of its pid namespace, the
// hlaunch stub that reports its exit), write the kernel's tunables in /proc or /sys, nor open a device
// that is not one of the harmless few - with the system-call filter and without it, and as uid 0 (--as
// 0:0, no capabilities) too.
func TestRedteamSandboxKernelAndInit(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	checks := []string{"ptrace:1", "memopen:1", "openw:/proc/sys/kernel/core_pattern", "openw:/proc/sysrq-trigger",
		"openw:/sys/kernel/uevent_helper", "openw:/sys/kernel/profiling", "open:/dev/kmsg", "open:/dev/mem", "open:/dev/port"}
	for _, d := range []string{"/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/loop0"} {
		if _, err := os.Stat(d); err == nil {
			checks = append(checks, "open:"+d)
		}
	}
	// uid 0 without capabilities cannot enter a home of another owner's (0700): root's own, for --as 0:0.
	rootHome := newEnv(t)
	must(t, exec.Command("chown", "-R", "0:0", filepath.Join(rootHome.Root, "profiles", "b")).Run())
	for _, c := range []struct {
		e     *env
		flags []string
	}{
		{e, []string{"--sandbox", "--scope", "none"}},
		{e, []string{"--sandbox", "--scope", "none", "--seccomp", "off"}},
		{rootHome, []string{"--sandbox", "--scope", "none", "--seccomp", "off", "--as", "0:0"}},
		{rootHome, []string{"--sandbox", "--scope", "none", "--as", "0:0"}},
	} {
		flags := c.flags
		rep, _ := c.e.report(append([]string{"-p", "b"}, flags...), checks...)
		for _, c := range checks {
			if got := rep.Checks[c]; got == "ok" {
				t.Errorf("%v: %s worked from inside the sandbox", flags, c)
			}
		}
	}
	t.Run("unprivileged launcher", func(t *testing.T) {
		w := nobodyEnv(t)
		for _, extra := range [][]string{nil, {"--seccomp", "off"}} {
			args := append(append([]string{"exec", "-p", "b", "--sandbox", "--scope", "none"}, extra...), "--", selfBin, "child", "report")
			r := w.asNobody(append(args, checks...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			rep := decodeReport(t, r.Stdout)
			for _, c := range checks {
				if got := rep.Checks[c]; got == "ok" {
					t.Errorf("unprivileged launcher %v: %s worked from inside the sandbox", extra, c)
				}
			}
		}
	})
}
