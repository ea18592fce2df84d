package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	mi "github.com/hlaunch/hlaunch/internal/mountinfo"
)

// rootAliases lists the other paths where this mount namespace shows the hermes root's files: a bind
// mount of the root or of a directory above it (the same file system at a second place, common with
// containers and /var/home-style layouts) shows the whole root again at <mount point>/<rest>, and a bind
// mount of a directory inside the root (profiles/, another profile's home) shows that part. The view
// covers each with an empty read-only tmpfs. A mount of the target home or of something inside it is
// left alone (it shows only the worker's own files), and so is anything under the root itself (the
// profile view replaces it). Read before the view is built, from the launcher's copy of the mount table.
func (s *Spec) rootAliases(rootFD int) ([]string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(rootFD, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: s.Root, Err: err}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("sandbox view: %w", err)
	}
	entries, err := mi.Parse(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox view: %w", err)
	}
	return aliasesIn(entries, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), s.Root, s.Home), nil
}

// aliasesIn is rootAliases on a parsed mount table, for the root's device maj:min.
func aliasesIn(entries []mi.Entry, maj, min uint32, root, home string) []string {
	// The mount that holds the root here: the last (visible) one of its device whose mount point is the
	// longest prefix of root. Its own Root gives the root's path inside the file system.
	holder := -1
	for i, e := range entries {
		if e.Major != maj || e.Minor != min || !pathUnder(root, e.MountPoint) {
			continue
		}
		if holder < 0 || len(e.MountPoint) >= len(entries[holder].MountPoint) {
			holder = i
		}
	}
	if holder < 0 {
		return nil // the device's mount is not in the table (a btrfs subvolume's anonymous device)
	}
	h := entries[holder]
	inFS := filepath.Join(h.Root, strings.TrimPrefix(root, h.MountPoint))
	homeInFS := filepath.Join(inFS, strings.TrimPrefix(home, root))
	var out []string
	for i, e := range entries {
		if i == holder || e.Major != maj || e.Minor != min || pathUnder(e.MountPoint, root) {
			continue
		}
		switch {
		case pathUnder(inFS, e.Root): // the whole root again, below this mount point
			alias := filepath.Join(e.MountPoint, strings.TrimPrefix(inFS, e.Root))
			if alias != root && !pathUnder(home, alias) {
				out = append(out, alias)
			}
		case pathUnder(e.Root, inFS) && !pathUnder(e.Root, homeInFS): // a part of the root, not of the home
			if !pathUnder(home, e.MountPoint) {
				out = append(out, e.MountPoint)
			}
		}
	}
	return out
}
