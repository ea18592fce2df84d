package launcher

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// LogPollInterval is how often a followed log is looked at again for new output and for its worker's end.
const LogPollInterval = 200 * time.Millisecond

// ReadLog copies worker ref's log into w from offset (counted from the first byte the log held when the
// worker's shim opened it, across rotations; an offset before the oldest byte still held starts there).
// begin is called once, before anything is written, with that oldest offset. With follow it goes on
// copying what the worker writes until the worker has ended and its output is drained (its shim has
// recorded its end), or ctx ends. It reads only the launcher's own per-worker logs (<state-dir>/logs),
// opened without following a link.
func (l *Launcher) ReadLog(ctx context.Context, ref string, offset int64, follow bool, w io.Writer, begin func(start int64) error) error {
	rec, err := l.Get(ctx, ref)
	if err != nil {
		return err
	}
	switch {
	case rec.Log == "":
		return fmt.Errorf("%w: worker %s: its output is not logged (inherited stdio, or /dev/null)", worker.ErrNoLog, rec.ID)
	case filepath.Dir(rec.Log) != filepath.Join(l.StatePath, "logs"):
		return fmt.Errorf("%w: worker %s: its log %s is a file its caller named: read it there", worker.ErrNoLog, rec.ID, rec.Log)
	}
	begun := false
	for {
		ended := false
		if follow {
			now, err := l.Get(ctx, rec.ID)
			if err != nil {
				return err
			}
			// The shim writes ended_at after it has drained the worker's output into the log.
			ended = now.EndedAt != "" || now.State != fingerprint.Running && now.State != fingerprint.Exited
		}
		segs, err := l.OpenLog(ctx, rec.ID, rec.Log)
		if err != nil {
			return err
		}
		start := int64(0)
		if len(segs) > 0 {
			start = segs[0].Base
		}
		if !begun {
			begun = true
			if err := begin(start); err != nil {
				records.CloseSegs(segs)
				return err
			}
		}
		offset = max(offset, start)
		offset, err = records.CopySegs(segs, offset, w)
		records.CloseSegs(segs)
		if err != nil || !follow || ended {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(LogPollInterval):
		}
	}
}
