// Command hlaunch-sidecar is the gateway's daemon: it serves the HTTP+JSON worker API on a Unix socket
// (docs/sidecar.md). Users start it as `hlaunch sidecar ...`, which execs this binary in place.
//
// It is a binary of its own so that the HTTP server's packages (net/http, crypto/tls) are not linked into
// hlaunch: every hlaunch process - the CLI, the init stub, each worker's shim - would pay their package
// init (ADR 0006). The workers' shims and init stubs are the lean hlaunch binary installed beside this one.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/flagerr"
	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/launchflag"
	"github.com/hlaunch/hlaunch/internal/retentionflag"
	"github.com/hlaunch/hlaunch/internal/selfguard"
	"github.com/hlaunch/hlaunch/internal/sidecar"
	"github.com/hlaunch/hlaunch/internal/trust"
	"github.com/hlaunch/hlaunch/internal/version"
	"github.com/hlaunch/hlaunch/internal/view"
	"github.com/hlaunch/hlaunch/internal/worker"
)

func main() {
	// The sidecar holds the environment it was started with (the gateway's) for as long as it runs, and
	// the workers it spawns unsandboxed are of its uid: /proc/<sidecar>/environ must show them nothing.
	if err := selfguard.Hide(); err != nil {
		fmt.Fprintf(os.Stderr, "hlaunch: %v\n", err)
		os.Exit(worker.ExitInternal)
	}
	cmd := newSidecarCmd()
	err := cmd.Execute()
	if err == nil {
		return
	}
	// One line, as hlaunch prints it: exit 125 already says "invalid", so its lead is not repeated.
	fmt.Fprintf(os.Stderr, "hlaunch: %s\n", strings.TrimPrefix(err.Error(), worker.ErrInvalid.Error()+": "))
	os.Exit(worker.ExitCode(err))
}

// invalidf is bad input: exit 125, like every hlaunch command.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", worker.ErrInvalid, fmt.Sprintf(format, args...))
}

// hlaunchBinary is the hlaunch binary installed beside this one: it runs the workers' shims and init
// stubs. Without it no worker could start, so its absence is an error at start-up, not at the first spawn.
func hlaunchBinary() (string, error) {
	p, err := trust.Beside("hlaunch")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: sidecar: no hlaunch binary beside this one: %w", worker.ErrInvalid, err)
	case err != nil:
		// It runs every spawn's shim: whoever can replace it runs code as this sidecar's uid.
		return "", fmt.Errorf("%w: sidecar: the hlaunch binary beside this one: %w (install both where only root or this uid can write)", worker.ErrInvalid, err)
	}
	return p, nil
}

// sidecarFlags are the flags of `hlaunch sidecar`. The placement flags (exec's, launchflag.AddPlacement)
// become launcher.Config.Defaults: they fill what a spawned spec leaves empty, each where it applies.
type sidecarFlags struct {
	dirs                launchflag.Dirs
	socket, socketGroup string
	placement           launchflag.Placement
	workerLimits        launchflag.DefaultLimits
	maxBody             int64
	pollInterval        time.Duration
	slowPoll            time.Duration
	warm                int
	retention           launcher.Retention
	gcInterval          time.Duration
	allowSeccompOff     bool
	allowAs             bool
	limits              sidecarLimits
}

// sidecarLimits are the bounds on what the socket's peers may hold (docs/sidecar.md, "Limits").
type sidecarLimits struct {
	maxConns, maxConnsPerUID, maxStreams, maxStreamsPerUID, maxWorkers, maxWorkersPerUID, streamQueue int
	headerTimeout, bodyTimeout, idleTimeout, streamWriteTimeout                                       time.Duration
}

