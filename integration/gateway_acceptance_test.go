package integration

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestGatewayAcceptance runs clients/python/examples/acceptance.py, a gateway written on AsyncClient, against
// a real sidecar that this test restarts when the program asks (its control pipes): two profiles served at
// once with live logs, a cron worker across its gateway's SIGKILL, a kanban timeout with an escaped
// grandchild, stop after a sidecar restart, the typed errors, and a spawn whose answer a restart lost.
// Root places workers in raw cgroups under the test's parent, or in the system manager's scopes where
// systemd is PID 1 (the guest); another user (the guest's alice) in her own manager's (--scope auto).
func TestGatewayAcceptance(t *testing.T) {
	var extra []string
	switch {
	case os.Geteuid() != 0:
		extra = []string{"--scope", "auto"}
	case systemdIsPID1():
		extra = []string{"--scope", "systemd"}
	default:
		requireCgroup2(t)
	}
	e := newEnv(t)
	e.profile("c", "C_MARKER=c\n")
	dir := scSocketDir(t)
	sock := filepath.Join(dir, "s.sock")
	scClientDir(t, dir)
	must(t, os.Chmod(dir, 0o755)) // the workers reach work/ through it
	work := filepath.Join(dir, "work")
	must(t, os.Mkdir(work, 0o755))
	must(t, os.Chmod(work, 0o1777)) // the workers run as their homes' owners
	prog, err := filepath.Abs(filepath.Join("..", "clients", "python", "examples", "acceptance.py"))
	must(t, err)

	var mu sync.Mutex
	p := startSidecarProc(t, e, sock, extra...)
	current := func() *scProc { mu.Lock(); defer mu.Unlock(); return p }
	// Whatever the program left running (it failed half-way) is stopped through the sidecar: under
	// --scope systemd and auto its scopes are not under the env's parent. A defer, so that it runs while
	// the newest sidecar still serves (each start's t.Cleanup stops that one).
	defer func() { scStopAll(current()) }()
	cmdR, cmdW, err := os.Pipe()
	must(t, err)
	ackR, ackW, err := os.Pipe()
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, scPython(t), prog, sock, work, e.Root, "3", "4")
	cmd.Env = []string{"PYTHONPATH=" + dir, "PATH=/usr/bin:/bin"}
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{cmdW, ackR}
	must(t, cmd.Start())
	cmdW.Close()
	ackR.Close()
	served := make(chan struct{})
	go func() { // the program's requests; it ends when the program closes its end
		defer close(served)
		defer ackW.Close()
		sc := bufio.NewScanner(cmdR)
		for sc.Scan() {
			q := current()
			cmd, arg, _ := strings.Cut(sc.Text(), " ")
			switch cmd {
			case "stop":
				_ = q.cmd.Process.Signal(syscall.SIGSTOP)
			case "stop-at-key":
				if !scStopAtKey(t, q, filepath.Join(e.State, "sidecar-keys"), arg) {
					return
				}
			case "kill":
				q.kill9()
			case "restart":
				q.kill9()
				fallthrough
			case "start":
				// t.Fatal is for the test's goroutine: a start that fails is reported and the program
				// sees the sidecar missing.
				q = startSidecarProcTry(t, e, sock, extra...)
				if q == nil {
					return
				}
				mu.Lock()
				p = q
				mu.Unlock()
			default:
				t.Errorf("acceptance.py asked for %q", sc.Text())
				return
			}
			if _, err := ackW.WriteString("ok\n"); err != nil {
				return
			}
		}
	}()
	err = cmd.Wait()
	cmdR.Close()
	<-served
	t.Logf("acceptance.py:\n%s", out.String())
	if err != nil {
		t.Fatalf("acceptance.py: %v", err)
	}
	passed := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "ok ") {
			passed++
		}
	}
	if passed != 6 {
		t.Fatalf("acceptance.py passed %d of 6 checks", passed)
	}
	if recs := current().list(); len(recs) > 0 {
		for _, r := range recs {
			if r.State == "running" {
				b, _ := json.Marshal(r)
				t.Errorf("a worker still runs after the program: %s", b)
			}
		}
	}
	if os.Geteuid() == 0 && extra == nil {
		// A shim moves itself into the parent's exit leaf once its worker's tree has ended and its end is
		// recorded, and exits a moment later: the last stopped worker's shim may still be there. Anything
		// else under the parent, or a shim that stays there, is left behind.
		v2, finishing := requireCgroup2(t), filepath.Join("/", e.Parent, cgroup.ExitLeaf)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			cgs := scCgroupsWithProcs(t, v2, e.Parent)
			if len(cgs) == 0 {
				break
			}
			if _, ok := cgs[finishing]; !ok || len(cgs) > 1 || time.Now().After(deadline) {
				t.Errorf("processes left under the test's parent: %v", cgs)
				break
			}
		}
	}
}

// scStopAll stops every running worker of the sidecar q, which it first continues (the program may have
// stopped it); errors are ignored: it is a cleanup after a failure.
func scStopAll(q *scProc) {
	select {
	case <-q.done:
		return
	default:
	}
	_ = q.cmd.Process.Signal(syscall.SIGCONT)
	_, b := q.do("GET", "/v1/workers", "")
	var recs []receipt
	_ = json.Unmarshal(b, &recs)
	for _, r := range recs {
		if r.State == "running" {
			q.do("POST", "/v1/workers/"+r.ID+"/stop", `{"grace":"1s"}`)
		}
	}
}

// scStopAtKey SIGSTOPs the sidecar q as soon as it has written down Idempotency-Key key in dir (its
// sidecar-keys directory: it does so after reading the request, before the launch); false after a minute.
// The key is the test's uid's own, as the gateway program runs as the test's uid.
func scStopAtKey(t *testing.T, q *scProc, dir, key string) bool {
	h := sha256.Sum256(fmt.Appendf(nil, "%d:%s", os.Geteuid(), key))
	entry := filepath.Join(dir, hex.EncodeToString(h[:16])+".json")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Microsecond) {
		if _, err := os.Stat(entry); err == nil {
			return q.cmd.Process.Signal(syscall.SIGSTOP) == nil
		}
	}
	t.Errorf("the sidecar did not write down key %q within a minute", key)
	return false
}

// startSidecarProcTry is startSidecarProc for a goroutine other than the test's: it returns nil (and
// reports the error) instead of failing the test with t.Fatal.
func startSidecarProcTry(t *testing.T, e *env, sock string, extra ...string) (p *scProc) {
	done := make(chan struct{})
	go func() { // t.Fatal ends only this goroutine
		defer close(done)
		p = startSidecarProc(t, e, sock, extra...)
	}()
	<-done
	return p
}

// systemdIsPID1 reports whether systemd runs this host (PID 1, with its runtime directory): the guest, not
// the build machine's container.
func systemdIsPID1() bool {
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		return false
	}
	comm, err := os.ReadFile("/proc/1/comm")
	return err == nil && strings.TrimSpace(string(comm)) == "systemd"
}
