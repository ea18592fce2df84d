package systemdtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/pidsignal"
)

// killTree kills every process in the cgroup2 subtree dir and waits until it is empty. It uses
// cgroup.kill, and falls back to SIGKILL per PID read from the subtree where cgroup.kill is missing.
func killTree(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	useKill := true
	deadline := time.Now().Add(5 * time.Second)
	for {
		populated, err := populated(dir)
		if err != nil {
			return err
		}
		if !populated {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still populated after SIGKILL", dir)
		}
		if useKill {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
				useKill = false
			}
		}
		if !useKill {
			killEach(dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// populated reads "populated" from dir/cgroup.events.
func populated(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	ev, err := linux.ParseEvents(b)
	if err != nil {
		return false, fmt.Errorf("%s/cgroup.events: %w", dir, err)
	}
	return ev.Populated, nil
}

// killEach sends SIGKILL to every process listed in the subtree, each cgroup's members through
// internal/pidsignal (pinned by a pidfd and listed twice): a PID read from cgroup.procs is never passed to
// kill(2), where it could have gone to a stranger since the read.
func killEach(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		procs := filepath.Join(p, "cgroup.procs")
		list := func() ([]int, error) {
			b, err := os.ReadFile(procs)
			if err != nil {
				return nil, err
			}
			return linux.ParseProcs(b)
		}
		_, _ = pidsignal.Members(list, syscall.SIGKILL, map[int]bool{})
		return nil
	})
}

// removeTree removes the cgroup directory dir and all below it, deepest first, retrying EBUSY briefly
// (a cgroup whose last task just exited can be busy for a moment).
func removeTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	for _, d := range dirs {
		var rerr error
		for i := 0; i < 100; i++ {
			if rerr = os.Remove(d); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
				rerr = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if rerr != nil {
			return rerr
		}
	}
	return nil
}
