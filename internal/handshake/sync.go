package handshake

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/msgpipe"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
)

// The protocol, over two pipes the stub inherits as fds 3 and 4:
//
//	parent                                   stub (hlaunch __init)
//	  start stub, blocked reading fd 3  ---->
//	  place it (clone3 into v2, v1 joins,
//	  StartTransientUnit naming its PID)
//	  write Config (length-prefixed,   ---->  read Config: this IS the go-ahead
//	    its lossless JSON)
//	                                            enter sandbox, chdir, look up argv[0],
//	                                            install the seccomp filter (sandbox)
//	                                            execve(target)   (fd 4 is close-on-exec)
//	  read fd 4: EOF                     <----  exec succeeded
//	        or a Failure JSON            <----  something failed; the stub exits 126/127
//
// No byte is written to fd 4 on success, so the parent learns of a successful exec from EOF alone.
// In a sandbox the stub forks the target instead of exec'ing it and stays as the pid namespace's init;
// when the target ends, the init writes its wait status to fd 5 (StatusFD) and exits, and the parent's
// Proc.Wait returns that status (proc.Proc.ReportedBy).

// ConfigFD and ResultFD are the stub's inherited descriptors (internal/msgpipe's, which frames every
// message on them). StatusFD is the status pipe: a stub that stays as a sandbox's init writes its
// target's wait status there (proc.WriteStatus) right before it exits; nothing is written when the stub
// execs the target itself, or dies first (then its own status is the target's).
const (
	ConfigFD = msgpipe.ConfigFD
	ResultFD = msgpipe.ResultFD
	StatusFD = msgpipe.ResultFD + 1
)

// Config is everything the stub needs to become the target program. It travels as JSON whose byte
// strings are byte arrays (config_codec.go), which keeps every byte of argv, the environ and the paths.
type Config struct {
	Argv    []string
	Env     []string
	Cwd     string
	Sandbox *sandbox.Spec
}

// Failure is the stub's report of why the target did not start.
type Failure struct {
	Stage   string `json:"stage"` // "config", "sandbox", "chdir", "lookup", "seccomp", "exec"
	Errno   int    `json:"errno,omitempty"`
	Message string `json:"message"`
}

// ErrFailed wraps every Failure the stub reports.
var ErrFailed = errors.New("child failed before exec")

// Error describes a Failure; it is returned by the parent side wrapped with ErrFailed.
type Error struct{ Failure }

// Error says at which stage the stub failed and why.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Stage, e.Message) }

// Unwrap makes errors.Is(err, ErrFailed) and errors.Is(err, syscall.ENOENT) work.
func (e *Error) Unwrap() []error {
	errs := []error{ErrFailed}
	if e.Errno != 0 {
		errs = append(errs, syscall.Errno(e.Errno))
	}
	return errs
}

// readConfig reads the config Release sent: one frame holding its encoding (Config.MarshalBinary,
// the one encoder); io.EOF when the parent closed the pipe without one.
func readConfig(r io.Reader) (Config, error) {
	var cfg Config
	b, err := msgpipe.ReadFrame(r)
	if err == nil {
		err = cfg.UnmarshalBinary(b)
	}
	return cfg, err
}
