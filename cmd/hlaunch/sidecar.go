package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// newSidecarCmd is `hlaunch sidecar`: it execs the hlaunch-sidecar binary installed beside hlaunch, in
// place (same PID, so systemd's Type=notify and socket activation see the process they started), with the
// global flags and every argument passed on. See cmd/hlaunch-sidecar for why the daemon is a binary of its
// own.
func newSidecarCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "sidecar --socket PATH [flags]",
		Short:              "Serve the HTTP+JSON worker API on a Unix socket (spawn, track, re-adopt)",
		Long:               "sidecar runs hlaunch-sidecar (installed beside hlaunch); `hlaunch sidecar --help` shows its flags.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("sidecar: own path: %w", err)
			}
			bin := filepath.Join(filepath.Dir(exe), "hlaunch-sidecar")
			argv := []string{bin}
			for _, g := range [][2]string{{"--root", a.root}, {"--state-dir", a.stateDir}, {"--ledger-dir", a.ledgerDir}, {"--policy", a.policy}} {
				if g[1] != "" {
					argv = append(argv, g[0], g[1])
				}
			}
			argv = append(argv, args...)
			keepListenFDs()
			if !a.childCPUs.IsZero() {
				// The daemon must not inherit a launch's pin (a command line that merely contains "exec").
				runtime.LockOSThread()
				if err := a.childCPUs.ApplyToThread(); err != nil {
					return fmt.Errorf("sidecar: %w", err)
				}
			}
			err = syscall.Exec(bin, argv, os.Environ())
			return fmt.Errorf("sidecar: exec %s: %w", bin, err)
		},
	}
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
