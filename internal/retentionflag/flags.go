// Package retentionflag is the one definition of the retention flags that `hlaunch gc` and
// `hlaunch sidecar` share (launcher.Retention), so that both take the same names, defaults and help.
package retentionflag

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Add registers --keep, --max-age, --ledger-keep, --ledger-max-age and --orphan-age on fs into r, defaulting to
// launcher.DefaultRetention.
func Add(fs *pflag.FlagSet, r *launcher.Retention) {
	*r = launcher.DefaultRetention()
	fs.IntVar(&r.Keep, "keep", r.Keep, "ended workers kept (records, exit records, their logs), the most recently ended first; 0 keeps none")
	fs.Var(worker.NewDurationFlag(&r.MaxAge, r.MaxAge), "max-age", "remove ended workers that ended longer ago than this; 0: no age limit")
	fs.IntVar(&r.LedgerKeep, "ledger-keep", r.LedgerKeep, "ledger records kept, the most recent first (never one of an execution that has not ended); 0: no bound")
	fs.Var(worker.NewDurationFlag(&r.LedgerMaxAge, r.LedgerMaxAge), "ledger-max-age", "remove ended ledger records older than this; 0: no age limit")
	fs.Var(worker.NewDurationFlag(&r.OrphanAge, r.OrphanAge), "orphan-age", "remove an empty worker cgroup no record names only once it is this old (a launch in flight has one too); 0: at once")
}

// Check refuses a negative value, naming its flag (a duration flag refuses one itself, when it is parsed:
// worker.DurationFlag; Check covers a Retention made in code).
func Check(r launcher.Retention) error {
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"--keep", r.Keep < 0}, {"--max-age", r.MaxAge < 0}, {"--ledger-keep", r.LedgerKeep < 0},
		{"--ledger-max-age", r.LedgerMaxAge < 0}, {"--orphan-age", r.OrphanAge < 0},
	} {
		if f.bad {
			return fmt.Errorf("%w: %s must not be negative", worker.ErrInvalid, f.name)
		}
	}
	return nil
}
