package sidecar

import (
	"fmt"
	"net"
	"os"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/hlaunch/hlaunch/internal/sidecar/sockfile"
)

// listen returns the socket to serve and a cleanup that removes the socket file if this process made it.
// Under systemd socket activation (LISTEN_FDS), the first activated Unix listener is used as is: the .socket
// unit owns its path, mode and group, and the peer check still applies.
func (s *Server) listen() (net.Listener, func(), error) {
	if !s.cfg.NoActivation && os.Getenv("LISTEN_FDS") != "" {
		lns, err := activation.Listeners()
		if err != nil {
			return nil, nil, fmt.Errorf("socket activation: %w", err)
		}
		var chosen net.Listener
		for _, ln := range lns {
			if ln == nil {
				continue
			}
			if chosen == nil && ln.Addr().Network() == "unix" {
				chosen = ln
				continue
			}
			ln.Close() // only one socket is served; a second one is a unit mistake, not a second API
		}
		if chosen != nil {
			return chosen, func() { chosen.Close() }, nil
		}
		s.logf("sidecar: LISTEN_FDS set but no Unix stream socket was passed; creating %s", s.cfg.Socket)
	}
	if s.cfg.Socket == "" {
		return nil, nil, fmt.Errorf("%w: no socket path", ErrConfig)
	}
	mode := os.FileMode(0o600)
	if s.auth.Group >= 0 {
		mode = 0o660
	}
	return sockfile.Create(s.cfg.Socket, mode, int(s.auth.Group))
}
