package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// newEventsCmd is `hlaunch-sidecar events` (run as `hlaunch events`): the sidecar's GET /v1/events stream
// copied to stdout, one event a line, until the sidecar ends the stream or a signal ends this process.
func newEventsCmd() *cobra.Command {
	var (
		socket string
		since  int64
	)
	cmd := &cobra.Command{
		Use:   "events [--socket PATH] [--since SEQ]",
		Short: "Stream a running sidecar's worker events as NDJSON",
		// `hlaunch events` is the documented way in (and has the manual page); this is its HTTP client.
		Hidden: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return invalidf("events: unexpected argument %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if socket == "" {
				socket = defaultSocket()
			}
			if socket == "" {
				return invalidf("events: --socket is required (no XDG_RUNTIME_DIR to default to)")
			}
			if since < 0 && cmd.Flags().Changed("since") {
				return invalidf("events: --since %d: want an event sequence number, 0 or more", since)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
			defer stop()
			q := ""
			if cmd.Flags().Changed("since") {
				q = "?since=" + strconv.FormatInt(since, 10)
			}
			return streamEvents(ctx, socket, q, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the sidecar's socket (default: /run/hlaunch/sidecar.sock for root, else $XDG_RUNTIME_DIR/hlaunch/sidecar.sock)")
	cmd.Flags().Int64Var(&since, "since", 0, "replay the events after this sequence number first (0: every event still held)")
	return cmd
}

// streamEvents copies the event stream of the sidecar at socket to w, line by line.
func streamEvents(ctx context.Context, socket, query string, w io.Writer) error {
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sidecar/v1/events"+query, nil)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: events: no sidecar answers on %s (--socket): %w", worker.ErrInvalid, socket, unwrapDial(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
		return fmt.Errorf("events: the sidecar answered %s: %s", resp.Status, e.Error.Message)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	bw := bufio.NewWriter(w)
	for sc.Scan() {
		bw.Write(sc.Bytes())
		bw.WriteByte('\n')
		if err := bw.Flush(); err != nil {
			return nil // the reader went away (a closed pipe): nothing left to tell
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("events: reading the stream from %s: %w", socket, err)
	}
	return nil
}

// unwrapDial keeps the part of a dial error a user can act on ("connect: no such file or directory").
func unwrapDial(err error) error {
	var op *net.OpError
	if e, ok := err.(interface{ Unwrap() error }); ok {
		if o, ok := e.Unwrap().(*net.OpError); ok {
			op = o
		}
	}
	if op != nil && op.Err != nil {
		return op.Err
	}
	return err
}
