"""The exceptions of the hlaunch client, one per stable error code of the sidecar."""

from __future__ import annotations

import datetime
import email.utils
from typing import Any, Dict, Optional, Type


class HlaunchError(Exception):
    """An error answer of the sidecar, or a failure to get one.

    Attributes:
        code: the stable error code (``"invalid"``, ``"key_held"``, ...; see the sidecar's API document).
        status: the HTTP status, or None when no answer was received.
        message: the sidecar's one-line message.
        field: the spec field (or argument) the error is about, when the sidecar names one; else None.
        reason: the finer sub-code of ``code`` (``unknown_profile``, ``env_not_utf8``, ``unknown_field``,
            ...), when the sidecar gives one; else None.
    """

    code: str = "internal"

    def __init__(self, message: str, code: Optional[str] = None, status: Optional[int] = None,
                 field: Optional[str] = None, reason: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status
        self.field = field
        self.reason = reason

    def __str__(self) -> str:
        return "%s (%s)" % (self.message, self.code)


class SidecarUnavailable(HlaunchError):
    """The call never reached the sidecar: nothing was done, and calling again is safe.

    The socket could not be reached (no sidecar, wrong path, no permission on the socket file, no room in
    its queue within the timeout), or the sidecar closed the connection without reading the request (it
    died before reading it, or refused the connection over one of its limits).
    """

    code = "unavailable"


class AnswerLost(HlaunchError):
    """The request was sent and no whole answer came back: the sidecar died, stopped answering (no answer
    within the call's timeout) or cut its answer short.

    The sidecar may have acted on the request (a spawn may have started its worker): do not repeat a call
    that changes something blindly. ``spawn`` repeats itself safely with its ``Idempotency-Key``; for the
    others, look first (``get``, ``list``).
    """

    code = "answer_lost"


class StreamLost(AnswerLost):
    """An event or log stream ended without its end: the sidecar died or the stream was silent for its idle
    timeout (three heartbeat periods for events). Subscribe again (events: ``since`` = the last ``seq`` seen;
    logs: ``offset`` = the stream's ``offset``)."""

    code = "stream_lost"


class ProtocolError(HlaunchError):
    """The sidecar's answer was not the JSON it should be."""

    code = "protocol"


class InvalidSpec(HlaunchError, ValueError):
    """Bad input: a spec field, a profile name, a signal, a duration, an argument. Nothing was started.

    Also a ``ValueError``, so code that checks arguments the usual way catches it.
    """

    code = "invalid"


class NotFound(HlaunchError):
    """No worker with that id or token."""

    code = "not_found"


class Refused(HlaunchError):
    """The worker's identity does not verify (foreign boot or machine, recycled PID): no signal was sent."""

    code = "refused"


class Unverified(Refused):
    """The worker's identity was never captured; such a worker is never signalled."""

    code = "unverified"


class NotRunning(HlaunchError):
    """The worker has already exited."""

    code = "not_running"


class LeaderExited(NotRunning):
    """A signal for the worker's leader, which has exited while the rest of the worker still runs; send it
    to the whole worker with ``all=True``."""

    code = "leader_exited"


class KeyHeld(HlaunchError):
    """Another worker holding the same ``key`` verifies as running. Nothing was started."""

    code = "key_held"


class Degraded(HlaunchError):
    """No restart-safe placement exists and the spec (or the sidecar) requires one.

    This is a host-level condition, not a failure of the job: do not charge retry budgets for it.
    """

    code = "degraded"


class NoSpace(HlaunchError):
    """The state or ledger directory's filesystem has no room for a new worker's records. Nothing was left
    running (a worker its shim could not record was ended).

    This is a host-level condition, not a failure of the job: do not charge retry budgets for it.
    """

    code = "no_space"


class NotEmpty(HlaunchError):
    """A stop could not verify the worker's cgroup empty."""

    code = "not_empty"


class CannotRun(HlaunchError):
    """The command exists but could not be executed (the CLI's exit 126)."""

    code = "cannot_run"


class CommandNotFound(CannotRun):
    """The command was not found in the child's PATH (the CLI's exit 127)."""

    code = "command_not_found"


class Forbidden(HlaunchError):
    """The sidecar refused this peer: its uid is not the sidecar's, not root and not in the socket group, or
    it is one of hlaunch's workers (another pid namespace, a worker's cgroup or scope), whoever it claims to be."""

    code = "forbidden"


class TooLarge(HlaunchError):
    """The request body exceeded the sidecar's limit (1 MiB by default)."""

    code = "too_large"


class WaitTimeout(HlaunchError):
    """``wait(timeout=...)`` elapsed while the worker still runs (the sidecar's 408), or no answer came
    within that timeout plus the client's own (a sidecar that does not answer). Waiting is safe to repeat."""

    code = "timeout"


class Unsupported(HlaunchError):
    """The endpoint is not implemented by this sidecar."""

    code = "not_implemented"


class TooSlow(HlaunchError):
    """The request's body did not reach the sidecar within its ``--body-timeout``."""

    code = "too_slow"


class Overloaded(HlaunchError):
    """The sidecar is at one of its limits (docs/sidecar.md, "Limits"): try again after ``retry_after``.

    Attributes:
        retry_after: seconds to wait before trying again, from the answer's ``Retry-After``; None when it
            had none.
    """

    code = "overloaded"

    def __init__(self, message: str, code: Optional[str] = None, status: Optional[int] = None,
                 retry_after: Optional[float] = None, field: Optional[str] = None,
                 reason: Optional[str] = None) -> None:
        super().__init__(message, code=code, status=status, field=field, reason=reason)
        self.retry_after = retry_after


class TooMany(Overloaded):
    """This caller's uid already holds its share of the sidecar's connections, event streams or running
    workers (HTTP 429): close some or let some end, or wait ``retry_after`` seconds."""

    code = "too_many"


class Busy(Overloaded):
    """The sidecar serves as many connections, event streams or running workers as it may, from every
    caller together (HTTP 503): wait ``retry_after`` seconds."""

    code = "busy"


def retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """The seconds a ``Retry-After`` header says (a number of seconds, or an HTTP date); None if it says none."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max((when - datetime.datetime.now(datetime.timezone.utc)).total_seconds(), 0.0)


def _all_subclasses(cls: Type[HlaunchError]) -> "list[Type[HlaunchError]]":
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


_BY_CODE: Dict[str, Type[HlaunchError]] = {cls.code: cls for cls in _all_subclasses(HlaunchError)}


def error_for(status: int, payload: Any, retry_after: Optional[str] = None) -> HlaunchError:
    """Return the exception for an error answer ``payload`` (the decoded JSON) with HTTP ``status`` and
    ``retry_after``, the answer's ``Retry-After`` header (None without one).

    A 429 or 503 over one of the sidecar's limits is an ``Overloaded`` (``TooMany``, ``Busy``) with
    ``.retry_after`` in seconds; so is a 429 of a code this client does not know yet.
    """
    err = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(err, dict) or "code" not in err:
        return ProtocolError("HTTP %d without a JSON error body" % status, status=status)
    code = str(err.get("code"))
    message = str(err.get("message", ""))
    field = err.get("field")
    reason = err.get("reason")
    details = {"field": field if isinstance(field, str) else None,
               "reason": reason if isinstance(reason, str) else None}
    cls = _BY_CODE.get(code)
    if cls is None and status == 429:
        cls = TooMany
    if cls is not None and issubclass(cls, Overloaded):
        return cls(message, code=code, status=status, retry_after=retry_after_seconds(retry_after), **details)
    return (cls or HlaunchError)(message, code=code, status=status, **details)
