package sidecar

import (
	"errors"
	"net/http"

	"github.com/hlaunch/hlaunch/internal/sidecar/access"
	"github.com/hlaunch/hlaunch/internal/sidecar/idemkeys"
	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/sidecar/sockfile"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Sentinel errors of the sidecar itself; launcher errors keep their own codes (worker.Code).
var (
	// ErrForbidden: the peer's credentials are not the owner's, root's, or the socket group's (access.ErrForbidden).
	ErrForbidden = access.ErrForbidden
	// ErrTooLarge: the request body exceeds Config.MaxBody.
	ErrTooLarge = errors.New("request body too large")
	// ErrTimeout: a wait ended at its timeout while the worker still runs.
	ErrTimeout = errors.New("timed out waiting for the worker")
	// ErrNotImplemented: the endpoint exists but the launcher does not provide it yet.
	ErrNotImplemented = errors.New("not implemented")
	// ErrNoRoute: no endpoint at that path.
	ErrNoRoute = errors.New("no such endpoint")
	// ErrMethod: the path exists but not with that method.
	ErrMethod = errors.New("method not allowed")
	// ErrInUse: another process already serves the socket path (sockfile.ErrInUse).
	ErrInUse = sockfile.ErrInUse
	// ErrNotSocket: the socket path exists and is not a socket; it is never replaced (sockfile.ErrNotSocket).
	ErrNotSocket = sockfile.ErrNotSocket
	// ErrTooMany: the peer's uid already holds its share of connections, event streams or running workers
	// (429; peerlimit.ErrTooMany).
	ErrTooMany = peerlimit.ErrTooMany
	// ErrBusy: the sidecar holds as many connections, event streams or running workers as it serves at once
	// (503; peerlimit.ErrBusy).
	ErrBusy = peerlimit.ErrBusy
	// ErrSlowBody: a request's body did not arrive within Config.BodyTimeout (408).
	ErrSlowBody = errors.New("request body too slow")
	// ErrConfig: the Config is unusable (no launcher, no socket, unknown group).
	ErrConfig = errors.New("invalid sidecar configuration")
)

// errorBody is the JSON form of every error answer: {"error":{"code":..,"message":..}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field is the spec field at fault, when one is ("limits.memory", "profile"); Reason a finer, stable
	// sub-code of Code ("unknown_profile", "env_not_utf8", "unknown_field"; worker.ErrorReason).
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// errDetail is err's JSON error detail: its code, its message in spec field names, its field and reason.
func errDetail(err error) errorDetail {
	d := errorDetail{Code: Code(err), Message: worker.SpecMessage(err)}
	d.Reason, d.Field = worker.ErrorReason(err)
	if errors.Is(err, idemkeys.ErrBadKey) {
		d.Reason = "bad_idempotency_key"
	}
	return d
}

// Code maps an error to its stable JSON code: the sidecar's own sentinels first, then worker.Code.
func Code(err error) string {
	switch {
	case errors.Is(err, ErrForbidden):
		return "forbidden"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrNotImplemented):
		return "not_implemented"
	case errors.Is(err, ErrNoRoute):
		return "not_found"
	case errors.Is(err, ErrMethod):
		return "method_not_allowed"
	case errors.Is(err, ErrTooMany):
		return "too_many"
	case errors.Is(err, ErrBusy):
		return "busy"
	case errors.Is(err, ErrSlowBody):
		return "too_slow"
	case errors.Is(err, ErrIdemMismatch):
		return "idempotency_mismatch"
	}
	return worker.Code(err)
}

// statusOf maps a stable code to its HTTP status. Refusals are 409 (the request was understood and answered
// "no"), never 5xx: a client must not retry them as if the server had failed.
func statusOf(code string) int {
	switch code {
	case "invalid":
		return http.StatusBadRequest
	case "forbidden":
		return http.StatusForbidden
	case "not_found":
		return http.StatusNotFound
	case "method_not_allowed":
		return http.StatusMethodNotAllowed
	case "timeout", "too_slow":
		return http.StatusRequestTimeout
	case "refused", "unverified", "not_running", "leader_exited", "key_held", "no_log":
		return http.StatusConflict
	case "too_large":
		return http.StatusRequestEntityTooLarge
	case "cannot_run", "command_not_found", "idempotency_mismatch":
		return http.StatusUnprocessableEntity
	case "not_implemented":
		return http.StatusNotImplemented
	case "too_many":
		return http.StatusTooManyRequests
	case "degraded", "busy", "no_space":
		return http.StatusServiceUnavailable
	default: // internal, not_empty
		return http.StatusInternalServerError
	}
}
