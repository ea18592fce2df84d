package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/trust"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// newSidecarCmd is `hlaunch sidecar`: it execs the hlaunch-sidecar binary installed beside hlaunch, in
// place (same PID, so systemd's Type=notify and socket activation see the process they started), with the
// global flags and every argument passed on. See cmd/hlaunch-sidecar for why the daemon is a binary of its
// own.
func newSidecarCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "sidecar [--socket PATH] [flags]",
		Short:              "Serve the HTTP+JSON worker API on a Unix socket (spawn, track, re-adopt)",
		Long:               "sidecar runs hlaunch-sidecar (installed beside hlaunch) with every argument; `hlaunch sidecar --help` shows\nits flags, man hlaunch-sidecar describes them.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.execSidecar("sidecar", args)
		},
	}
}

// newEventsCmd is `hlaunch events`: the sidecar's event stream as NDJSON on stdout, one event a line, for a
// shell user watching workers. The HTTP client is hlaunch-sidecar's (`hlaunch-sidecar events`), so that
// net/http stays out of this binary.
func newEventsCmd(a *app) *cobra.Command {
	var (
		socket string
		since  int64
	)
	cmd := &cobra.Command{
		Use:   "events [--socket PATH] [--since SEQ]",
		Short: "Stream the sidecar's worker events (started, exited, oom, adopted, refused, lost) as NDJSON",
		Long: `events connects to a running sidecar and prints its event stream, one JSON object a line, until the
sidecar stops or hlaunch is interrupted. Without --since only new events are printed; --since 0 first
replays every event the sidecar still holds, --since N those after event N.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			argv := []string{}
			if socket != "" {
				argv = append(argv, "--socket", socket)
			}
			if cmd.Flags().Changed("since") {
				if since < 0 {
					return invalidf("events: --since %d: want an event sequence number, 0 or more", since)
				}
				argv = append(argv, "--since", strconv.FormatInt(since, 10))
			}
			return a.execSidecar("events", argv)
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the sidecar's socket (default: /run/hlaunch/sidecar.sock for root, else $XDG_RUNTIME_DIR/hlaunch/sidecar.sock)")
	cmd.Flags().Int64Var(&since, "since", 0, "replay the events after this sequence number first (0: every event still held)")
	return cmd
}

// execSidecar execs hlaunch-sidecar, installed beside hlaunch, in place (same PID, so systemd's
// Type=notify and socket activation see the process they started), with the global flags and args. sub is
// "sidecar" for the daemon itself, else the hlaunch-sidecar subcommand to run.
func (a *app) execSidecar(sub string, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%s: own path: %w", sub, err)
	}
	bin := filepath.Join(filepath.Dir(exe), "hlaunch-sidecar")
	// A file another uid could replace is not executed (internal/trust); a missing one is said below.
	if err := trust.Check(bin); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: the hlaunch-sidecar beside hlaunch: %w (install both where only root or this uid can write)", worker.ErrInvalid, sub, err)
	}
	argv := []string{bin}
	if sub != "sidecar" {
		argv = append(argv, sub)
	} else {
		for _, g := range [][2]string{{"--root", a.dirs.Root}, {"--state-dir", a.dirs.StateDir}, {"--ledger-dir", a.dirs.LedgerDir}, {"--policy", a.dirs.Policy}} {
			if g[1] != "" {
				argv = append(argv, g[0], g[1])
			}
		}
	}
	argv = append(argv, args...)
	keepListenFDs()
	err = syscall.Exec(bin, argv, os.Environ())
	return fmt.Errorf("%s: cannot run %s (installed beside hlaunch?): %w", sub, bin, err)
}

// keepListenFDs clears close-on-exec on the sockets systemd passed for socket activation (LISTEN_FDS,
// starting at fd 3), which MaybeRunInternal marked like every other inherited descriptor.
func keepListenFDs() {
	if os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
		return
	}
	n, _ := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	for fd := 3; fd < 3+n; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err == nil {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags&^unix.FD_CLOEXEC)
		}
	}
}