// newSidecarCmd is the daemon's whole command line (see docs/sidecar.md).
func newSidecarCmd() *cobra.Command {
	f := &sidecarFlags{}
	cmd := &cobra.Command{
		Use:           "hlaunch-sidecar [--socket PATH] [flags]",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Short:         "Serve the HTTP+JSON worker API on a Unix socket (spawn, track, re-adopt)",
		Long: `sidecar serves the worker API (docs/sidecar.md) on a Unix socket created 0600, or 0660 with
--socket-group. Only the socket owner, root and members of --socket-group are served (SO_PEERCRED).
Every spawn is detached under a shim, so workers outlive the sidecar; on start it re-adopts every record in
the state directory. Under systemd it supports Type=notify and socket activation (the units installed in
share/hlaunch/systemd beside the binaries). The API, its error codes, /v1/metrics and the log lines are in
share/doc/hlaunch/sidecar.md.`,
		Example: `  # At the default socket, whose directory it makes: /run/hlaunch/sidecar.sock for root.
  hlaunch sidecar --scope auto --warm 2
  hlaunch sidecar --socket-group hermes --scope systemd --require-scope
  curl --unix-socket /run/hlaunch/sidecar.sock http://sidecar/v1/health`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return invalidf("%s: unexpected argument %q", cmd.CommandPath(), args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd)
		},
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	// A flag error is bad input worded as hlaunch words it: one line naming the flag (exit 125).
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return invalidf("sidecar: %s", flagerr.Message(c, err))
	})
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(newEventsCmd())
	cmd.AddCommand(buildCommands()...)
	fs := cmd.Flags()
	launchflag.AddDirs(fs, &f.dirs)
	fs.StringVar(&f.socket, "socket", "", "Unix socket path (default: /run/hlaunch/sidecar.sock for root, else $XDG_RUNTIME_DIR/hlaunch/sidecar.sock)")
	fs.StringVar(&f.socketGroup, "socket-group", "", "make the socket 0660 for this group (name or gid) and serve its members")
	launchflag.AddPlacement(fs, &f.placement, launchflag.ForSpawns)
	launchflag.AddDefaultLimits(fs, &f.workerLimits)
	fs.Int64Var(&f.maxBody, "max-body", sidecar.DefaultMaxBody, "largest request body in bytes (larger: 413)")
	fs.Var(worker.NewDurationFlag(&f.pollInterval, sidecar.DefaultPollInterval), "poll-interval", "shortest time between two checks of the worker records (exits are noticed through inotify)")
	fs.Var(worker.NewDurationFlag(&f.slowPoll, sidecar.DefaultSlowPoll), "slow-poll", "longest time between two checks of the worker records")
	retentionflag.Add(fs, &f.retention)
	fs.Var(worker.NewDurationFlag(&f.gcInterval, sidecar.DefaultGCInterval), "gc-interval", "how often the sidecar collects ended workers and prunes the ledger by the retention flags (off the spawn path)")
	fs.BoolVar(&f.allowSeccompOff, "allow-seccomp-off", false, `serve sandboxed spawns whose spec says "seccomp": "off" (refused by default)`)
	fs.BoolVar(&f.allowAs, "allow-as", false, `serve spawns whose spec "user" names other ids than the profile home's owner and group (refused by default: each worker runs as its home's owner)`)
	addLimitFlags(fs, &f.limits)
	fs.IntVar(&f.warm, "warm", 0, "worker slots kept ready for spawns of the default placement (cgroup or scope made, shim started; ADR 0007), 0..64")
	return cmd
}

// maxWarm bounds --warm: each slot is an idle shim and, for scopes, a unit (ADR 0007).
const maxWarm = 64

func defaultSocket() string {
	if os.Geteuid() == 0 {
		return filepath.Join(view.RootSidecarDir, "sidecar.sock")
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "hlaunch", "sidecar.sock")
	}
	return ""
}

