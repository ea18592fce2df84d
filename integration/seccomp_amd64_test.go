package integration

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// i386Exit42 is a whole static 32-bit ELF program: mov eax,1; mov ebx,42; int 0x80 - exit(42) through the
// i386 entry, whose audit architecture is not the filter's.
func i386Exit42() []byte {
	code := []byte{0xb8, 1, 0, 0, 0, 0xbb, 42, 0, 0, 0, 0xcd, 0x80}
	const base, ehsize, phsize = 0x08048000, 52, 32
	le := binary.LittleEndian
	b := append([]byte("\x7fELF\x01\x01\x01"), make([]byte, 9)...)
	b = le.AppendUint16(b, 2) // ET_EXEC
	b = le.AppendUint16(b, 3) // EM_386
	b = le.AppendUint32(b, 1)
	b = le.AppendUint32(b, base+ehsize+phsize) // entry
	b = le.AppendUint32(b, ehsize)             // program headers
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 0)
	for _, v := range []uint16{ehsize, phsize, 1, 0, 0, 0} {
		b = le.AppendUint16(b, v)
	}
	size := uint32(ehsize + phsize + len(code))
	for _, v := range []uint32{1, 0, base, base, size, size, 5, 0x1000} { // PT_LOAD, r-x
		b = le.AppendUint32(b, v)
	}
	return append(b, code...)
}

// A call through another audit architecture is killed, not answered: the table's numbers are x86-64's,
// and 1 is exit on i386 but write on x86-64. Without the filter the same program exits 42.
func TestSeccompKillsForeignArchitecture(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	dir, err := os.MkdirTemp(hostBase, "hlaunch-i386-") // /tmp and /var/tmp are private inside the sandbox
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	prog := filepath.Join(dir, "exit42")
	must(t, os.WriteFile(prog, i386Exit42(), 0o755))
	var ee *exec.ExitError
	if err := exec.Command(prog).Run(); !errors.As(err, &ee) || ee.ExitCode() != 42 {
		// A kernel without the 32-bit entry (IA32_EMULATION off) has nothing for the filter to kill.
		t.Logf("no i386 entry on this kernel (%v): nothing to kill", err)
		return
	}
	r := e.run("exec", "-p", "b", "--sandbox", "--scope", "none", "--", prog)
	if r.Code != 128+31 {
		t.Errorf("i386 exit(42) under the filter: exit %d (stderr %q), want %d (SIGSYS)", r.Code, r.Stderr, 128+31)
	}
	if r := e.run("exec", "-p", "b", "--sandbox", "--scope", "none", "--seccomp", "off", "--", prog); r.Code != 42 {
		t.Errorf("i386 exit(42) with --seccomp off: exit %d (stderr %q), want 42", r.Code, r.Stderr)
	}
}
