package launcher

import (
	"fmt"
	"os"

	"github.com/hlaunch/hlaunch/nsenv"
)

// sandbox builds the sandbox of spec, or returns nil when none is asked for. The state and ledger
// directories and the Hide paths of the Config (a sidecar's socket) are made invisible inside.
func (l *Launcher) sandbox(spec Spec, prof *nsenv.Profile, cwd string) (*nsenv.Sandbox, error) {
	if !spec.Sandbox {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		if err := nsenv.UserNamespaceSupport(); err != nil {
			return nil, fmt.Errorf("--sandbox without root needs a user namespace: %w", err)
		}
	}
	sb := &nsenv.Sandbox{
		Root: l.root,
		Home: prof.Home,
		Cwd:  cwd,
		RW:   spec.RW,
		Hide: append([]string{l.state, l.ledger}, l.cfg.Hide...),
		Net:  spec.Net,
		// The filter is on unless the spec turns it off by name.
		SeccompOff: spec.Seccomp == SeccompOff,
	}
	if spec.User != "" {
		sb.UID, sb.GID, _ = parseUser(spec.User) // checked by Validate
		sb.SetUser = true
	}
	if err := sb.Validate(); err != nil {
		return nil, invalid(err)
	}
	return sb, nil
}
