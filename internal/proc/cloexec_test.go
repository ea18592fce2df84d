package proc

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The walk that stands in for close_range(CLOSE_RANGE_CLOEXEC) on kernels 5.7-5.10 marks an inherited
// descriptor close-on-exec: on such kernels close_range fails, and without the walk every inherited
// descriptor would reach the worker.
func TestCloexecByWalkMarksInherited(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := int(r.Fd())
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil { // as if inherited without the flag
		t.Fatal(err)
	}
	if err := cloexecByWalk(3); err != nil {
		t.Fatal(err)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("fd %d not close-on-exec after the walk", fd)
	}
}
