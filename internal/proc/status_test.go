package proc

import (
	"os"
	"syscall"
	"testing"
)

// A child that reports a status through ReportedBy's pipe has that status returned by Wait in place of its
// own; one that reports nothing keeps its own; a short write is no report.
func TestWaitReportedStatus(t *testing.T) {
	cases := []struct {
		name, script string
		signaled     bool
		sig          syscall.Signal
		code         int
	}{
		{"reports SIGKILL, exits 137", `printf '\000\000\000\011' >&3; exit 137`, true, syscall.SIGKILL, 0},
		{"reports exit 3, exits 0", `printf '\000\000\003\000' >&3`, false, 0, 3},
		{"reports nothing", `exit 137`, false, 0, 137},
		{"short report", `printf '\000\011' >&3; exit 5`, false, 0, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			p, err := Spawn(Command{Path: "/bin/sh", Args: []string{"sh", "-c", c.script}, Files: []*os.File{nil, os.Stderr, os.Stderr, w}})
			w.Close()
			if err != nil {
				r.Close()
				t.Fatal(err)
			}
			p.ReportedBy(r)
			ws, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if ws.Signaled() != c.signaled || (c.signaled && ws.Signal() != c.sig) || (!c.signaled && ws.ExitStatus() != c.code) {
				t.Fatalf("Wait: signaled=%v signal=%v exit=%d, want signaled=%v signal=%v exit=%d", ws.Signaled(), ws.Signal(), ws.ExitStatus(), c.signaled, c.sig, c.code)
			}
		})
	}
}

// WriteStatus and readStatus agree on every status a child can end with, a core dump's bit included.
func TestStatusRoundTrip(t *testing.T) {
	for _, ws := range []syscall.WaitStatus{0, 137 << 8, 9, 11 | 0x80, 15, 255 << 8} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteStatus(w, ws); err != nil {
			t.Fatal(err)
		}
		w.Close()
		got, ok := readStatus(r)
		r.Close()
		if !ok || got != ws {
			t.Errorf("status %#x: read back %#x, ok %v", uint32(ws), uint32(got), ok)
		}
	}
}
