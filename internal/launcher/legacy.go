package launcher

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// LegacyStatus applies the identity rules to a hermes row: a PID and its "<epoch>|<start>" fingerprint.
func (l *Launcher) LegacyStatus(ctx context.Context, pid int, fp string) (worker.Record, error) {
	v, err := fingerprint.VerifyHermes(l.Src, pid, fp)
	if err != nil {
		return worker.Record{}, fmt.Errorf("verify: %w", err)
	}
	return worker.Record{Receipt: worker.Receipt{PID: pid, Fingerprint: fp}, State: v.State, Reason: v.Reason}, nil
}

// LegacySignal signals a hermes row's process only when its fingerprint verifies.
func (l *Launcher) LegacySignal(ctx context.Context, pid int, fp string, sig syscall.Signal) error {
	h, v, err := fingerprint.AuthorizeHermes(l.Src, pid, fp)
	if err = refusalOr(h, v, err); err != nil {
		return err
	}
	defer h.Close()
	return h.SignalLeader(sig)
}

// LegacyStop stops a hermes row's process (SIGTERM, grace, SIGKILL) only when its fingerprint verifies;
// it succeeds only once the process is verified gone.
func (l *Launcher) LegacyStop(ctx context.Context, pid int, fp string, grace time.Duration) (worker.Record, error) {
	h, v, err := fingerprint.AuthorizeHermes(l.Src, pid, fp)
	if err = refusalOr(h, v, err); err != nil {
		return worker.Record{}, err
	}
	defer h.Close()
	killed, err := stopHandle(ctx, h, false, grace)
	if err != nil {
		return worker.Record{}, err
	}
	rec := worker.Record{Receipt: worker.Receipt{PID: pid, Fingerprint: fp}, State: fingerprint.Exited, Reason: "stopped"}
	if killed {
		rec.Signal = "SIGKILL"
	}
	return rec, nil
}
