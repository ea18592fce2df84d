package systemd

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// fakeUID owns the directories the bus tests make; a uid nobody uses, so /run/user/<fakeUID> is absent.
const fakeUID = 424242

// requireRoot skips tests that chown files to another uid.
func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "it chowns test directories to another uid")
}

// mkdirOwned makes dir with mode, owned by uid.
func mkdirOwned(t *testing.T, dir string, mode os.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // umask-free
		t.Fatal(err)
	}
	if err := os.Lchown(dir, uid, -1); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listen makes a unix socket at p owned by uid.
func listen(t *testing.T, p string, uid int) {
	t.Helper()
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
}

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestUserRuntimeDir(t *testing.T) {
	requireRoot(t)
	base, err := os.MkdirTemp("/tmp", "hlsd-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	good := mkdirOwned(t, filepath.Join(base, "good"), 0o700, fakeUID)
	groupW := mkdirOwned(t, filepath.Join(base, "groupw"), 0o770, fakeUID)
	worldW := mkdirOwned(t, filepath.Join(base, "worldw"), 0o1777, fakeUID)
	other := mkdirOwned(t, filepath.Join(base, "other"), 0o700, fakeUID+1)
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Lchown(file, fakeUID, -1)

	tests := []struct {
		name, xdg string
		want      string // "" means an error is expected
		why       string // substring of the error
	}{
		{"good", good, good, ""},
		{"unset", "", "", "/run/user/424242"},
		{"relative", "run/x", "", "not an absolute path"},
		{"symlink", link, "", "is a symlink"},
		{"not a dir", file, "", "is not a directory"},
		{"group writable", groupW, "", "group- or world-writable"},
		{"world writable", worldW, "", "group- or world-writable"},
		{"other owner", other, "", "owned by uid 424243, not 424242"},
		{"missing", filepath.Join(base, "nope"), "", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UserRuntimeDir(fakeUID, env("XDG_RUNTIME_DIR", tc.xdg))
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("UserRuntimeDir = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrNoBus) {
				t.Fatalf("UserRuntimeDir = %q, %v; want ErrNoBus", got, err)
			}
			// The refusal names why XDG_RUNTIME_DIR was refused, the fallback tried, and the remedy.
			for _, s := range []string{tc.why, "/run/user/424242", "loginctl enable-linger"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestUserBusPathAndResolve(t *testing.T) {
	requireRoot(t)
	base, err := os.MkdirTemp("/tmp", "hlsd-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	rt := mkdirOwned(t, filepath.Join(base, "rt"), 0o700, fakeUID)
	noBus := mkdirOwned(t, filepath.Join(base, "nobus"), 0o700, fakeUID)
	fileBus := mkdirOwned(t, filepath.Join(base, "filebus"), 0o700, fakeUID)
	otherBus := mkdirOwned(t, filepath.Join(base, "otherbus"), 0o700, fakeUID)
	openDir := mkdirOwned(t, filepath.Join(base, "open"), 0o777, fakeUID)
	listen(t, filepath.Join(rt, "bus"), fakeUID)
	listen(t, filepath.Join(rt, "alt"), fakeUID)
	listen(t, filepath.Join(otherBus, "bus"), fakeUID+1)
	listen(t, filepath.Join(openDir, "bus"), fakeUID)
	if err := os.WriteFile(filepath.Join(fileBus, "bus"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		getenv   func(string) string
		wantPath string
		why      []string
	}{
		{"bus", env("XDG_RUNTIME_DIR", rt), filepath.Join(rt, "bus"), nil},
		{"no bus", env("XDG_RUNTIME_DIR", noBus), "", []string{"no user bus at " + noBus + "/bus", "loginctl enable-linger"}},
		{"bus is a file", env("XDG_RUNTIME_DIR", fileBus), "", []string{"is not a socket"}},
		{"bus of another uid", env("XDG_RUNTIME_DIR", otherBus), "", []string{"owned by uid 424243"}},
		{"env address used", env("DBUS_SESSION_BUS_ADDRESS", "unix:path="+rt+"/alt,guid=0123"), filepath.Join(rt, "alt"), nil},
		{"env address escaped", env("DBUS_SESSION_BUS_ADDRESS", "unix:path="+strings.ReplaceAll(rt, "/", "%2f")+"/alt"), filepath.Join(rt, "alt"), nil},
		{"env address in open dir", env("DBUS_SESSION_BUS_ADDRESS", "unix:path="+openDir+"/bus", "XDG_RUNTIME_DIR", rt), filepath.Join(rt, "bus"), nil},
		{"env address abstract", env("DBUS_SESSION_BUS_ADDRESS", "unix:abstract=/tmp/dbus-x", "XDG_RUNTIME_DIR", noBus), "", []string{"DBUS_SESSION_BUS_ADDRESS ignored", "only path and guid", "no user bus at"}},
		{"env address tcp", env("DBUS_SESSION_BUS_ADDRESS", "tcp:host=localhost,port=1", "XDG_RUNTIME_DIR", rt), filepath.Join(rt, "bus"), nil},
		{"env address other owner", env("DBUS_SESSION_BUS_ADDRESS", "unix:path="+otherBus+"/bus", "XDG_RUNTIME_DIR", noBus), "", []string{"DBUS_SESSION_BUS_ADDRESS ignored", "owned by uid 424243"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveUserBus(fakeUID, tc.getenv)
			if tc.wantPath != "" {
				if err != nil || got != tc.wantPath {
					t.Fatalf("ResolveUserBus = %q, %v; want %q", got, err, tc.wantPath)
				}
				return
			}
			if !errors.Is(err, ErrNoBus) {
				t.Fatalf("ResolveUserBus = %q, %v; want ErrNoBus", got, err)
			}
			for _, s := range tc.why {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
	// UserBusPath ignores DBUS_SESSION_BUS_ADDRESS entirely.
	if _, err := UserBusPath(fakeUID, env("DBUS_SESSION_BUS_ADDRESS", "unix:path="+rt+"/alt", "XDG_RUNTIME_DIR", noBus)); !errors.Is(err, ErrNoBus) {
		t.Errorf("UserBusPath used DBUS_SESSION_BUS_ADDRESS: %v", err)
	}
}

func TestParseBusAddress(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"unix:path=/run/user/1000/bus", "/run/user/1000/bus"},
		{"unix:path=/run/user/1000/bus,guid=abc", "/run/user/1000/bus"},
		{"unix:guid=abc,path=/a/b", "/a/b"},
		{"unix:path=/a%2cb", "/a,b"},
		{"unix:path=/a/../b", "/b"},
		{"unix:path=relative", ""},
		{"unix:abstract=/tmp/x", ""},
		{"unix:tmpdir=/tmp", ""},
		{"unix:runtime=yes", ""},
		{"unix:path=/a;unix:path=/b", ""},
		{"unix:path=/a,path=/b", ""},
		{"tcp:host=x,port=1", ""},
		{"unix:path=/a%2", ""},
		{"unix:path=/a%zz", ""},
		{"unix:path=/a%00b", ""},
		{"unix:", ""},
		{"", ""},
	}
	for _, tc := range tests {
		got, err := parseBusAddress(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("parseBusAddress(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseBusAddress(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseBusAddress(f *testing.F) {
	for _, s := range []string{"unix:path=/run/user/1/bus", "unix:path=/a%2cb,guid=1", "unix:abstract=x", "tcp:host=a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseBusAddress(s)
		if err != nil {
			return
		}
		// Whatever is accepted is a clean absolute path without NUL.
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.IndexByte(p, 0) >= 0 {
			t.Fatalf("parseBusAddress(%q) = %q", s, p)
		}
		if !strings.HasPrefix(s, "unix:") || strings.Contains(s, ";") {
			t.Fatalf("parseBusAddress(%q) accepted a non-unix or multiple address", s)
		}
	})
}
