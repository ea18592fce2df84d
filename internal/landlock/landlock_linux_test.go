package landlock

import (
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// onFreshThread runs f on a thread of its own that is thrown away afterwards (a goroutine that ends
// locked takes its thread with it), so the Landlock domain and no_new_privs it sets stay there.
func onFreshThread(f func() error) error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}

// TestRestrict: where the kernel has the scopes, a scoped thread can no longer connect to an abstract
// socket another domain listens on (EPERM), which an unscoped thread can.
func TestRestrict(t *testing.T) {
	if err := Supported(); err != nil {
		if ABI() >= ScopeABI {
			t.Fatalf("Supported: %v with ABI %d", err, ABI())
		}
		if err := onFreshThread(Restrict); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Restrict without scopes: %v, want ErrUnsupported", err)
		}
		return
	}
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	addr := &unix.SockaddrUnix{Name: "@hlaunch-landlock-test"}
	if err := unix.Bind(ln, addr); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 4); err != nil {
		t.Fatal(err)
	}
	dial := func() error {
		c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(c)
		return unix.Connect(c, addr)
	}
	if err := dial(); err != nil {
		t.Fatalf("unscoped connect: %v", err)
	}
	err = onFreshThread(func() error {
		if err := Restrict(); err != nil {
			return err
		}
		return dial()
	})
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("scoped connect to another domain's abstract socket: %v, want EPERM", err)
	}
}

// BenchmarkRestrict is the cost Restrict adds to a sandboxed launch (a ruleset, a restrict, a close),
// each on a fresh thread so that domains do not nest.
func BenchmarkRestrict(b *testing.B) {
	if Supported() != nil {
		b.Skip("no Landlock scopes")
	}
	b.Run("thread", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = onFreshThread(func() error { return nil })
		}
	})
	b.Run("thread+restrict", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := onFreshThread(Restrict); err != nil {
				b.Fatal(err)
			}
		}
	})
}
