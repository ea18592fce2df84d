package records_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
	"golang.org/x/sys/unix"
)

// The one wording of a failed write of the sidecar's own files (its peer uids, its idempotency keys): for
// want of space (ENOSPC, EDQUOT) it is worker.ErrNoSpace, names the file and its directory and says what
// to do; any other failure is the file's name and the error, not ErrNoSpace.
func TestWriteErrorWording(t *testing.T) {
	for _, tc := range []struct {
		err     error
		want    string
		noSpace bool
	}{
		{&fs.PathError{Op: "write", Path: "/run/hlaunch/sidecar-peers/.tmp-1", Err: unix.ENOSPC},
			"no space for records: peer uid in /run/hlaunch/sidecar-peers: write /run/hlaunch/sidecar-peers/.tmp-1: no space left on device (free space there, or name another with --state-dir)", true},
		{&fs.PathError{Op: "open", Path: "/run/hlaunch/sidecar-peers/.tmp-2", Err: unix.EDQUOT},
			"no space for records: peer uid in /run/hlaunch/sidecar-peers: open /run/hlaunch/sidecar-peers/.tmp-2: disk quota exceeded (free space there, or name another with --state-dir)", true},
		{&fs.PathError{Op: "open", Path: "/run/hlaunch/sidecar-peers/.tmp-3", Err: unix.EACCES},
			"peer uid: open /run/hlaunch/sidecar-peers/.tmp-3: permission denied", false},
	} {
		got := records.WriteError("peer uid", "/run/hlaunch/sidecar-peers", tc.err)
		if got.Error() != tc.want {
			t.Errorf("WriteError(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if errors.Is(got, worker.ErrNoSpace) != tc.noSpace || !errors.Is(got, tc.err) {
			t.Errorf("WriteError(%v): errors.Is ErrNoSpace %v (want %v), wraps the write's error %v (want true)",
				tc.err, errors.Is(got, worker.ErrNoSpace), tc.noSpace, errors.Is(got, tc.err))
		}
	}
}
