package systemd

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// UserRuntimeDir returns the runtime directory of uid by hermes' rule: $XDG_RUNTIME_DIR (read through
// getenv, os.Getenv when nil) only if it is absolute, a real directory (not a symlink), owned by uid and not
// group- or world-writable; otherwise /run/user/<uid>, which must pass the same checks. Nothing is cached:
// linger may be enabled after the caller started, so every call looks again. The error wraps ErrNoBus and
// says why each candidate was refused.
func UserRuntimeDir(uid int, getenv func(string) string) (dir string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var why []string
	if x := getenv("XDG_RUNTIME_DIR"); x != "" {
		if err := checkRuntimeDir(x, uid); err == nil {
			return x, nil
		} else {
			why = append(why, "XDG_RUNTIME_DIR ignored: "+err.Error())
		}
	}
	def := "/run/user/" + strconv.Itoa(uid)
	if err := checkRuntimeDir(def, uid); err != nil {
		why = append(why, err.Error())
		return "", fmt.Errorf("%w: no runtime directory for uid %d: %s (%s)", ErrNoBus, uid,
			strings.Join(why, "; "), lingerRemedy(uid))
	}
	return def, nil
}

// UserBusPath returns <UserRuntimeDir>/bus after checking that it is a socket owned by uid. The error
// wraps ErrNoBus, names the path, and gives the remedy ("loginctl enable-linger <user>").
func UserBusPath(uid int, getenv func(string) string) (string, error) {
	dir, err := UserRuntimeDir(uid, getenv)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "bus")
	if err := checkBusSocket(p, uid); err != nil {
		return "", fmt.Errorf("%w: %w (%s)", ErrNoBus, err, lingerRemedy(uid))
	}
	return p, nil
}

// ResolveUserBus returns the path of uid's user bus: the path in DBUS_SESSION_BUS_ADDRESS when that is a
// single "unix:path=P" address and P is a socket owned by uid in a directory that passes the runtime
// directory checks, else UserBusPath. A refused environment address is named in the error when no bus
// is found either way.
func ResolveUserBus(uid int, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var envWhy error
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		p, err := parseBusAddress(a)
		if err == nil {
			err = checkRuntimeDir(filepath.Dir(p), uid)
		}
		if err == nil {
			err = checkBusSocket(p, uid)
		}
		if err == nil {
			return p, nil
		}
		envWhy = fmt.Errorf("DBUS_SESSION_BUS_ADDRESS ignored: %w", err)
	}
	p, err := UserBusPath(uid, getenv)
	if err != nil && envWhy != nil {
		return "", fmt.Errorf("%w; %v", err, envWhy)
	}
	return p, err
}

// checkRuntimeDir applies hermes' runtime directory rule to dir.
func checkRuntimeDir(dir string, uid int) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q is not an absolute path", dir)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is group- or world-writable (mode %04o)", dir, fi.Mode().Perm())
	}
	if o := owner(fi); o != uid {
		return fmt.Errorf("%s is owned by uid %d, not %d", dir, o, uid)
	}
	return nil
}

// checkBusSocket requires p to be a socket (not a symlink to one) owned by uid.
func checkBusSocket(p string, uid int) error {
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no user bus at %s", p)
		}
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s is not a socket (mode %v)", p, fi.Mode())
	}
	if o := owner(fi); o != uid {
		return fmt.Errorf("%s is owned by uid %d, not %d", p, o, uid)
	}
	return nil
}

// owner returns the file's owner uid, or -1 when the platform gives none.
func owner(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// lingerRemedy names the command that gives uid a user manager (and so a bus) without a login session.
func lingerRemedy(uid int) string {
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return "a user manager with a bus is started at login, or always with \"loginctl enable-linger " + name + "\""
}

// parseBusAddress accepts exactly one D-Bus address of the form unix:path=P (optionally with a guid key)
// and returns P unescaped. Abstract sockets, tmpdir/runtime forms, other transports and address lists are
// refused: they cannot be checked for ownership the way a path can.
func parseBusAddress(addr string) (string, error) {
	if strings.Contains(addr, ";") {
		return "", fmt.Errorf("%q: a list of addresses is not accepted", addr)
	}
	rest, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return "", fmt.Errorf("%q: only unix:path= addresses are accepted", addr)
	}
	var path string
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", fmt.Errorf("%q: malformed key/value %q", addr, kv)
		}
		u, err := unescapeBusValue(v)
		if err != nil {
			return "", fmt.Errorf("%q: %w", addr, err)
		}
		switch k {
		case "path":
			if path != "" {
				return "", fmt.Errorf("%q: path given twice", addr)
			}
			path = u
		case "guid":
		default:
			return "", fmt.Errorf("%q: key %q is not accepted (only path and guid)", addr, k)
		}
	}
	if path == "" || !filepath.IsAbs(path) || strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("%q: no absolute path", addr)
	}
	return filepath.Clean(path), nil
}

// unescapeBusValue undoes D-Bus address escaping (%XX for any byte).
func unescapeBusValue(v string) (string, error) {
	if !strings.Contains(v, "%") {
		return v, nil
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i+2 >= len(v) {
			return "", fmt.Errorf("truncated escape in %q", v)
		}
		n, err := strconv.ParseUint(v[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape %q", v[i:i+3])
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}
