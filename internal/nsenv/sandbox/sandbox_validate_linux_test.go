package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSandboxValidate(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "profiles", "a"), filepath.Join(root, "profiles", "b", "ws"), outside, filepath.Join(base, "real")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	// c is a profile home that is a link out of the root; b/escape a link from b's home to a's.
	must(t, os.Symlink(outside, filepath.Join(root, "profiles", "c")))
	must(t, os.Symlink(filepath.Join(root, "profiles", "a"), filepath.Join(root, "profiles", "b", "escape")))
	must(t, os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")))
	home := filepath.Join(root, "profiles", "b")
	ok := func() Spec { return Spec{Root: root, Home: home, Cwd: filepath.Join(home, "ws")} }
	cases := []struct {
		name string
		mod  func(*Spec)
		want error
	}{
		{"valid named", func(*Spec) {}, nil},
		{"valid default", func(s *Spec) { s.Home = root; s.Cwd = outside }, nil},
		{"valid rw, net none, missing hide", func(s *Spec) {
			s.RW = []string{outside}
			s.Net = NetNone
			s.Hide = []string{filepath.Join(base, "nope", "sock")}
		}, nil},
		{"relative root", func(s *Spec) { s.Root = "root" }, ErrInvalid},
		{"unclean home", func(s *Spec) { s.Home = root + "/profiles/../profiles/b" }, ErrInvalid},
		{"root is /", func(s *Spec) { s.Root = "/"; s.Home = "/" }, ErrInvalid},
		{"home outside root", func(s *Spec) { s.Home = outside }, ErrInvalid},
		{"home two levels down", func(s *Spec) { s.Home = filepath.Join(home, "ws") }, ErrInvalid},
		{"home is a tombstone dir", func(s *Spec) { s.Home = filepath.Join(root, "profiles", ".deleted") }, ErrInvalid},
		{"rw is the root", func(s *Spec) { s.RW = []string{root} }, ErrInvalid},
		{"rw is another profile", func(s *Spec) { s.RW = []string{filepath.Join(root, "profiles", "a")} }, ErrInvalid},
		{"default: cwd in a profile", func(s *Spec) { s.Home = root; s.Cwd = filepath.Join(root, "profiles", "a") }, ErrInvalid},
		{"relative rw", func(s *Spec) { s.RW = []string{"rw"} }, ErrInvalid},
		// A writable "/" or ancestor of the root: the clone over "/" would sit above every later mount.
		{"cwd is /", func(s *Spec) { s.Cwd = "/" }, ErrInvalid},
		{"rw is /", func(s *Spec) { s.RW = []string{"/"} }, ErrInvalid},
		{"rw holds the root", func(s *Spec) { s.RW = []string{base} }, ErrInvalid},
		{"default: cwd holds the root", func(s *Spec) { s.Home = root; s.Cwd = base }, ErrInvalid},
		{"rw in /sys (a writable cgroupfs)", func(s *Spec) { s.RW = []string{"/sys/fs/cgroup"} }, ErrInvalid},
		{"rw in /proc", func(s *Spec) { s.RW = []string{"/proc/sys"} }, ErrInvalid},
		{"empty rw", func(s *Spec) { s.RW = []string{""} }, ErrInvalid},
		{"hide holds the home", func(s *Spec) { s.Hide = []string{filepath.Join(root, "profiles")} }, ErrInvalid},
		{"hide /", func(s *Spec) { s.Hide = []string{"/"} }, ErrInvalid},
		{"bad net", func(s *Spec) { s.Net = "bridge" }, ErrInvalid},
		{"negative uid", func(s *Spec) { s.SetUser = true; s.UID = -1 }, ErrInvalid},
		{"home is a link out of the root", func(s *Spec) { s.Home = filepath.Join(root, "profiles", "c"); s.Cwd = "" }, ErrUnsafePath},
		{"cwd through a link in the home", func(s *Spec) { s.Cwd = filepath.Join(home, "escape") }, ErrUnsafePath},
		{"rw through a link", func(s *Spec) { s.RW = []string{filepath.Join(base, "link")} }, ErrUnsafePath},
		{"hide through a link", func(s *Spec) { s.Hide = []string{filepath.Join(base, "link")} }, ErrUnsafePath},
		{"root through a link", func(s *Spec) {
			s.Root = filepath.Join(base, "link")
			s.Home = s.Root
			s.Cwd = ""
		}, ErrUnsafePath},
		{"missing home", func(s *Spec) { s.Home = filepath.Join(root, "profiles", "zz"); s.Cwd = "" }, os.ErrNotExist},
		{"missing rw", func(s *Spec) { s.RW = []string{filepath.Join(base, "nope")} }, os.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok()
			c.mod(&s)
			err := s.Validate()
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Validate() = %v, want %v", err, c.want)
			}
		})
	}
}

func TestPathUnder(t *testing.T) {
	cases := []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/a", "/a/b", false}, {"/x", "/", true},
	}
	for _, c := range cases {
		if got := pathUnder(c.p, c.dir); got != c.want {
			t.Errorf("pathUnder(%q, %q) = %v", c.p, c.dir, got)
		}
	}
}

func TestSandboxSysProcAttr(t *testing.T) {
	want := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	for _, net := range []string{"", NetHost, NetNone} {
		attr := &syscall.SysProcAttr{Setsid: true, Cloneflags: unix.CLONE_NEWCGROUP}
		(&Spec{Net: net}).SysProcAttr(attr)
		if attr.Cloneflags&want != want || attr.Cloneflags&unix.CLONE_NEWCGROUP == 0 || !attr.Setsid {
			t.Errorf("net %q: flags %#x lost or missing namespaces", net, attr.Cloneflags)
		}
		if got := attr.Cloneflags&unix.CLONE_NEWNET != 0; got != (net == NetNone) {
			t.Errorf("net %q: CLONE_NEWNET %v", net, got)
		}
		userns := attr.Cloneflags&unix.CLONE_NEWUSER != 0
		if os.Geteuid() == 0 && userns {
			t.Errorf("root launcher got a user namespace")
		}
		if userns && (len(attr.UidMappings) != 1 || attr.UidMappings[0].ContainerID != 0 || attr.GidMappingsEnableSetgroups) {
			t.Errorf("user namespace mappings %+v", attr.UidMappings)
		}
	}
}

// Enter must refuse to run in the host's namespaces: it would remount the host read-only. The test
// process is not PID 1, so this is safe to call here.
func TestEnterRefusesHostNamespaces(t *testing.T) {
	root := t.TempDir()
	s := &Spec{Root: root, Home: root}
	if err := s.Enter(); !errors.Is(err, ErrNotIsolated) {
		t.Fatalf("Enter() in the host's namespaces = %v, want ErrNotIsolated", err)
	}
}
