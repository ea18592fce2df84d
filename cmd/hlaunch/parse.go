package main

import (
	"strings"
	"time"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// parseSince accepts an RFC 3339 time, a date (UTC midnight), or a duration meaning "that long before now".
func parseSince(s string, now time.Time) (time.Time, error) {
	t := strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if v, err := time.Parse(layout, t); err == nil {
			return v, nil
		}
	}
	if d, err := worker.ParseDuration(t); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, invalidf("--since %q: want an RFC 3339 time, a date (2006-01-02) or a duration (24h)", s)
}

// parseGrace parses a --grace/--timeout duration given to a read command.
func parseGrace(flag, s string) (time.Duration, error) {
	d, err := worker.ParseDuration(s)
	if err != nil {
		return 0, invalidf("%s %q: %v", flag, s, err)
	}
	return d, nil
}
