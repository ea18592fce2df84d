package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hlaunch/hlaunch/fingerprint"
)

// mintToken makes a verified token for pid in cgroup cg (relative to the v2 root) with the public codec,
// as any local user could: the token codec has no secret in it.
func mintToken(t *testing.T, v2root string, pid int, cg string) string {
	t.Helper()
	id := fingerprint.Capture(fingerprint.Sources{CgroupRoot: v2root}, pid, cg)
	if id.Unverified {
		t.Fatalf("minting a token for pid %d in %s: %s", pid, cg, id.Reason)
	}
	return id.Token()
}

// strangerIn starts `sleep 300` (not hlaunch's) in the v2 cgroup dir, which the test made.
func strangerIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	c := exec.Command("sleep", "300")
	must(t, c.Start())
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(c.Process.Pid)), 0o644))
	return c
}

// Class 7: a token is no authority of its own. Tokens minted (the codec is public) for a parent of
// workers, for a cgroup hlaunch never made, for a marked directory that is not a worker's own, tampered
// from a real worker's token, or carried to another state directory, verify against the live system; each
// must get zero signals and exit 3 (a changed character: 125). On the old code `stop` with the parent's
// token killed every worker under it.
func TestHostileMintedTokens(t *testing.T) {
	requireRoot(t)
	v2root := requireCgroup2(t)
	e := newEnv(t)
	sub := e.Parent + "/sub"
	// The victim counts SIGUSR1s and exits 10+count on SIGTERM: its exit code tells what reached it.
	rc := e.detach([]string{"--scope", "cgroup", "--cgroup-parent", sub}, selfBin, "child", "countsig")
	if rc.Cgroup != "/"+sub+"/"+rc.ID {
		t.Fatalf("receipt cgroup %q, want /%s/%s", rc.Cgroup, sub, rc.ID)
	}
	// A cgroup the test made without hlaunch's mark, named like a worker, and a marked directory inside
	// the worker's own cgroup (marked by the test as root: no worker of hlaunch's could).
	foreignCg := "/" + e.Parent + "/w-0123456789ab"
	foreign := strangerIn(t, filepath.Join(v2root, foreignCg))
	innerCg := rc.Cgroup + "/inner"
	inner := strangerIn(t, filepath.Join(v2root, innerCg))
	must(t, syscall.Setxattr(filepath.Join(v2root, innerCg), "trusted.hlaunch", []byte("1"), 0))

	// A tampered token: the worker's own, re-pointed at its parent, with a correct checksum.
	ident, err := fingerprint.ParseToken(rc.Token)
	must(t, err)
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(v2root, sub), &st))
	ident.Cgroup, ident.CgroupID = "/"+sub, st.Ino
	tampered := ident.Token()
	flipped := []byte(rc.Token)
	if flipped[20] == 'A' {
		flipped[20] = 'B'
	} else {
		flipped[20] = 'A'
	}

	other := filepath.Join(t.TempDir(), "other-state")
	cases := []struct {
		name  string
		token string
		state string
		want  int
	}{
		{"parent of workers", mintToken(t, v2root, rc.PID, "/"+sub), "", 3},
		{"top parent", mintToken(t, v2root, rc.PID, "/"+e.Parent), "", 3},
		{"unmarked cgroup", mintToken(t, v2root, foreign.Process.Pid, foreignCg), "", 3},
		{"marked, not a worker's own", mintToken(t, v2root, inner.Process.Pid, innerCg), "", 3},
		{"tampered, checksum fixed", tampered, "", 3},
		{"one character changed", string(flipped), "", 125},
		{"another state directory", rc.Token, other, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pre := []string{}
			if c.state != "" {
				pre = []string{"--state-dir", c.state}
			}
			for _, args := range [][]string{
				{"signal", "-s", "USR1", c.token},
				{"signal", "--all", "-s", "USR1", c.token},
				{"stop", "--grace", "100ms", c.token},
			} {
				r := e.with(t).run(append(pre, args...)...)
				if r.Code != c.want {
					t.Errorf("%s: exit %d, want %d (stderr %q)", args[0], r.Code, c.want, r.Stderr)
				}
				if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n != 0 {
					t.Errorf("%s: the refusal is %d lines, want one: %q", args[0], n+1, r.Stderr)
				}
			}
			for _, p := range []int{rc.PID, foreign.Process.Pid, inner.Process.Pid} {
				if !alive(p) {
					t.Fatalf("pid %d died from a minted token", p)
				}
			}
		})
	}
	// The worker's own id still works, and the worker heard nothing before: SIGTERM alone, exit 10.
	must(t, syscall.Kill(inner.Process.Pid, syscall.SIGKILL)) // the test's own stranger in the worker's cgroup
	_, _ = inner.Process.Wait()
	if r := e.run("stop", "--grace", "5s", rc.ID); r.Code != 0 {
		t.Fatalf("stop by id: %d %s", r.Code, r.Stderr)
	}
	end, _ := e.record(rc.ID)
	if end.ExitCode == nil || *end.ExitCode != 10 {
		t.Fatalf("the worker's exit %v (signal %q): want 10, no SIGUSR1 ever reached it", end.ExitCode, end.Signal)
	}
}
