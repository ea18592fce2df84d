package launcher_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// A hermes row's PID and fingerprint (the legacy interface): verified, signalled only while it verifies,
// stopped; a wrong fingerprint is refused and nothing is sent.
func TestLegacyRow(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	dir := t.TempDir()
	rc := w.start(spec(`trap 'echo hup >> ` + dir + `/hup' HUP; echo up > ` + dir + `/up; while :; do sleep 0.05; done`))
	waitFile(t, dir+"/up")
	rec, err := w.l.LegacyStatus(ctx, rc.PID, rc.Fingerprint)
	if err != nil || rec.State != "running" {
		t.Fatalf("legacy status: %+v, %v", rec, err)
	}
	wrong := rc.Fingerprint[:strings.LastIndexByte(rc.Fingerprint, '|')+1] + "1"
	if rec, err := w.l.LegacyStatus(ctx, rc.PID, wrong); err == nil && rec.State == "running" {
		t.Errorf("a wrong fingerprint verified: %+v", rec)
	}
	if err := w.l.LegacySignal(ctx, rc.PID, wrong, syscall.SIGHUP); err == nil {
		t.Error("a wrong fingerprint was authority to signal")
	}
	if err := w.l.LegacySignal(ctx, rc.PID, rc.Fingerprint, syscall.SIGHUP); err != nil {
		t.Fatalf("legacy signal: %v", err)
	}
	if got := waitFile(t, dir+"/hup"); got != "hup\n" {
		t.Errorf("the worker heard %q, want one HUP", got)
	}
	if rec, err := w.l.LegacyStop(ctx, rc.PID, rc.Fingerprint, time.Second); err != nil || rec.State == "running" {
		t.Errorf("legacy stop: %+v, %v", rec, err)
	}
	if rec := w.wait(rc.ID); rec.State != "exited" {
		t.Errorf("after legacy stop: %+v", rec)
	}
}
