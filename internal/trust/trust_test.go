package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	base := t.TempDir()
	bin := filepath.Join(base, "hlaunch")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Check(bin); err != nil {
		t.Fatalf("the test's own file in its own directory: %v", err)
	}
	refused := func(how, want string) {
		t.Helper()
		if err := Check(bin); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want ErrUntrusted saying %q", how, err, want)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(bin, 0o775))
	refused("a group-writable binary", bin+": not trusted: mode 0775")
	must(os.Chmod(bin, 0o755))
	must(os.Chmod(base, 0o777))
	refused("a world-writable directory", base+": not trusted: mode 0777")
	must(os.Chmod(base, 0o777|os.ModeSticky))
	if err := Check(bin); err != nil {
		t.Errorf("a sticky directory (others cannot rename the file there): %v", err)
	}
	must(os.Chmod(base, 0o755))
	link := filepath.Join(base, "link")
	must(os.Symlink(bin, link))
	if err := Check(link); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a symbolic link: %v; want ErrUntrusted", err)
	}
	if err := Check(filepath.Join(base, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v; want ErrNotExist", err)
	}
	if os.Geteuid() == 0 { // only root can hand a directory to another uid
		must(os.Chown(base, 12345, 12345))
		refused("a directory another uid owns", base+": not trusted: owned by uid 12345")
	}
}
