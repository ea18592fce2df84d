package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// damagedLauncher is a listLauncher with three ended workers and one running worker (a sleep this test
// started, recorded without a cgroup) holding key "held"; it returns the launcher and the running id.
func damagedLauncher(t testing.TB) (*Launcher, string) {
	t.Helper()
	l := listLauncher(t, 3)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ident := fingerprint.CaptureChild(fingerprint.Sources{}, cmd.Process.Pid, "")
	if ident.Unverified {
		t.Fatalf("capture: %s", ident.Reason)
	}
	id := "w-00000000aaaa"
	rc := worker.Receipt{ID: id, Token: ident.Token(), PID: ident.PID, Mode: worker.ModeNone, Key: "held", StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := (&state.Dir{Path: l.WorkersDir()}).Write(id, rc, false); err != nil {
		t.Fatal(err)
	}
	return l, id
}

const damagedID = "w-00000000dead"

// damagedCases are the records in damagedID's place: what a torn write, a downgrade, a bad token, a wrong
// shape or something other than a file leave. key is the key the record names (it decodes).
var damagedCases = []struct {
	name  string
	make  func(t *testing.T, path string)
	state fingerprint.State
	key   string
}{
	{"torn", writeBytes(`{"id":"w-00000000dead","tok`), worker.StateCorrupt, ""},
	{"empty", writeBytes(``), worker.StateCorrupt, ""},
	{"future", writeBytes(`{"token":"hl2.future"}`), worker.StateUnknownVersion, ""},
	{"future-keyed", writeBytes(`{"id":"w-00000000dead","token":"hl2.future","key":"future-key"}`), worker.StateUnknownVersion, "future-key"},
	{"bad-token", writeBytes(`{"id":"w-00000000dead","token":"hl1.AAAAAAAA"}`), worker.StateCorrupt, ""},
	{"other-id", writeBytes(`{"id":"w-00000000beef","token":"hl1.AAAAAAAA"}`), worker.StateCorrupt, ""},
	{"wrong-shape", writeBytes(`[1,2,3]`), worker.StateCorrupt, ""},
	{"wrong-type", writeBytes(`{"id":"w-00000000dead","pid":"many","key":"typed"}`), worker.StateCorrupt, ""},
	{"binary", writeBytes("\x00\xff\xfe{"), worker.StateCorrupt, ""},
	{"directory", func(t *testing.T, p string) { mustDo(t, os.Mkdir(p, 0o700)) }, worker.StateCorrupt, ""},
	{"symlink", func(t *testing.T, p string) { mustDo(t, os.Symlink("/etc/hostname", p)) }, worker.StateCorrupt, ""},
	{"fifo", func(t *testing.T, p string) { mustDo(t, syscall.Mkfifo(p, 0o600)) }, worker.StateCorrupt, ""},
}

func writeBytes(b string) func(t *testing.T, path string) {
	return func(t *testing.T, p string) { mustDo(t, os.WriteFile(p, []byte(b), 0o600)) }
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// One damaged record beside valid ones: List, Get, Status and the key check serve the others as before, the
// damaged one is listed in its own state with its reason, and it is refused to Signal, Stop and Wait.
func TestDamagedRecordIsItsOwnState(t *testing.T) {
	for _, c := range damagedCases {
		t.Run(c.name, func(t *testing.T) {
			l, live := damagedLauncher(t)
			c.make(t, filepath.Join(l.WorkersDir(), damagedID+".json"))
			ctx := context.Background()
			checkDamagedList(t, l, live, damagedID, c.state, c.key)
			rec, err := l.Status(ctx, damagedID)
			if err != nil || rec.State != c.state || rec.RecordError == "" || rec.ID != damagedID {
				t.Fatalf("Status: %+v, %v; want state %s with a record_error", rec, err, c.state)
			}
			if err := l.Signal(ctx, damagedID, syscall.SIGTERM, true); !errors.Is(err, worker.ErrRefused) {
				t.Errorf("Signal: %v, want ErrRefused", err)
			}
			if _, err := l.Stop(ctx, damagedID, time.Second); !errors.Is(err, worker.ErrRefused) {
				t.Errorf("Stop: %v, want ErrRefused", err)
			}
			if _, err := l.Wait(ctx, damagedID); !errors.Is(err, worker.ErrRefused) {
				t.Errorf("Wait: %v, want ErrRefused", err)
			}
			if rec, err := l.Get(ctx, live); err != nil || rec.State != fingerprint.Running {
				t.Errorf("the live worker: %s, %v", rec.State, err)
			}
		})
	}
}

// checkDamagedList checks one List and the key checks of a damagedLauncher holding a damaged record id.
func checkDamagedList(t *testing.T, l *Launcher, live, id string, want fingerprint.State, key string) {
	t.Helper()
	ctx := context.Background()
	recs, err := l.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	states := map[string]fingerprint.State{}
	for _, r := range recs {
		states[r.ID] = r.State
		if r.ID == id && (r.RecordError == "" || r.Key != key || r.PID != 0 || r.Token != "") {
			t.Errorf("damaged record listed as %+v: want only its id, key %q and a record_error", r, key)
		}
	}
	wantStates := map[string]fingerprint.State{
		"w-000000000000": fingerprint.Exited, "w-000000000001": fingerprint.Exited, "w-000000000002": fingerprint.Exited,
		live: fingerprint.Running, id: want,
	}
	if fmt.Sprint(states) != fmt.Sprint(wantStates) {
		t.Fatalf("List: %v, want %v", states, wantStates)
	}
	if _, err := l.holdKey(ctx, "held", worker.NewWorkerID()); !errors.Is(err, worker.ErrKeyHeld) {
		t.Errorf("key of the live worker: %v, want ErrKeyHeld", err)
	}
	unlock, err := l.holdKey(ctx, "free", worker.NewWorkerID())
	if err != nil {
		t.Fatalf("a free key: %v", err)
	}
	unlock()
	if key != "" {
		if _, err := l.holdKey(ctx, key, worker.NewWorkerID()); !errors.Is(err, worker.ErrKeyHeld) {
			t.Errorf("the key the damaged record names: %v, want ErrKeyHeld", err)
		}
	}
}

// gc moves every damaged record (with its exit record) into the quarantine and reports it, leaves one that
// names a key, touches no other record, and keeps at most QuarantineKeep quarantined records, the newest.
func TestGCQuarantinesDamagedRecords(t *testing.T) {
	l, live := damagedLauncher(t)
	l.Cgroups = nil // no cgroup of the host's is swept: only records are at stake here
	var want []string
	for i, c := range damagedCases {
		id := fmt.Sprintf("w-0000000d%04x", i)
		c.make(t, filepath.Join(l.WorkersDir(), id+".json"))
		if c.key == "" {
			want = append(want, id)
		}
	}
	mustDo(t, os.WriteFile(filepath.Join(l.WorkersDir(), "w-0000000d0000.exit.json"), []byte(`{}`), 0o600))
	q := l.QuarantineDir()
	mustDo(t, os.MkdirAll(q, 0o700))
	for i := 0; i < records.QuarantineKeep; i++ { // older than anything gc quarantines now
		mustDo(t, os.WriteFile(filepath.Join(q, fmt.Sprintf("20000101T000000.%09dZ-w-%012x.json", i, i)), nil, 0o600))
	}
	rep, err := l.GC(context.Background(), Retention{Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Quarantined) != fmt.Sprint(want) || rep.QuarantineDropped != len(want) || len(rep.Removed) != 0 {
		t.Fatalf("gc: %+v; want quarantined %v, %d dropped, none removed", rep, want, len(want))
	}
	names, err := os.ReadDir(q)
	mustDo(t, err)
	nrec, exits := 0, 0
	for _, e := range names {
		switch n := e.Name(); {
		case strings.HasSuffix(n, "-w-0000000d0000.exit.json"):
			exits++
		case n < fmt.Sprintf("20000101T000000.%09dZ", len(want)):
			t.Errorf("%s kept: one of the %d oldest", n, len(want))
		default:
			nrec++
		}
	}
	if nrec != records.QuarantineKeep || exits != 1 {
		t.Fatalf("quarantine holds %d records (want %d) and %d exit records (want 1)", nrec, records.QuarantineKeep, exits)
	}
	recs, err := l.List(context.Background())
	mustDo(t, err)
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID+":"+string(r.State))
	}
	wantIDs := fmt.Sprintf("[w-000000000000:exited w-000000000001:exited w-000000000002:exited %s:running w-0000000d0003:unknown-version]", live)
	if fmt.Sprint(ids) != wantIDs {
		t.Fatalf("after gc: %v, want %s", ids, wantIDs)
	}
}

// FuzzDamagedRecord writes fuzzed bytes as a record beside valid ones (a running worker's among them): the
// others are listed, read and key-checked as before, and the fuzzed one is either a valid record or
// listed as corrupt or unknown-version; nothing panics.
func FuzzDamagedRecord(f *testing.F) {
	for _, s := range []string{`{"id":"w-00000000dead","tok`, `{"token":"hl2.future"}`, `[1]`, `{"id":"w-00000000dead","key":"held","token":"hl1.AA"}`, "\x00"} {
		f.Add([]byte(s))
	}
	l, live := damagedLauncher(f)
	path := filepath.Join(l.WorkersDir(), damagedID+".json")
	f.Fuzz(func(t *testing.T, b []byte) {
		mustDo(t, os.WriteFile(path, b, 0o600))
		ctx := context.Background()
		rec, err := l.Get(ctx, damagedID)
		if err != nil {
			t.Fatalf("Get of the fuzzed record: %v", err)
		}
		if !worker.Damaged(rec.State) && rec.ID != damagedID {
			t.Fatalf("the fuzzed record: %+v", rec)
		}
		recs, err := l.List(ctx)
		if err != nil || len(recs) != 5 {
			t.Fatalf("List: %d records, %v", len(recs), err)
		}
		for _, r := range recs {
			if r.ID != damagedID && r.State != fingerprint.Exited && r.ID != live {
				t.Fatalf("%s: %s", r.ID, r.State)
			}
		}
		if r, err := l.Get(ctx, live); err != nil || r.State != fingerprint.Running {
			t.Fatalf("the live worker: %s, %v", r.State, err)
		}
		if _, err := l.holdKey(ctx, "held", worker.NewWorkerID()); !errors.Is(err, worker.ErrKeyHeld) {
			t.Fatalf("key of the live worker: %v", err)
		}
		if unlock, err := l.holdKey(ctx, "free-key", worker.NewWorkerID()); err == nil {
			unlock()
		} else if rec.Key != "free-key" {
			t.Fatalf("a free key: %v", err)
		}
	})
}

// A record whose id field is not its file's name is refused: the id names the files beside it.
func TestRecordIDMustBeItsName(t *testing.T) {
	root := filepath.Join(t.TempDir(), "hermes")
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Root: root, StateDir: filepath.Join(t.TempDir(), "state"), Environ: []string{"PATH=/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := state.Open(l.WorkersDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write("w-0123456789ab", worker.Receipt{ID: "../../../tmp/x"}, false); err != nil {
		t.Fatal(err)
	}
	// It is listed as corrupt under its file's name, never under the id it names.
	if rec, err := l.Get(context.Background(), "w-0123456789ab"); err != nil || rec.State != worker.StateCorrupt || rec.ID != "w-0123456789ab" ||
		!strings.Contains(rec.RecordError, "../../../tmp/x") {
		t.Fatalf("Get of a record naming another id = %+v, %v; want state corrupt under its file's name", rec, err)
	}
	if _, err := l.Stop(context.Background(), "w-0123456789ab", 0); !errors.Is(err, worker.ErrInvalid) || !errors.Is(err, worker.ErrRefused) {
		t.Fatalf("Stop of a record naming another id = %v, want ErrInvalid and ErrRefused", err)
	}
}
