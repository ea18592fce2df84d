package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// end is how a worker ended, as its record says it: an exit code or a signal, never both.
type end struct {
	Code   int    // -1: none (a signal ended it)
	Signal string // "": none
}

func (d end) String() string {
	if d.Signal != "" {
		return "signal " + d.Signal
	}
	return fmt.Sprintf("exit %d", d.Code)
}

func recEnd(code *int, signal string) end {
	d := end{Code: -1, Signal: signal}
	if code != nil {
		d.Code = *code
	}
	return d
}

// sameEnds are the ends a gateway must tell apart: a target killed by a signal (by itself, as a crash or
// a kill(2) of its own) and one that ran `exit 137`. Each is the target's own end, from inside it.
var sameEnds = []struct {
	name  string
	argv  []string
	want  end
	shell int // the foreground exit, as a shell gives it
}{
	{"exit 137", []string{"/bin/sh", "-c", "exit 137"}, end{Code: 137}, 137},
	{"SIGKILL", []string{"/bin/sh", "-c", "kill -KILL $$"}, end{Code: -1, Signal: "SIGKILL"}, 128 + 9},
	{"SIGTERM", []string{"/bin/sh", "-c", "kill -TERM $$"}, end{Code: -1, Signal: "SIGTERM"}, 128 + 15},
	{"SIGSEGV", []string{"/bin/sh", "-c", "ulimit -c 0; kill -SEGV $$"}, end{Code: -1, Signal: "SIGSEGV"}, 128 + 11},
}

// The same end of the target gives the same record, sandboxed or not: a sandbox's init reports the
// target's wait status, so a SIGKILL is recorded as `signal: SIGKILL` and never as the init's `exit 137`.
// Through the CLI: the foreground exit (128+N for a signal either way), the detached record of `wait`,
// `status` and the ledger's record.
func TestSameEndSameRecordCLI(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	cg := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent}
	modes := map[string][]string{"plain": cg, "sandbox": append([]string{"--sandbox"}, cg...)}
	for _, c := range sameEnds {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			for mode, flags := range modes {
				args := append(append([]string{"exec", "-p", "b"}, flags...), "--")
				if r := e.run(append(args, c.argv...)...); r.Code != c.shell {
					t.Errorf("%s foreground: exit %d, want %d (%s)", mode, r.Code, c.shell, r.Stderr)
				}
				rc := e.detach(flags, c.argv...)
				r := e.run("wait", "--json", "--timeout", "60s", rc.ID)
				var rec receipt
				if err := json.Unmarshal([]byte(r.Stdout), &rec); err != nil {
					t.Fatalf("%s wait: %v %q %q", mode, err, r.Stdout, r.Stderr)
				}
				if got := recEnd(rec.ExitCode, rec.Signal); got != c.want {
					t.Errorf("%s detached, wait: %v, want %v", mode, got, c.want)
				}
				st, _ := e.record(rc.ID)
				if got := recEnd(st.ExitCode, st.Signal); got != c.want {
					t.Errorf("%s detached, status: %v, want %v", mode, got, c.want)
				}
				found := false
				for _, l := range e.ledger() {
					if l.ID != rc.ID {
						continue
					}
					found = true
					if got := recEnd(l.ExitCode, l.Signal); got != c.want {
						t.Errorf("%s detached, ledger: %v, want %v", mode, got, c.want)
					}
				}
				if !found {
					t.Errorf("%s detached: no ledger record of %s", mode, rc.ID)
				}
			}
		})
	}
}

// A signal from outside, forwarded by the init: `hlaunch signal -s TERM` ends a sandboxed `sleep` as it
// ends an unsandboxed one, and both records say SIGTERM.
func TestSameEndSameRecordSignalled(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	cg := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent}
	for _, flags := range [][]string{cg, append([]string{"--sandbox"}, cg...)} {
		rc := e.detach(flags, "sleep", "300")
		if r := e.run("signal", "-s", "TERM", rc.ID); r.Code != 0 {
			t.Fatalf("%v signal: %d %s", flags, r.Code, r.Stderr)
		}
		r := e.run("wait", "--json", "--timeout", "60s", rc.ID)
		var rec receipt
		must(t, json.Unmarshal([]byte(r.Stdout), &rec))
		if got, want := recEnd(rec.ExitCode, rec.Signal), (end{Code: -1, Signal: "SIGTERM"}); got != want {
			t.Errorf("%v: %v, want %v", flags, got, want)
		}
	}
}

// Through a real sidecar: the wait answer and the exited event of each end are equal, sandboxed or not.
func TestSameEndSameRecordSidecar(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	want := map[string]end{}
	for _, c := range sameEnds {
		for _, sandbox := range []bool{false, true} {
			spec, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": sandbox, "argv": c.argv})
			var rc receipt
			p.mustDo("POST", "/v1/workers", string(spec), 201, &rc)
			var rec receipt
			p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, &rec)
			if got := recEnd(rec.ExitCode, rec.Signal); got != c.want {
				t.Errorf("%s (sandbox %v), wait: %v, want %v", c.name, sandbox, got, c.want)
			}
			want[rc.ID] = c.want
		}
	}
	seen := 0
	for _, ev := range p.events("?since=0", 2*len(want), 30*time.Second) {
		if ev.Type != "exited" {
			continue
		}
		seen++
		if got := recEnd(ev.ExitCode, ev.Signal); got != want[ev.ID] {
			t.Errorf("exited event of %s: %v, want %v", ev.ID, got, want[ev.ID])
		}
	}
	if seen != len(want) {
		t.Errorf("%d exited events, want %d", seen, len(want))
	}
}
