package fingerprint

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func mustCapture(t *testing.T, src Sources, pid int, cg string) Identity {
	t.Helper()
	id := CaptureChild(src, pid, cg)
	if id.Unverified {
		t.Fatalf("CaptureChild(%d, %s) unverified: %s", pid, cg, id.Reason)
	}
	return id
}

func requireVerdict(t *testing.T, src Sources, id Identity, want State) Verdict {
	t.Helper()
	v, err := Verify(src, id)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if v.State != want {
		t.Fatalf("Verify = %v, want %s", v, want)
	}
	if strings.ContainsAny(v.Reason, "\n\r") || v.Reason == "" {
		t.Fatalf("Verify reason %q is not one line", v.Reason)
	}
	return v
}

// requireRefused checks that Authorize refuses with no handle and an error of the given kind.
func requireRefused(t *testing.T, src Sources, id Identity, want State, kind error) {
	t.Helper()
	h, v, err := Authorize(src, id)
	var re *RefusalError
	if h != nil || v.State != want || !errors.As(err, &re) || !errors.Is(err, kind) {
		t.Fatalf("Authorize = %v, %v, %v; want nil handle, %s, %v", h, v, err, want, kind)
	}
}

func TestKernelCaptureVerifySigterm(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	p := tr.start(w, "sleep", "1000")
	src := tr.src()

	id := mustCapture(t, src, p.pid, w)
	f, _ := os.Open("/proc/" + strconv.Itoa(p.pid) + "/stat")
	start, err := ReadStartTime(f)
	f.Close()
	var st unix.Stat_t
	if err := unix.Stat(tr.path(w), &st); err != nil {
		t.Fatal(err)
	}
	if err != nil || id.Start != start || id.CgroupID != st.Ino || id.Cgroup != w || id.PID != p.pid || id.BootID == "" || id.MachineID == "" {
		t.Fatalf("captured %+v; want start %d, cgroup id %d", id, start, st.Ino)
	}
	parsed, err := ParseToken(id.Token())
	if err != nil || parsed != id {
		t.Fatalf("token round trip: %+v, %v", parsed, err)
	}
	requireVerdict(t, src, parsed, Running)

	h, v, err := Authorize(src, parsed)
	if err != nil || h == nil || v.State != Running || !h.LeaderPinned() {
		t.Fatalf("Authorize = %v, %v, %v", h, v, err)
	}
	defer h.Close()
	if pop, err := h.Populated(); err != nil || !pop {
		t.Fatalf("Populated = %v, %v", pop, err)
	}
	if err := h.SignalLeader(syscall.SIGTERM); err != nil {
		t.Fatalf("SignalLeader: %v", err)
	}
	p.requireKilledBy(t, syscall.SIGTERM)
	if err := h.WaitEmpty(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("WaitEmpty: %v", err)
	}
	if pop, err := h.Populated(); err != nil || pop {
		t.Fatalf("Populated after exit = %v, %v", pop, err)
	}
	if err := h.SignalLeader(syscall.SIGTERM); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("SignalLeader after exit = %v, want ErrNotRunning", err)
	}
	requireVerdict(t, src, parsed, Exited)
	requireRefused(t, src, parsed, Exited, ErrNotRunning)
	if err := os.Remove(tr.path(w)); err != nil {
		t.Fatal(err)
	}
	requireVerdict(t, src, parsed, Exited)
	if err := h.SignalAll(ctxT(t, time.Second), syscall.SIGKILL); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("SignalAll on a removed cgroup = %v, want ErrNotRunning", err)
	}
}

