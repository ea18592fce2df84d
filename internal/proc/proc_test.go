package proc

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	plain := filepath.Join(dir, "data")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	cases := []struct {
		file, path string
		want       string
		code       int
	}{
		{"tool", other + ":" + dir, exe, 0},
		{"tool", dir, exe, 0},
		{exe, "", exe, 0},
		{"nope", dir, "", 127},
		{filepath.Join(dir, "nope"), dir, "", 127},
		{"data", dir, "", 126}, // found, not executable: EACCES, like a shell
		{plain, "", "", 126},
		{"sh", "", "", -1}, // empty PATH: DefaultPath (sh is found somewhere in it)
	}
	for _, c := range cases {
		got, err := LookPath(c.file, c.path)
		switch {
		case c.code == -1:
			if err != nil || filepath.Base(got) != "sh" {
				t.Errorf("LookPath(%q, %q) = %q, %v", c.file, c.path, got, err)
			}
		case c.code == 0:
			if err != nil || got != c.want {
				t.Errorf("LookPath(%q, %q) = %q, %v; want %q", c.file, c.path, got, err, c.want)
			}
		default:
			if err == nil || ExitCodeFor(err) != c.code {
				t.Errorf("LookPath(%q, %q) = %q, %v; want exit %d", c.file, c.path, got, err, c.code)
			}
		}
	}
}

func TestSpawnWaitSignal(t *testing.T) {
	p, err := Spawn(Command{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := p.Wait()
	if err != nil || ExitCode(ws) != 7 {
		t.Fatalf("exit: %v %v", ExitCode(ws), err)
	}
	// After the reap the PID may name anyone: Signal must refuse.
	if err := p.Signal(syscall.SIGKILL); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("signal after reap: %v", err)
	}
	p, err = Spawn(Command{Path: "/bin/sleep", Args: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ws, _ := p.Wait(); ExitCode(ws) != 128+15 {
		t.Fatalf("SIGTERM: exit %d", ExitCode(ws))
	}
	if _, err := Spawn(Command{Path: "/nonexistent/x", Args: []string{"x"}}); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("spawn missing: %v", err)
	}
}