func (f *sidecarFlags) run(cmd *cobra.Command) error {
	explicit := f.socket != ""
	if f.socket == "" {
		f.socket = defaultSocket()
	}
	if f.socket == "" && os.Getenv("LISTEN_FDS") == "" {
		return invalidf("sidecar: --socket is required (no XDG_RUNTIME_DIR to default to)")
	}
	var placementErr *worker.FieldError
	if errors.As(f.placement.Check(), &placementErr) {
		return invalidf("sidecar: %s", placementErr.Msg)
	}
	defaultLimits, err := f.workerLimits.Limits()
	if errors.As(err, &placementErr) {
		return invalidf("sidecar: %s", placementErr.Msg)
	}
	if err != nil {
		return invalidf("sidecar: %v", err)
	}
	if f.warm < 0 || f.warm > maxWarm {
		return invalidf("sidecar: --warm %d: want 0..%d", f.warm, maxWarm)
	}
	if err := retentionflag.Check(f.retention); err != nil {
		return fmt.Errorf("sidecar: %w", err)
	}
	if f.gcInterval < time.Millisecond {
		return invalidf("sidecar: --gc-interval %s: want at least 1ms", f.gcInterval)
	}
	if err := f.limits.check(cmd.Flags().Changed); err != nil {
		return err
	}
	if f.pollInterval < time.Millisecond || f.slowPoll < f.pollInterval {
		return invalidf("sidecar: want 1ms <= --poll-interval (%s) <= --slow-poll (%s)", f.pollInterval, f.slowPoll)
	}
	var hide []string
	if f.socket != "" {
		abs, err := filepath.Abs(f.socket)
		if err != nil {
			return invalidf("sidecar: --socket %q: %v", f.socket, err)
		}
		f.socket = abs
		// The default socket's directory (/run/hlaunch, $XDG_RUNTIME_DIR/hlaunch) is made when missing; a
		// --socket in a directory that does not exist is a typo, not a directory to create.
		if dir := filepath.Dir(abs); explicit {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return invalidf("sidecar: --socket %s: directory %s does not exist (create it, or leave --socket out for the default)", f.socket, dir)
			}
		}
		// A sandboxed worker must not reach the API that could spawn or signal its siblings. The directory,
		// not the socket: a restarted sidecar renames its new socket into place, which would undo a
		// mount over the file in every sandbox that was made before.
		hide = append(hide, filepath.Dir(abs))
	}
	self, err := hlaunchBinary()
	if err != nil {
		return err
	}
	// Only the flags given: a default left out stays the launcher's own (Spec.withDefaults).
	var defaults worker.Spec
	f.placement.Apply(cmd.Flags(), &defaults)
	defaults.Limits = defaultLimits
	cfg := f.dirs.Config()
	cfg.Stderr = cmd.ErrOrStderr()
	cfg.Hide = hide
	cfg.Self = self
	cfg.WorkerLogs = true // every worker without a log of its own gets one (docs/sidecar.md)
	cfg.KeepBus = true    // one connection pair to the manager for every spawn, not two dials per spawn
	cfg.Defaults = defaults
	cfg.OwnerOnly = !f.allowAs // a caller chooses the worker's ids only when the operator allowed it
	l, err := launcher.New(cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	srv, err := sidecar.New(sidecar.Config{
		Socket:             f.socket,
		SocketGroup:        f.socketGroup,
		Launcher:           l,
		MaxBody:            f.maxBody,
		PollInterval:       f.pollInterval,
		SlowPoll:           f.slowPoll,
		Warm:               f.warm,
		Retention:          &f.retention,
		GCInterval:         f.gcInterval,
		AllowSeccompOff:    f.allowSeccompOff,
		MaxConns:           f.limits.maxConns,
		MaxConnsPerUID:     f.limits.maxConnsPerUID,
		MaxStreams:         f.limits.maxStreams,
		MaxStreamsPerUID:   f.limits.maxStreamsPerUID,
		MaxWorkers:         f.limits.maxWorkers,
		MaxWorkersPerUID:   f.limits.maxWorkersPerUID,
		StreamQueue:        f.limits.streamQueue,
		HeaderTimeout:      f.limits.headerTimeout,
		BodyTimeout:        f.limits.bodyTimeout,
		IdleTimeout:        f.limits.idleTimeout,
		StreamWriteTimeout: f.limits.streamWriteTimeout,
		Placement:          &defaults,
		Logger:             sidecar.NewLogger(cmd.ErrOrStderr()),
	})
	if err != nil {
		return invalidf("sidecar: %v", err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx); err != nil {
		return fmt.Errorf("sidecar: %w", err)
	}
	return nil
}
