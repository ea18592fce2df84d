package fingerprint

import (
	"errors"
	"sync"
	"testing"
)

// KeepBootID reads the boot id once and keeps it; a read that failed or gave an empty id is not kept.
func TestKeepBootID(t *testing.T) {
	answers := []struct {
		v   string
		err error
	}{{"", errors.New("EIO")}, {" \n", nil}, {"4fb34644-cc97-4bf3-b877-d079839c1f24\n", nil}, {"another-boot", nil}}
	calls := 0
	s := Sources{BootID: func() (string, error) {
		a := answers[min(calls, len(answers)-1)]
		calls++
		return a.v, a.err
	}}.KeepBootID()
	if _, err := s.bootID(); err == nil {
		t.Fatal("a failed read: no error")
	}
	if _, err := s.bootID(); err == nil {
		t.Fatal("an empty boot id: no error")
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := s.bootID(); err != nil || v != "4fb34644-cc97-4bf3-b877-d079839c1f24" {
				t.Errorf("bootID = %q, %v", v, err)
			}
		}()
	}
	wg.Wait()
	if calls != 3 {
		t.Errorf("the source was read %d times, want 3 (two failures, then once)", calls)
	}
}
