package sidecar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/strictjson"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// decodeStrict decodes exactly one JSON value from r into v with the launcher's strict decoder
// (internal/strictjson; worker.DecodeSpec for a spec): an unknown, repeated or case-variant key,
// trailing data, invalid UTF-8 and (unless allowEmpty) an empty body are errors. A spec is checked as
// strictly as the command line checks flags: a misspelled field must fail, never be silently dropped (a
// dropped "limits" would start an unlimited worker), and a body a proxy reads as one spec must not run
// as another.
func decodeStrict(r io.Reader, v any, allowEmpty bool) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if allowEmpty && len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if spec, ok := v.(*worker.Spec); ok {
		s, err := worker.DecodeSpec(data)
		if err != nil {
			return err
		}
		*spec = s
		return nil
	}
	if err := strictjson.Decode(data, v); err != nil {
		return fmt.Errorf("%w: body: %w", worker.ErrInvalid, err)
	}
	return nil
}

// readBody reads a request's whole body: over --max-body is ErrTooLarge, past --body-timeout ErrSlowBody.
func readBody(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		if isMaxBytes(err) {
			return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		if errors.Is(err, ErrSlowBody) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: body: %w", worker.ErrInvalid, err)
	}
	return data, nil
}

// signalRequest is the body of POST /v1/workers/{id}/signal.
type signalRequest struct {
	Signal string `json:"signal"` // "TERM", "SIGTERM", "term" or "15"; empty means TERM
	All    bool   `json:"all"`    // the whole cgroup instead of the leader
}

// stopRequest is the body of POST /v1/workers/{id}/stop.
type stopRequest struct {
	Grace string `json:"grace"` // Go duration; empty means DefaultGrace
}

// DefaultGrace is the stop grace when a request names none (the Spec's documented default).
const DefaultGrace = worker.DefaultGrace

// parseSignal accepts a signal as worker.ParseSignal does (name with or without SIG, any case, or
// number); empty means SIGTERM, the polite default of kill(1).
func parseSignal(s string) (syscall.Signal, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return syscall.SIGTERM, nil
	}
	return worker.ParseSignal(s)
}

// parseDuration is worker.ParseDurationOr for a request's field: empty returns def; an error names
// the field.
func parseDuration(field, s string, def time.Duration) (time.Duration, error) {
	d, err := worker.ParseDurationOr(s, def)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q: %v", worker.ErrInvalid, field, s, err)
	}
	return d, nil
}

// isMaxBytes reports whether err came from http.MaxBytesReader's limit.
func isMaxBytes(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
