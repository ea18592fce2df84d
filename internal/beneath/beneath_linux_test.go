package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// tree makes dir/{sub/f, f, up -> .., abs -> /etc, lsub -> sub, lf -> f, fifo}.
func tree(t *testing.T) (string, int) {
	t.Helper()
	d := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(d, "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(d, "sub", "f"), []byte("x"), 0o600))
	must(t, os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600))
	must(t, os.Symlink("..", filepath.Join(d, "up")))
	must(t, os.Symlink("/etc", filepath.Join(d, "abs")))
	must(t, os.Symlink("sub", filepath.Join(d, "lsub")))
	must(t, os.Symlink("f", filepath.Join(d, "lf")))
	must(t, unix.Mkfifo(filepath.Join(d, "fifo"), 0o600))
	fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return d, fd
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenAndWalkAgree: openat2 and the component walk for old kernels give the same answers.
func TestOpenAndWalkAgree(t *testing.T) {
	_, dir := tree(t)
	opens := map[string]func(rel string, flags int) (int, error){
		"openat2": func(rel string, flags int) (int, error) { return Open(dir, rel, flags, 0, rel) },
		"walk": func(rel string, flags int) (int, error) {
			return walk(dir, rel, flags|unix.O_CLOEXEC, 0, rel)
		},
	}
	for how, open := range opens {
		for _, tt := range []struct {
			rel    string
			flags  int
			unsafe bool
			ok     bool
		}{
			{"f", unix.O_RDONLY, false, true},
			{"sub/f", unix.O_RDONLY, false, true},
			{"./sub/./f", unix.O_PATH, false, true},
			{"sub", unix.O_PATH | unix.O_DIRECTORY, false, true},
			{".", unix.O_PATH | unix.O_DIRECTORY, false, true},
			{"lf", unix.O_RDONLY, true, false},
			{"lf", unix.O_PATH, true, false},
			{"lsub/f", unix.O_RDONLY, true, false},
			{"lsub", unix.O_PATH | unix.O_DIRECTORY, true, false},
			{"up/x", unix.O_RDONLY, true, false},
			{"abs/passwd", unix.O_RDONLY, true, false},
			{"../x", unix.O_RDONLY, true, false},
			{"sub/../../x", unix.O_RDONLY, true, false},
			{"/etc/passwd", unix.O_RDONLY, true, false},
			{"nothere", unix.O_RDONLY, false, false},
		} {
			fd, err := open(tt.rel, tt.flags)
			if tt.ok {
				if err != nil {
					t.Errorf("%s %q: %v", how, tt.rel, err)
				} else {
					unix.Close(fd)
				}
				continue
			}
			if err == nil {
				unix.Close(fd)
				t.Errorf("%s %q: opened", how, tt.rel)
				continue
			}
			var pe *os.PathError
			if !errors.As(err, &pe) || IsUnsafe(err) != tt.unsafe {
				t.Errorf("%s %q: %v, unsafe %v, want unsafe %v", how, tt.rel, err, IsUnsafe(err), tt.unsafe)
			}
		}
	}
}

func TestLstatReopen(t *testing.T) {
	_, dir := tree(t)
	st, err := Lstat(dir, "lf", "lf")
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Fatalf("Lstat(lf) = %v, %v: want the link itself", st.Mode, err)
	}
	if _, err := Lstat(dir, "lsub/f", "lsub/f"); !IsUnsafe(err) {
		t.Fatalf("Lstat through a link: %v", err)
	}
	if _, err := Lstat(dir, "nothere", "nothere"); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Lstat(nothere): %v", err)
	}
	p, err := Open(dir, "sub/f", unix.O_PATH, 0, "sub/f")
	must(t, err)
	defer unix.Close(p)
	r, err := Reopen(p, unix.O_RDONLY, "sub/f")
	must(t, err)
	buf := make([]byte, 4)
	if n, _ := unix.Read(r, buf); n != 1 || buf[0] != 'x' {
		t.Fatalf("reopened file reads %q", buf[:n])
	}
	unix.Close(r)
}
