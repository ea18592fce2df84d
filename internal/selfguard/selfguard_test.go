package selfguard

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestHideEmptiesEnviron: after Hide a process's /proc/<pid>/environ shows none of its variables (to root:
// blanked) or is closed (to others), while its own os.Getenv still answers. The process is a re-executed copy
// of this test binary, which reports what its parent reads of it.
func TestHideEmptiesEnviron(t *testing.T) {
	if os.Getenv("SELFGUARD_CHILD") == "1" {
		if err := Hide(); err != nil {
			os.Exit(3)
		}
		if os.Getenv("SELFGUARD_SECRET") != "s3cret" {
			os.Exit(4)
		}
		os.Stdout.WriteString("ready\n")
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHideEmptiesEnviron$")
	cmd.Env = []string{"SELFGUARD_CHILD=1", "SELFGUARD_SECRET=s3cret"}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
	if strings.Contains(string(b), "s3cret") {
		t.Errorf("/proc/<pid>/environ after Hide shows the secret: %q", b)
	}
	if os.Geteuid() == 0 && (err != nil || strings.Trim(string(b), "\x00") != "") {
		t.Errorf("root reading /proc/<pid>/environ after Hide: %q %v, want only NULs", b, err)
	}

}
