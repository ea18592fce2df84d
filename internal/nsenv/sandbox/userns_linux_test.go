package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecideUserNS: every knob that forbids an unprivileged user namespace refuses a non-root caller
// and names itself; root is never refused; a knob the kernel lacks forbids nothing.
func TestDecideUserNS(t *testing.T) {
	const (
		maxNS    = "/proc/sys/user/max_user_namespaces"
		clone    = "/proc/sys/kernel/unprivileged_userns_clone"
		apparmor = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	)
	open := map[string]string{maxNS: "96365\n", clone: "1\n", apparmor: "0\n"}
	with := func(file, v string) map[string]string {
		m := map[string]string{}
		for k, x := range open {
			m[k] = x
		}
		if v == "" {
			delete(m, file)
		} else {
			m[file] = v
		}
		return m
	}
	tests := []struct {
		name    string
		knobs   map[string]string
		refused string // the knob the refusal names; "" = allowed
	}{
		{"all open", open, ""},
		{"no knob at all", map[string]string{}, ""},
		{"max_user_namespaces 0", with(maxNS, "0\n"), maxNS},
		{"unprivileged_userns_clone 0", with(clone, "0\n"), clone},
		{"apparmor restricts", with(apparmor, "1\n"), apparmor},
		{"no unprivileged_userns_clone (upstream kernel)", with(clone, ""), ""},
		{"no apparmor knob", with(apparmor, ""), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				v, ok := tt.knobs[p]
				if !ok {
					return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
				}
				return []byte(v), nil
			}
			u := decideUserNS(1000, read)
			if tt.refused == "" {
				if u.Err != nil || u.Detail == "" {
					t.Fatalf("uid 1000: got %+v, want allowed with a detail", u)
				}
			} else if !errors.Is(u.Err, ErrNoUserNamespace) || !strings.Contains(u.Err.Error(), tt.refused) {
				t.Fatalf("uid 1000: got %+v, want ErrNoUserNamespace naming %s", u, tt.refused)
			}
			if r := decideUserNS(0, read); r.Err != nil || !strings.HasPrefix(r.Detail, "not needed") {
				t.Fatalf("root: got %+v, want allowed (root needs no user namespace)", r)
			}
		})
	}
}

// TestUserNSDecidedOnce: no other Go file of the module reads a user-namespace knob. The launcher's
// refusal, the clone flags and `hlaunch doctor` all go through UserNamespaces; a second reading of the
// knobs lets them disagree (doctor saying yes for root on a host whose max_user_namespaces is 0, or
// missing AppArmor's restriction).
func TestUserNSDecidedOnce(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	knobs := []string{"max_user_namespaces", "unprivileged_userns_clone", "apparmor_restrict_unprivileged_userns"}
	self := filepath.Join(root, "internal", "nsenv", "sandbox", "userns_linux.go")
	var scanned int
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || p == self {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scanned++
		for _, k := range knobs {
			if strings.Contains(string(b), k) {
				t.Errorf("%s reads %s: decide user namespaces with sandbox.UserNamespaces only", p, k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 50 {
		t.Fatalf("scanned %d Go files under %s: not the module", scanned, root)
	}
}
