package linux

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A real child: pinned, alive, signalled through the pidfd, seen to exit, then gone for every use.
func TestPidfdLifecycle(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := PidfdOpen(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal(err)
	}
	defer unix.Close(fd)
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := FdinfoPid(b); err != nil || pid != cmd.Process.Pid {
		t.Fatalf("fdinfo Pid = %d, %v; want %d", pid, err, cmd.Process.Pid)
	}
	if alive, err := PidfdAlive(fd); !alive || err != nil {
		t.Fatalf("PidfdAlive = %v, %v; want true", alive, err)
	}
	if exited, err := PidfdExited(fd, 0); exited || err != nil {
		t.Fatalf("PidfdExited of a sleeping child = %v, %v", exited, err)
	}
	if err := PidfdSignal(fd, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if exited, err := PidfdExited(fd, -1); !exited || err != nil {
		t.Fatalf("PidfdExited after SIGKILL = %v, %v", exited, err)
	}
	if alive, _ := PidfdAlive(fd); !alive {
		t.Fatal("an unreaped zombie reads as reaped")
	}
	_ = cmd.Wait()
	if alive, err := PidfdAlive(fd); alive || err != nil {
		t.Fatalf("PidfdAlive after the reap = %v, %v; want false, nil", alive, err)
	}
	if err := PidfdSignal(fd, syscall.SIGTERM); !errors.Is(err, unix.ESRCH) {
		t.Fatalf("signal after the reap: %v, want ESRCH", err)
	}
}
