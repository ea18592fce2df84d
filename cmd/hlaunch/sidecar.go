package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/launcher"
	"github.com/hlaunch/hlaunch/sidecar"
)

// sidecarFlags are the flags of `hlaunch sidecar`. The placement flags become launcher.Config.Defaults: they
// fill what a spawned spec leaves empty, exactly as `exec` flags would.
type sidecarFlags struct {
	socket, socketGroup string
	scope, cgroupParent string
	slice, net          string
	requireScope        bool
	userManager         bool
	maxBody             int64
	pollInterval        time.Duration
	slowPoll            time.Duration
}

// newSidecarCmd is `hlaunch sidecar`: the gateway's daemon (see docs/sidecar.md). It reads the global
// --root, --state-dir and --policy flags when the root command defines them.
func newSidecarCmd() *cobra.Command {
	f := &sidecarFlags{}
	cmd := &cobra.Command{
		Use:   "sidecar --socket PATH",
		Short: "Serve the HTTP+JSON worker API on a Unix socket (spawn, track, re-adopt)",
		Long: `sidecar serves the worker API (docs/sidecar.md) on a Unix socket created 0600, or 0660 with
--socket-group. Only the socket owner, root and members of --socket-group are served (SO_PEERCRED).
Every spawn is detached under a shim, so workers outlive the sidecar; on start it re-adopts every record in
the state directory. Under systemd it supports Type=notify and socket activation (contrib/systemd/).`,
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
	fs := cmd.Flags()
	fs.StringVar(&f.socket, "socket", "", "Unix socket path (default: /run/hlaunch/sidecar.sock for root, else $XDG_RUNTIME_DIR/hlaunch/sidecar.sock)")
	fs.StringVar(&f.socketGroup, "socket-group", "", "make the socket 0660 for this group (name or gid) and serve its members")
	fs.StringVar(&f.scope, "scope", "", "default placement for spawns: auto, systemd, cgroup or none (default auto)")
	fs.StringVar(&f.cgroupParent, "cgroup-parent", "", "default raw-cgroup parent for spawns (default hlaunch)")
	fs.StringVar(&f.slice, "slice", "", "default systemd slice for spawns")
	fs.StringVar(&f.net, "net", "", "default network for sandboxed spawns: host or none")
	fs.BoolVar(&f.userManager, "user", false, "default to the caller's systemd user manager for scopes, even as root")
	fs.BoolVar(&f.requireScope, "require-scope", false, "refuse (degraded, 503) every spawn that would run without a restart-safe placement")
	fs.Int64Var(&f.maxBody, "max-body", sidecar.DefaultMaxBody, "largest request body in bytes (larger: 413)")
	fs.DurationVar(&f.pollInterval, "poll-interval", sidecar.DefaultPollInterval, "shortest time between two checks of the worker records (exits are noticed through inotify)")
	fs.DurationVar(&f.slowPoll, "slow-poll", sidecar.DefaultSlowPoll, "longest time between two checks of the worker records")
	return cmd
}

// globalString returns an inherited global flag's value, or "" when the root command has no such flag.
func globalString(cmd *cobra.Command, name string) string {
	if fl := cmd.Flags().Lookup(name); fl != nil {
		return fl.Value.String()
	}
	return ""
}

func defaultSocket() string {
	if os.Geteuid() == 0 {
		return "/run/hlaunch/sidecar.sock"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "hlaunch", "sidecar.sock")
	}
	return ""
}

func (f *sidecarFlags) run(cmd *cobra.Command) error {
	if f.socket == "" {
		f.socket = defaultSocket()
	}
	if f.socket == "" && os.Getenv("LISTEN_FDS") == "" {
		return invalidf("sidecar: --socket is required (no XDG_RUNTIME_DIR to default to)")
	}
	switch f.scope {
	case "", launcher.ScopeAuto, launcher.ScopeSystemd, launcher.ScopeCgroup, launcher.ScopeNone:
	default:
		return invalidf("sidecar: --scope %q: want auto, systemd, cgroup or none", f.scope)
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
		// A sandboxed worker must not reach the API that could spawn or signal its siblings.
		hide = append(hide, abs)
	}
	l, err := launcher.New(launcher.Config{
		Root:       globalString(cmd, "root"),
		StateDir:   globalString(cmd, "state-dir"),
		PolicyFile: globalString(cmd, "policy"),
		Stderr:     cmd.ErrOrStderr(),
		Hide:       hide,
		Defaults: launcher.Spec{
			Scope:        f.scope,
			CgroupParent: f.cgroupParent,
			Slice:        f.slice,
			RequireScope: f.requireScope,
			UserManager:  f.userManager,
			Net:          f.net,
		},
	})
	if err != nil {
		return err
	}
	srv, err := sidecar.New(sidecar.Config{
		Socket:       f.socket,
		SocketGroup:  f.socketGroup,
		Launcher:     l,
		MaxBody:      f.maxBody,
		PollInterval: f.pollInterval,
		SlowPoll:     f.slowPoll,
		Log:          cmd.ErrOrStderr(),
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
