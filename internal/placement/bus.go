package placement

import (
	"context"
	"sync"

	"github.com/hlaunch/hlaunch/internal/systemd"
)

// Buses keeps a long-lived launcher's manager connections (Config.KeepBus), one per manager (the system
// one, the user one), shared by every launch: a launch otherwise dials two D-Bus connections, each an
// accept and an authentication in the manager, and closes them when it is done.
type Buses struct {
	mu    sync.Mutex
	conns map[bool]*systemd.Conn // by "user manager"
}

// get returns the open connection to the user or system manager, dialling it (again) when there is none
// or it was lost. Concurrent first launches wait for one dial.
func (b *Buses) get(ctx context.Context, user bool, dial func(context.Context) (*systemd.Conn, error)) (*systemd.Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.conns[user]; c != nil {
		if c.Connected() {
			return c, nil
		}
		c.Close()
		delete(b.conns, user)
	}
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	if b.conns == nil {
		b.conns = map[bool]*systemd.Conn{}
	}
	b.conns[user] = c
	return c, nil
}

// Close closes every kept connection.
func (b *Buses) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for user, c := range b.conns {
		c.Close()
		delete(b.conns, user)
	}
}
