package shim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/records"
	"golang.org/x/sys/unix"
)

// TestLogCopyRotates: what a worker writes into the pipe reaches the log, which the copy rotates at its
// limit while the writes go on (one old file), and the figures account for every byte. The pipe's write
// end, the worker's stdout, is blocking: a writer faster than the copy waits, never gets EAGAIN.
func TestLogCopyRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.log")
	const max = 256 << 10
	c, w, err := startLogCopy(path, max, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fl, err := unix.FcntlInt(w.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("the worker's end of the log pipe: flags %#x, %v; want blocking", fl, err)
	}
	const total = 2<<20 + 123
	chunk := bytes.Repeat([]byte("x"), 10000)
	for n := 0; n < total; {
		k := min(len(chunk), total-n)
		if _, err := w.Write(chunk[:k]); err != nil {
			t.Fatalf("write after %d bytes: %v", n, err)
		}
		n += k
	}
	w.Close()
	st := c.stop()
	if st.Bytes != total || st.Dropped != 0 || st.Error != "" {
		t.Errorf("figures %+v, want %d bytes written and nothing dropped", st, total)
	}
	if st.Rotations < total/(max+logChunk) {
		t.Errorf("%d rotations for %d bytes at a limit of %d", st.Rotations, total, max)
	}
	for _, p := range []string{path, path + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > max+logChunk {
			t.Errorf("%s: %d bytes, more than the limit (%d) and one chunk", p, fi.Size(), max)
		}
	}
}

// TestLogCopyRotationRefusesLink: a worker that swaps its log's directory for a symbolic link while it
// runs (the directory is often its profile's logs/, which it can write) gets its output dropped at the
// next rotation, never a file created or appended to where the link points.
func TestLogCopyRotationRefusesLink(t *testing.T) {
	base := t.TempDir()
	logs := filepath.Join(base, "logs")
	target := t.TempDir()
	if err := os.Mkdir(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(logs, "w.log")
	const max = 64 << 10
	c, w, err := startLogCopy(path, max, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte("a"), max)); err != nil {
		t.Fatal(err)
	}
	// The first chunk is in the log once the file has reached the limit.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if fi, err := os.Stat(path); err == nil && fi.Size() >= max {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the copy never wrote the first chunk")
		}
	}
	if err := os.Rename(logs, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, logs); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("through the link\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st := c.stop()
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("the rotation created %v where the link points", ents)
	}
	if st.Dropped != int64(len("through the link\n")) || !strings.Contains(st.Error, "symbolic link") {
		t.Errorf("figures %+v, want the write after the swap dropped and why", st)
	}
}

// TestLogCopyPublishes: a rotation is published to the running record (the latest figures), and nothing
// is published once stop has returned.
func TestLogCopyPublishes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.log")
	const max = 64 << 10
	c, w, err := startLogCopy(path, max, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan records.LogStats, 16)
	stop := c.publish(func(st records.LogStats) { got <- st })
	if _, err := w.Write(bytes.Repeat([]byte("p"), 3*max)); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-got:
		if st.Rotations < 1 || st.Bytes < max {
			t.Errorf("published %+v, want a rotation after %d bytes", st, max)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no figures published after a rotation")
	}
	stop()
	n := len(got)
	if _, err := w.Write(bytes.Repeat([]byte("q"), 3*max)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st := c.stop()
	if len(got) != n {
		t.Errorf("figures published after stop: %d more", len(got)-n)
	}
	if st.Bytes != 6*max {
		t.Errorf("final figures %+v, want %d bytes", st, 6*max)
	}
}
