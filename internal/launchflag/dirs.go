// Package launchflag is the one registration of the launcher flags that hlaunch and hlaunch-sidecar
// share: the hermes root, the state and ledger directories and the policy file (Dirs), and the placement
// flags (Placement: for exec one launch's, for the sidecar its spawns' defaults), so that both binaries take
// the same names, defaults, help and checks. It imports no HTTP package (hlaunch links it).
package launchflag

import (
	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/launcher"
)

// Dirs are the values of --root, --state-dir, --ledger-dir and --policy; empty means the default.
type Dirs struct {
	Root, StateDir, LedgerDir, Policy string
}

// AddDirs registers --root, --state-dir, --ledger-dir and --policy on fs into d.
func AddDirs(fs *pflag.FlagSet, d *Dirs) {
	fs.StringVar(&d.Root, "root", "", "hermes root (default: $HLAUNCH_ROOT, else derived from $HERMES_HOME, else ~/.hermes)")
	fs.StringVar(&d.StateDir, "state-dir", "", "worker records (default: $HLAUNCH_STATE_DIR, else /run/hlaunch for root, else $XDG_RUNTIME_DIR/hlaunch, else $TMPDIR/hlaunch-<uid>)")
	fs.StringVar(&d.LedgerDir, "ledger-dir", "", "execution ledger, kept across reboots when on a persistent disk (default: $HLAUNCH_LEDGER_DIR, else <state-dir>/ledger)")
	fs.StringVar(&d.Policy, "policy", "", "JSON policy file extending the built-in name lists (format: share/doc/hlaunch/cli.md, \"The policy file\")")
}

// Config is a launcher.Config with d's directories and policy file; the caller fills the rest.
func (d Dirs) Config() launcher.Config {
	return launcher.Config{Root: d.Root, StateDir: d.StateDir, LedgerDir: d.LedgerDir, PolicyFile: d.Policy}
}
