package launcher

import (
	"fmt"
	"os"
	"path/filepath"
)

// LogRotateSize is the default size at which a worker log is rotated when a launch opens it: the old file
// becomes <log>.1 (one old file kept), as hermes does for kanban logs. Spec.LogMax changes it.
const LogRotateSize = 2 << 20

// StdioInherit is Spec.Stdio's one value: the worker gets the caller's descriptors.
const StdioInherit = "inherit"

// logStdio returns the stdio for the child: stdout and stderr go to spec.Log when it is set, else to
// stdio's own. The returned function closes what was opened here.
func logStdio(spec Spec, stdio Stdio) (Stdio, func(), error) {
	if spec.Log == "" {
		return stdio, func() {}, nil
	}
	f, err := openLog(spec.Log, spec.LogMax)
	if err != nil {
		return Stdio{}, nil, err
	}
	stdio.Stdout, stdio.Stderr = f, f
	return stdio, func() { f.Close() }, nil
}

// openLog opens path for appending, rotating it first when it has reached max bytes (0: LogRotateSize).
func openLog(path string, max int64) (*os.File, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: --log %q must be absolute", ErrInvalid, path)
	}
	if max <= 0 {
		max = LogRotateSize
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%w: --log: %w", ErrInvalid, err)
	}
	if st, err := os.Stat(path); err == nil && st.Size() >= max {
		if err := os.Rename(path, path+".1"); err != nil {
			return nil, fmt.Errorf("--log: rotate: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: --log: %w", ErrInvalid, err)
	}
	return f, nil
}
