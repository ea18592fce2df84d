package fingerprint

import (
	"fmt"
	"io"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// ReadStartTime returns field 22 of a /proc/<pid>/stat line (internal/linux parses it): the process's start
// time in clock ticks since boot. Malformed text is ErrMalformed.
//
// The line is "pid (comm) state ppid ...", and comm is chosen by the process: it may hold spaces, ')' and
// newlines. Fields are therefore counted after the LAST ')' in the line. hermes splits the whole line on
// spaces and takes index 21; for a comm with whitespace that reads another field, so a hermes row for such
// a process never matches here and is refused as recycled (a refusal, never a wrong signal). For every comm
// without whitespace both give the same number, so hermes' stored fingerprints keep working.
func ReadStartTime(r io.Reader) (uint64, error) {
	st, err := linux.ReadStat(r)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return st.Start, nil
}
