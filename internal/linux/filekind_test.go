package linux

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFileKind names the type of real files of each kind (lstat, so a link is a link), and of the modes no
// test file here has: a block device and a type the kernel does not define.
func TestFileKind(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	fifo := filepath.Join(dir, "fifo")
	sock := filepath.Join(dir, "sock")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for path, want := range map[string]string{
		reg: "a regular file", dir: "a directory", link: "a symbolic link", fifo: "a FIFO", sock: "a socket",
		"/dev/null": "a character device",
	} {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		if got := FileKind(st.Mode); got != want {
			t.Errorf("FileKind(lstat %s) = %q, want %q", path, got, want)
		}
	}
	for mode, want := range map[uint32]string{unix.S_IFBLK | 0o660: "a block device", 0o030000: "mode 030000"} {
		if got := FileKind(mode); got != want {
			t.Errorf("FileKind(%#o) = %q, want %q", mode, got, want)
		}
	}
}
