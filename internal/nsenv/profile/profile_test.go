package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenProfile(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) {
		if err := os.MkdirAll(filepath.Join(root, rel), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mk("profiles/b")
	mk("profiles/gone")
	mk("profiles/.deleted/gone")
	mk("profiles/.deleted/ghost")
	if err := os.WriteFile(filepath.Join(root, "profiles", "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, raw string
		home      string
		err       error
		msg       string
	}{
		{"named", "b", filepath.Join(root, "profiles", "b"), nil, ""},
		{"named, case and space", " B ", filepath.Join(root, "profiles", "b"), nil, ""},
		{"default is the root", "Default", root, nil, ""},
		{"missing", "nobody", "", ErrNoProfile, "profile 'nobody' does not exist"},
		{"not a directory", "file", "", ErrNoProfile, "does not exist"},
		{"tombstoned though the dir remains", "gone", "", ErrTombstoned, "profile 'gone' does not exist"},
		{"tombstoned and gone", "ghost", "", ErrTombstoned, "tombstone"},
		{"traversal refused", "../b", "", ErrInvalidName, ""},
		{"reserved", "tmp", "", ErrReservedName, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Open(root, tt.raw)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				if p != nil {
					t.Fatal("non-nil profile with an error")
				}
				if !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err %q does not contain %q", err, tt.msg)
				}
				return
			}
			if p.Home != tt.home || p.Root != root {
				t.Fatalf("got %+v, want home %s", p, tt.home)
			}
			if p.EnvFile() != filepath.Join(tt.home, ".env") || p.Scratch() != filepath.Join(tt.home, "cache", "scratch") {
				t.Fatalf("EnvFile/Scratch wrong: %s %s", p.EnvFile(), p.Scratch())
			}
		})
	}
	if _, err := Open(filepath.Join(root, "nope"), "default"); !errors.Is(err, ErrNoProfile) {
		t.Fatalf("missing root: err = %v, want ErrNoProfile", err)
	}
}

func TestOpenProfileSymlinks(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		err   error
	}{
		{"home links outside the root", func(t *testing.T, root string) {
			mkdirs(t, filepath.Join(root, "profiles"))
			symlink(t, outside, filepath.Join(root, "profiles", "b"))
		}, ErrSymlinkEscape},
		{"home links to a sibling profile", func(t *testing.T, root string) {
			mkdirs(t, filepath.Join(root, "profiles", "a"))
			symlink(t, "a", filepath.Join(root, "profiles", "b"))
		}, ErrSymlinkEscape},
		{"home links to the root", func(t *testing.T, root string) {
			mkdirs(t, filepath.Join(root, "profiles"))
			symlink(t, "..", filepath.Join(root, "profiles", "b"))
		}, ErrSymlinkEscape},
		{"profiles links outside the root", func(t *testing.T, root string) {
			mkdirs(t, filepath.Join(outside, "b"))
			symlink(t, outside, filepath.Join(root, "profiles"))
		}, ErrSymlinkEscape},
		{"profiles links inside the root", func(t *testing.T, root string) {
			mkdirs(t, filepath.Join(root, "real-profiles", "b"))
			symlink(t, "real-profiles", filepath.Join(root, "profiles"))
		}, ErrSymlinkEscape},
		{"home links to its own place", func(t *testing.T, root string) {
			mkdirs(t, filepath.Join(root, "profiles", "real-b"))
			symlink(t, "real-b", filepath.Join(root, "profiles", "b"))
		}, ErrSymlinkEscape},
		{"tombstone is a link", func(t *testing.T, root string) {
			mkdirs(t, filepath.Join(root, "profiles", "b"))
			mkdirs(t, filepath.Join(root, "elsewhere"))
			symlink(t, "../elsewhere", filepath.Join(root, "profiles", ".deleted"))
		}, ErrSymlinkEscape},
		{"root itself a link", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.setup == nil {
				real := t.TempDir()
				mkdirs(t, filepath.Join(real, "profiles", "b"))
				symlink(t, real, filepath.Join(root, "h"))
				root = filepath.Join(root, "h")
			} else {
				tt.setup(t, root)
			}
			p, err := Open(root, "b")
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && p.Home != filepath.Join(root, "profiles", "b") {
				t.Fatalf("home = %s", p.Home)
			}
		})
	}
}

func mkdirs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
