package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/sidecar"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// addLimitFlags adds the flags of the bounds on connections, event streams and request reading.
func addLimitFlags(fs *pflag.FlagSet, l *sidecarLimits) {
	fs.IntVar(&l.maxConns, "max-conns", sidecar.DefaultMaxConns, "connections served at once from every peer together, the last --max-conns-per-uid (at most half) kept for root and the sidecar's uid (past it: 503 busy)")
	fs.IntVar(&l.maxConnsPerUID, "max-conns-per-uid", sidecar.DefaultMaxConnsPerUID, "connections one peer uid may hold at once, root's too, at most --max-conns (past it: 429 too_many)")
	fs.IntVar(&l.maxStreams, "max-streams", sidecar.DefaultMaxStreams, "GET /v1/events streams open at once from every peer together, the last --max-streams-per-uid (at most half) kept for root and the sidecar's uid (past it: 503 busy)")
	fs.IntVar(&l.maxStreamsPerUID, "max-streams-per-uid", sidecar.DefaultMaxStreamsPerUID, "GET /v1/events streams one peer uid may hold at once, at most --max-streams (past it: 429 too_many)")
	fs.IntVar(&l.maxWorkers, "max-workers", sidecar.DefaultMaxWorkers, "workers running at once from the sidecar's spawns and the ones it adopted, the last --max-workers-per-uid (at most half) kept for root and the sidecar's uid (past it: 503 busy)")
	fs.IntVar(&l.maxWorkersPerUID, "max-workers-per-uid", sidecar.DefaultMaxWorkersPerUID, "workers one peer uid's spawns may have running at once, at most --max-workers (past it: 429 too_many)")
	fs.IntVar(&l.streamQueue, "stream-queue", sidecar.DefaultStreamQueue, "events one stream may have unwritten; a reader further behind gets a lost event and the stream ends")
	fs.Var(worker.NewDurationFlag(&l.headerTimeout, sidecar.DefaultHeaderTimeout), "header-timeout", "time a client has to send a request's line and headers")
	fs.Var(worker.NewDurationFlag(&l.bodyTimeout, sidecar.DefaultBodyTimeout), "body-timeout", "time a client has to send a request's body (past it: 408 too_slow)")
	fs.Var(worker.NewDurationFlag(&l.idleTimeout, sidecar.DefaultIdleTimeout), "idle-timeout", "time a kept-alive connection may wait for its next request")
	fs.Var(worker.NewDurationFlag(&l.streamWriteTimeout, sidecar.DefaultStreamWriteTimeout), "stream-write-timeout", "time writing one event to a stream may take; a reader that stops reading is cut off after it")
}

// check refuses a bound that would serve nothing or wait for nothing, and a per-uid bound given larger
// than its total, which no uid could reach: one line naming the flag (exit 125). changed says which flags
// were given: a total set below the default per-uid bound is taken as it is (the total is reached first).
func (l sidecarLimits) check(changed func(flag string) bool) error {
	for _, c := range []struct {
		flag string
		n    int
	}{
		{"max-conns", l.maxConns}, {"max-conns-per-uid", l.maxConnsPerUID}, {"max-streams", l.maxStreams},
		{"max-streams-per-uid", l.maxStreamsPerUID}, {"max-workers", l.maxWorkers},
		{"max-workers-per-uid", l.maxWorkersPerUID}, {"stream-queue", l.streamQueue},
	} {
		if c.n < 1 {
			return invalidf("sidecar: --%s %d: want at least 1", c.flag, c.n)
		}
	}
	for _, c := range []struct {
		total, perUID string
		n, per        int
	}{
		{"max-conns", "max-conns-per-uid", l.maxConns, l.maxConnsPerUID},
		{"max-streams", "max-streams-per-uid", l.maxStreams, l.maxStreamsPerUID},
		{"max-workers", "max-workers-per-uid", l.maxWorkers, l.maxWorkersPerUID},
	} {
		if changed(c.perUID) && c.per > c.n {
			return invalidf("sidecar: --%s %d: more than --%s %d (one uid's share is part of the total)", c.perUID, c.per, c.total, c.n)
		}
	}
	for _, c := range []struct {
		flag string
		d    time.Duration
	}{
		{"header-timeout", l.headerTimeout}, {"body-timeout", l.bodyTimeout}, {"idle-timeout", l.idleTimeout},
		{"stream-write-timeout", l.streamWriteTimeout},
	} {
		if c.d < time.Millisecond {
			return invalidf("sidecar: --%s %s: want at least 1ms", c.flag, c.d)
		}
	}
	return nil
}
