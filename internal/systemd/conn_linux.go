package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// systemPrivateSocket is the system manager's own socket, usable by root without a dbus-daemon.
const systemPrivateSocket = "/run/systemd/private"

// ConnectOptions says which manager to talk to. The zero value means uid 0's system manager.
type ConnectOptions struct {
	// User selects the user manager of UID even when UID is 0. When false and UID is 0 the system manager
	// is used; when false and UID is not 0 the user manager is used anyway (an unprivileged caller cannot
	// create scopes in the system manager).
	User bool
	// UID is the user whose bus is derived (normally os.Geteuid()). It must match the effective uid for the
	// user bus: the bus authenticates the caller's socket credentials, not this field.
	UID int
	// Getenv reads XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS; nil means os.Getenv.
	Getenv func(string) string
}

// Conn is a connection to one systemd manager. It is safe for concurrent use; Close it when done.
type Conn struct {
	sd *sdbus.Conn
	// Bus is where the connection went: a socket path, or "system" for the system bus.
	bus string
}

// Connect opens a connection to the manager chosen by o. ctx bounds connecting only, not the connection's
// life. As root without o.User it tries the system bus ($DBUS_SYSTEM_BUS_ADDRESS or the standard socket),
// then systemd's private socket /run/systemd/private; otherwise it derives the user bus afresh (ResolveUserBus) on every call:
// nothing is cached, so a bus that appears later (linger) is found by the next call. Any failure wraps
// ErrNoBus with the reason.
func Connect(ctx context.Context, o ConnectOptions) (*Conn, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.UID == 0 && !o.User {
		sys := o.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
		if sys == "" {
			sys = "unix:path=/run/dbus/system_bus_socket"
		}
		sd, err := connectPair(ctx, sys, true)
		if err == nil {
			return &Conn{sd: sd, bus: sys}, nil
		}
		// No dbus-daemon (minimal hosts, early boot): systemd's own socket speaks the same API to root.
		sd, err2 := connectPair(ctx, "unix:path="+systemPrivateSocket, false)
		if err2 == nil {
			return &Conn{sd: sd, bus: systemPrivateSocket}, nil
		}
		return nil, fmt.Errorf("%w: system bus %s: %v; %s: %v", ErrNoBus, sys, err, systemPrivateSocket, err2)
	}
	p, err := ResolveUserBus(o.UID, o.Getenv)
	if err != nil {
		return nil, err
	}
	sd, err := connectPair(ctx, "unix:path="+p, true)
	if err != nil {
		return nil, fmt.Errorf("%w: user bus %s: %w", ErrNoBus, p, err)
	}
	return &Conn{sd: sd, bus: p}, nil
}

// connectPair makes go-systemd's connection pair (one for calls, one for the JobRemoved signal) with both
// dials in flight at once: each costs an accept and an authentication round trip in the manager (about
// 1.3 ms measured), and go-systemd would otherwise make them one after the other. On a bus, each
// connection's Hello is sent without waiting for its answer, as sd-bus does: go-systemd's first call on
// the signal connection (AddMatch) goes out behind it, and both answers are checked once go-systemd has
// its connections, which saves a round trip on the launch path.
func connectPair(ctx context.Context, addr string, hello bool) (*sdbus.Conn, error) {
	type dialed struct {
		c     *godbus.Conn
		hello *godbus.Call // nil without a bus
		err   error
	}
	ch := make(chan dialed, 2)
	for range 2 {
		go func() {
			c, h, err := dial(ctx, addr, hello)
			ch <- dialed{c, h, err}
		}()
	}
	a, b := <-ch, <-ch
	closeAll := func() {
		for _, d := range []dialed{a, b} {
			if d.c != nil {
				d.c.Close()
			}
		}
	}
	if a.err != nil || b.err != nil {
		closeAll()
		// Both dials went to one address: one reason is enough, and it stays one line.
		if a.err != nil {
			return nil, a.err
		}
		return nil, b.err
	}
	conns := []*godbus.Conn{a.c, b.c}
	sd, err := sdbus.NewConnection(func() (*godbus.Conn, error) {
		if len(conns) == 0 {
			return nil, errors.New("go-systemd asked for a third connection")
		}
		c := conns[0]
		conns = conns[1:]
		return c, nil
	})
	for _, c := range conns { // not taken when NewConnection failed early
		c.Close()
	}
	if err != nil {
		return nil, err
	}
	for _, d := range []dialed{a, b} {
		if d.hello == nil {
			continue
		}
		select {
		case <-d.hello.Done:
			err = d.hello.Err
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			sd.Close()
			return nil, fmt.Errorf("hello: %w", err)
		}
	}
	return sd, nil
}

// dial opens one authenticated connection to addr and, when it is a bus (not systemd's private socket),
// sends Hello; the returned call is that Hello, whose answer the caller checks. go-systemd opens two
// connections per Conn (one for calls, one for the JobRemoved signal).
//
// ctx bounds only the dial: godbus.WithContext would tie the connection's whole life to ctx and close it
// when a caller's short connect timeout expires, so the connection is closed by hand if ctx ends first.
func dial(ctx context.Context, addr string, hello bool) (*godbus.Conn, *godbus.Call, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// A single unix:path= address (every address hlaunch derives itself) is authenticated in one round
	// trip (dialPipelined); anything else (tcp:, abstract:, a list) goes through godbus's own dial and
	// authentication. Either way it is EXTERNAL with the numeric uid: the peer checks it against
	// SO_PEERCRED, and no user lookup is needed.
	path, perr := parseBusAddress(addr)
	var c *godbus.Conn
	var err error
	if perr == nil {
		c, err = dialPipelined(ctx, path)
	} else {
		c, err = godbus.Dial(addr)
	}
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if perr != nil {
		err = c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Geteuid()))})
	}
	var h *godbus.Call
	if err == nil && hello {
		// The bus wants Hello first; nothing needs its answer (the unique name) before the first call.
		h = c.BusObject().Go("org.freedesktop.DBus.Hello", 0, make(chan *godbus.Call, 1))
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, h, nil
}

// Connected reports whether both of the connection's sockets are still open (the manager or the bus did
// not go away).
func (c *Conn) Connected() bool { return c.sd.Connected() }

// Bus says where the connection went: a socket path, or "system" for the system bus.
func (c *Conn) Bus() string { return c.bus }

// Close closes the connection. It returns nil; the error is there for io.Closer.
func (c *Conn) Close() error {
	c.sd.Close()
	return nil
}

// D-Bus error names that callers branch on.
const (
	dbusUnitExists = "org.freedesktop.systemd1.UnitExists"
	dbusNoSuchUnit = "org.freedesktop.systemd1.NoSuchUnit"
)

// dbusErrorName returns the D-Bus error name in err, or "".
func dbusErrorName(err error) string {
	var de godbus.Error
	if errors.As(err, &de) {
		return de.Name
	}
	var pde *godbus.Error
	if errors.As(err, &pde) && pde != nil {
		return pde.Name
	}
	return ""
}
