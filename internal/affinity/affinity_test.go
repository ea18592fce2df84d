package affinity

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// childEnv makes the test binary pin itself and report what every thread is allowed, so the pin is seen
// from /proc and the test process itself is never pinned.
const childEnv = "HLAUNCH_TEST_AFFINITY_CHILD"

type report struct {
	Orig     string   // what Pin returned
	Pinned   []string // Cpus_allowed_list of every thread after Pin and after new threads were made
	Restored string   // Cpus_allowed_list of the locked thread after ApplyToThread(orig)
	All      []string // Cpus_allowed_list of every thread after ApplyToAll(orig)
	Err      string
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		r := child()
		_ = json.NewEncoder(os.Stdout).Encode(r)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child() report {
	orig, err := Pin()
	if err != nil {
		return report{Err: err.Error()}
	}
	r := report{Orig: orig.String()}
	// Make the runtime start more threads after the pin: a goroutine that holds its thread and blocks
	// keeps that thread to itself, so the others need new ones.
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			runtime.LockOSThread()
			wg.Done()
			<-hold
			runtime.UnlockOSThread()
		}()
	}
	wg.Wait()
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, t := range tasks {
		r.Pinned = append(r.Pinned, allowed(t))
	}
	close(hold)
	runtime.LockOSThread()
	if err := orig.ApplyToThread(); err != nil {
		r.Err = err.Error()
	}
	r.Restored = allowed("/proc/thread-self/status")
	if err := orig.ApplyToAll(); err != nil {
		r.Err = err.Error()
	}
	tasks, _ = filepath.Glob("/proc/self/task/*/status")
	for _, t := range tasks {
		r.All = append(r.All, allowed(t))
	}
	return r
}

func allowed(status string) string {
	b, _ := os.ReadFile(status)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// TestPinThenRestore checks, in a child process, that Pin leaves every thread (including ones made after
// it) on one CPU of the original set, and that ApplyToThread gives the original set back.
func TestPinThenRestore(t *testing.T) {
	self, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if r.Err != "" {
		t.Fatalf("child: %s", r.Err)
	}
	if r.Orig != self.String() {
		t.Errorf("Pin returned %q, want the set the child started with, %q", r.Orig, self)
	}
	if len(r.Pinned) < 5 {
		t.Fatalf("child saw %d threads, want the runtime's and 4 more", len(r.Pinned))
	}
	for _, p := range r.Pinned {
		if p != r.Pinned[0] || strings.ContainsAny(p, ",-") {
			t.Fatalf("threads after Pin are allowed %v, want one and the same CPU each", r.Pinned)
		}
	}
	if r.Restored != self.String() {
		t.Errorf("after ApplyToThread the thread is allowed %q, want %q", r.Restored, self)
	}
	for _, a := range r.All {
		if a != self.String() {
			t.Errorf("after ApplyToAll the threads are allowed %v, want %q each", r.All, self)
			break
		}
	}
}

func TestString(t *testing.T) {
	var s Set
	if !s.IsZero() || s.String() != "" {
		t.Fatalf("zero Set: IsZero %v, String %q", s.IsZero(), s)
	}
	for _, c := range []int{0, 1, 2, 5, 7, 8, 9, 64, 1023} {
		s.cpus.Set(c)
	}
	if got, want := s.String(), "0-2,5,7-9,64,1023"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if err := (Set{}).ApplyToThread(); err == nil {
		t.Error("ApplyToThread of the zero Set succeeded; it must refuse")
	}
	if err := (Set{}).ApplyToAll(); err == nil {
		t.Error("ApplyToAll of the zero Set succeeded; it must refuse")
	}
}

func TestEqual(t *testing.T) {
	var a, b Set
	a.cpus.Set(1)
	if a.Equal(b) {
		t.Error("{1} equals {}")
	}
	b.cpus.Set(1)
	if !a.Equal(b) {
		t.Error("{1} does not equal {1}")
	}
}

func TestParseRoundTrip(t *testing.T) {
	for _, list := range []string{"", "0", "0-1", "0-2,5,7-9,64,1023"} {
		s, err := Parse(list)
		if err != nil {
			t.Fatalf("Parse(%q): %v", list, err)
		}
		if s.String() != list {
			t.Errorf("Parse(%q).String() = %q", list, s)
		}
		b, _ := json.Marshal(struct {
			S Set `json:"s,omitzero"`
		}{s})
		var back struct{ S Set }
		if err := json.Unmarshal(b, &back); err != nil || !back.S.Equal(s) {
			t.Errorf("JSON %s read back as %q (%v), want %q", b, back.S, err, list)
		}
		if list == "" && string(b) != "{}" {
			t.Errorf("the zero Set is written as %s, want it left out", b)
		}
	}
	for _, bad := range []string{"x", "1-", "-1", "3-1", "0,,1", "1024", "0-1024"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", bad)
		}
	}
}