func TestKernelForeignBootAndMachineSendNothing(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	p := tr.start(w, "sleep", "1000")
	src := tr.src()
	id := mustCapture(t, src, p.pid, w)

	otherBoot := src
	otherBoot.BootID = fixed("00000000-1111-2222-3333-444444444444")
	otherMachine := src
	otherMachine.MachineID = fixed("ffffffffffffffffffffffffffffffff")
	otherPID1 := id
	otherPID1.PID1Start++
	// Same PID, same start tick, other boot id: hermes' exact failure, must be foreign.
	for _, c := range []struct {
		name string
		src  Sources
		id   Identity
		want State
	}{
		{"other boot id", otherBoot, id, ForeignBoot},
		{"other machine id", otherMachine, id, ForeignMachine},
		{"other pid 1 start", src, otherPID1, ForeignBoot},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireVerdict(t, c.src, c.id, c.want)
			requireRefused(t, c.src, c.id, c.want, ErrRefused)
			fp := c.id.Fingerprint()
			if c.want == ForeignBoot {
				if v, err := VerifyHermes(c.src, p.pid, fp); err != nil || v.State != ForeignBoot {
					t.Fatalf("VerifyHermes = %v, %v", v, err)
				}
				if h, _, err := AuthorizeHermes(c.src, p.pid, fp); h != nil || !errors.Is(err, ErrRefused) {
					t.Fatalf("AuthorizeHermes = %v, %v", h, err)
				}
			}
			p.requireAlive(t)
		})
	}
	requireVerdict(t, src, id, Running)
}

func TestKernelRecreatedCgroupIsRecycled(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	p := tr.start(w, "sleep", "1000")
	src := tr.src()
	id := mustCapture(t, src, p.pid, w)
	old, _, err := Authorize(src, id)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	tr.kill(w)
	p.requireKilledBy(t, syscall.SIGKILL)
	if err := os.Remove(tr.path(w)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tr.path(w), 0o755); err != nil {
		t.Fatal(err)
	}
	v := requireVerdict(t, src, id, Recycled) // empty, but not the recorded cgroup
	if !strings.Contains(v.Reason, "re-created") {
		t.Fatalf("reason %q", v.Reason)
	}
	stranger := tr.start(w, "sleep", "1000")
	requireVerdict(t, src, id, Recycled)
	requireRefused(t, src, id, Recycled, ErrRefused)
	// A handle pinned before the removal reaches the old cgroup only, never the new one.
	if err := old.SignalAll(ctxT(t, 5*time.Second), syscall.SIGKILL); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("old handle SignalAll = %v, want ErrNotRunning", err)
	}
	if err := old.SignalAll(ctxT(t, 5*time.Second), syscall.SIGTERM); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("old handle SignalAll = %v, want ErrNotRunning", err)
	}
	stranger.requireAlive(t)
}

func TestKernelCaptureFailureIsNeverSignalled(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	p := tr.start(w, "sleep", "1000")
	src := tr.src()
	failing := src
	failing.BootID = func() (string, error) { return "", errors.New("injected boot id failure") }
	noMachine := src
	noMachine.MachineID = fixed("uninitialized")

	dead := tr.start(w, "true")
	dead.requireKilledBy0(t)

	for _, c := range []struct {
		name, cgroup, reason string
		src                  Sources
		pid                  int
	}{
		{"boot id failure", w, "injected boot id failure", failing, p.pid},
		{"machine id uninitialized", w, "machine id", noMachine, p.pid},
		{"no such cgroup", tr.rel + "/missing", "cgroup", src, p.pid},
		{"hierarchy root", "/", "hierarchy root", src, p.pid},
		{"dead pid", w, "pidfd_open", src, dead.pid},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := CaptureChild(c.src, c.pid, c.cgroup)
			if !id.Unverified || !strings.Contains(id.Reason, c.reason) {
				t.Fatalf("Capture = %+v, want unverified mentioning %q", id, c.reason)
			}
			if id.Fingerprint() != "unverified" {
				t.Fatalf("Fingerprint = %q", id.Fingerprint())
			}
			parsed, err := ParseToken(id.Token())
			if err != nil || !parsed.Unverified || parsed.Reason != id.Reason {
				t.Fatalf("token of unverified identity: %+v, %v", parsed, err)
			}
			requireVerdict(t, src, parsed, Unverified)
			requireRefused(t, src, parsed, Unverified, ErrRefused)
			if h, v, err := AuthorizeHermes(src, p.pid, parsed.Fingerprint()); h != nil || v.State != Unverified || !errors.Is(err, ErrRefused) {
				t.Fatalf("AuthorizeHermes(unverified) = %v, %v, %v", h, v, err)
			}
			p.requireAlive(t)
		})
	}
}

// requireKilledBy0 waits for a process that exits by itself with status 0.
func (p *proc) requireKilledBy0(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("pid %d: %v", p.pid, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("pid %d did not exit", p.pid)
	}
}
