package pidsignal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The worker's lock excludes a second holder (another open file description, as in another process)
// until the first releases it; a waiter gives up when its context ends; a symbolic link in the lock's
// name is refused, not followed.
func TestLockFileExcludes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w-0123456789ab.lock")
	unlock, err := LockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := LockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second LockFile while held = %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := LockFile(context.Background(), path)
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter never got the lock after it was released")
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := LockFile(context.Background(), link); err == nil {
		t.Fatal("LockFile followed a symbolic link")
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LockFile created the link's target: %v", err)
	}
}
