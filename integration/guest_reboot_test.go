//go:build guest

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// The guest lane's reboot (scripts/guest/vm/sections.sh): TestGuestRebootIssue runs in the guest's
// first boot and keeps a worker's receipt on disk; the guest reboots; TestGuestRebootRefused runs in the
// second boot, puts a stranger at the worker's PID, and checks that the token verifies as foreign-boot
// and signals nothing. Both are built only into the guest's test binary (build tag guest) and run only by
// the lane, in that order.

// rebootDir survives the reboot (the guest's own disk, not a test's temporary directory).
const rebootDir = "/var/lib/vmtest/reboot"

// rebootEnv is an env whose root and state live in rebootDir, so that the second boot finds them.
func rebootEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, Root: filepath.Join(rebootDir, "hermes"), State: filepath.Join(rebootDir, "state"), Parent: "hlaunch-test-reboot"}
	e.Launcher = []string{"PATH=" + os.Getenv("PATH"), "HOME=/root", "LANG=C.UTF-8", "HLAUNCH_STATE_DIR=" + e.State}
	return e
}

func TestGuestRebootIssue(t *testing.T) {
	must(t, os.RemoveAll(rebootDir))
	e := rebootEnv(t)
	// The path down to the home searchable, as newEnv makes it: the worker runs as the home's owner.
	must(t, os.MkdirAll(filepath.Join(e.Root, "profiles"), 0o755))
	e.profile("b", "B_MARKER=b\n")
	var out []receipt
	// One worker per placement this host offers: a systemd scope (auto picks it here) and a raw cgroup.
	for _, flags := range [][]string{{"--scope", "auto"}, {"--scope", "cgroup", "--cgroup-parent", e.Parent}} {
		rc := e.detach(flags, "sleep", "100000")
		if rc.Token == "" || rc.BootID == "" {
			t.Fatalf("%v: receipt without token or boot id: %+v", flags, rc)
		}
		out = append(out, rc)
	}
	b, err := json.Marshal(out)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rebootDir, "receipts.json"), b, 0o600))
}

func TestGuestRebootRefused(t *testing.T) {
	e := rebootEnv(t)
	t.Cleanup(func() { cleanupCgroups(t, e.Parent) })
	b, err := os.ReadFile(filepath.Join(rebootDir, "receipts.json"))
	if err != nil {
		t.Fatalf("no receipts from the first boot (did TestGuestRebootIssue run?): %v", err)
	}
	var rcs []receipt
	must(t, json.Unmarshal(b, &rcs))
	if len(rcs) == 0 {
		t.Fatal("no receipts from the first boot")
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	must(t, err)
	for _, rc := range rcs {
		t.Run(rc.Mode, func(t *testing.T) {
			e := e.with(t)
			if rc.BootID+"\n" == string(boot) {
				t.Fatalf("the guest did not reboot: boot id %s is unchanged", rc.BootID)
			}
			stranger := strangerAt(t, rc.PID)
			rec, r := e.record(rc.Token)
			if rec.State != "foreign-boot" || r.Code != 3 {
				t.Errorf("status of a token from the last boot: state %q exit %d (%s)", rec.State, r.Code, r.Stderr)
			}
			for _, args := range [][]string{{"signal", "-s", "KILL", rc.Token}, {"signal", "--all", "-s", "KILL", rc.Token}, {"stop", "--grace", "100ms", rc.Token}, {"stop", "--grace", "100ms", rc.ID}} {
				if r := e.run(args...); r.Code != 3 {
					t.Errorf("%v: exit %d, want 3 (%s)", args, r.Code, r.Stderr)
				}
			}
			if !alive(stranger.Process.Pid) {
				t.Fatal("the stranger at the last boot's worker PID was signalled")
			}
		})
	}
}

// strangerAt starts an unrelated process at PID pid (ns_last_pid in the guest's own PID namespace;
// other forks can take the PID first, so it tries a bounded number of times).
func strangerAt(t *testing.T, pid int) *exec.Cmd {
	t.Helper()
	for try := 0; try < 200; try++ {
		must(t, os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0))
		cmd := exec.Command("sleep", "300")
		must(t, cmd.Start())
		if cmd.Process.Pid == pid {
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return cmd
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("could not start a stranger at PID %d", pid)
	return nil
}
