package launcher

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// Holders that remove the lock file before they let go still exclude each other: one that locked a file
// removed meanwhile locks what the path names now. Without the re-check two holders overlap (the one on
// the removed file and the one on the new file), and no file is left once all are done.
func TestLockKeyFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock")
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				f, err := lockKeyFile(context.Background(), path)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				_ = os.Remove(path)
				f.Close()
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times two holders had the key's lock at once", n)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the lock file is left: %v", err)
	}
}
