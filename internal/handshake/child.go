package handshake

import (
	"errors"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Main is the stub's whole life: read the Config (the go-ahead), enter the sandbox if asked, and exec the
// target. It never returns. Exit 127 means the command was not found, 126 that it could not run, 125 any
// earlier failure; the parent learns the detail over the result pipe.
func Main() {
	// Capabilities and some sandbox steps are per thread: the thread that sets them must be the one that
	// execs.
	runtime.LockOSThread()
	unix.CloseOnExec(ConfigFD)
	unix.CloseOnExec(ResultFD)
	res := os.NewFile(ResultFD, "handshake-result")
	fail := func(stage string, err error, code int) {
		f := Failure{Stage: stage, Message: err.Error()}
		var errno unix.Errno
		if errors.As(err, &errno) {
			f.Errno = int(errno)
		}
		_ = WriteMsg(res, f)
		os.Exit(code)
	}
	var cfg Config
	if err := ReadMsg(os.NewFile(ConfigFD, "handshake-config"), &cfg); err != nil {
		// The parent went away before placing us: never run the target unplaced.
		os.Exit(125)
	}
	if len(cfg.Argv) == 0 {
		fail("config", errors.New("empty argv"), 125)
	}
	if cfg.Sandbox != nil {
		if err := cfg.Sandbox.Enter(); err != nil {
			fail("sandbox", err, 125)
		}
	}
	if cfg.Cwd != "" {
		if err := unix.Chdir(cfg.Cwd); err != nil {
			fail("chdir", &os.PathError{Op: "chdir", Path: cfg.Cwd, Err: err}, 125)
		}
	}
	path, err := LookPath(cfg.Argv[0], envPath(cfg.Env))
	if err != nil {
		fail("lookup", err, ExitCodeFor(err))
	}
	err = unix.Exec(path, cfg.Argv, cfg.Env)
	fail("exec", &os.PathError{Op: "execve", Path: path, Err: err}, ExitCodeFor(err))
}

func envPath(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return ""
}
