package proc

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/affinity"
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

// Spawn gives the child Command.CPUs, whatever the calling thread was allowed.
func TestSpawnCPUs(t *testing.T) {
	own, err := affinity.Current()
	if err != nil {
		t.Fatal(err)
	}
	// The last CPU we may use, alone: a set that differs from ours whenever we have two or more.
	list := own.String()
	one, err := affinity.Parse(list[strings.LastIndexAny(list, ",-")+1:])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []affinity.Set{one, own} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := Spawn(Command{Path: "/bin/sh", Args: []string{"sh", "-c", "grep Cpus_allowed_list /proc/self/status"},
			Files: []*os.File{nil, w, w}, CPUs: want})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		r.Close()
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(strings.TrimPrefix(string(out), "Cpus_allowed_list:")); got != want.String() {
			t.Errorf("child allowed %q, want %q", got, want)
		}
	}
	if now, _ := affinity.Current(); !now.Equal(own) {
		t.Errorf("the test's own set changed to %s", now)
	}
}
