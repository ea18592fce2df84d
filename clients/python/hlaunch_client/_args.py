"""Argument checks and conversions shared by the blocking and the asyncio client.

Every check raises ``InvalidSpec`` (a ``ValueError``) with one line naming the argument or spec field,
what was wrong and what is accepted, before anything is sent.
"""

from __future__ import annotations

import datetime
import re
import signal as _signal
import urllib.parse
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ._errors import InvalidSpec

#: A duration: seconds as an int or float, a ``datetime.timedelta``, or a Go duration string ("1m30s").
Duration = Union[int, float, datetime.timedelta, str]

#: A signal: a name ("TERM", "SIGTERM"), a number, or a ``signal.Signals`` member.
Signal = Union[str, int, _signal.Signals]

#: The states a worker record can be in (``list(state=...)``).
STATES = ("running", "exited", "foreign-boot", "foreign-machine", "recycled", "unverified", "malformed",
          "corrupt", "unknown-version")

#: The spec fields that are durations: seconds or strings are both accepted and sent as Go strings.
DURATION_FIELDS = ("timeout", "grace")

_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(value: str, what: str) -> float:
    """Seconds in a Go duration string ("1h2m3.5s", "250ms", "0"); raise InvalidSpec naming ``what``."""
    s = value.strip()
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    if s.startswith(("-", "+")):
        raise InvalidSpec("%s %r: must not be signed; want seconds or a duration such as 30s, 10m" % (what, value))
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise InvalidSpec("%s %r: not a duration; want seconds (a number) or a string such as 500ms, 30s, 10m"
                          % (what, value))
    return total


def seconds(value: Duration, what: str) -> float:
    """Seconds in a duration given as a number, a timedelta or a Go duration string."""
    if isinstance(value, datetime.timedelta):
        secs = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidSpec("%s: want seconds (a number), a timedelta or a duration string such as 30s, got %s"
                          % (what, type(value).__name__))
    elif isinstance(value, str):
        return parse_duration(value, what)
    else:
        secs = float(value)
    if secs != secs or secs in (float("inf"), float("-inf")):
        raise InvalidSpec("%s %r: want a finite number of seconds" % (what, value))
    if secs < 0:
        raise InvalidSpec("%s %r: must not be negative" % (what, value))
    return secs


def duration_string(value: Optional[Duration], what: str) -> Optional[str]:
    """The Go duration string the sidecar takes for ``value`` (None stays None)."""
    if value is None:
        return None
    if isinstance(value, str):
        parse_duration(value, what)  # refused here, with the argument's name, rather than by the sidecar
        return value.strip()
    secs = seconds(value, what)
    ms = round(secs * 1000)
    if ms == 0 and secs > 0:
        return "%dns" % max(1, round(secs * 1e9))
    return "%dms" % ms


def signal_name(sig: Signal) -> str:
    """Accept "TERM", "SIGTERM", 15 or signal.SIGTERM; return what the sidecar accepts."""
    if isinstance(sig, _signal.Signals):
        return sig.name
    if isinstance(sig, bool):
        raise InvalidSpec("signal: want a name such as TERM or a number, got a bool")
    if isinstance(sig, int):
        if sig <= 0:
            raise InvalidSpec("signal %d: want a positive signal number" % sig)
        return str(sig)
    if isinstance(sig, str) and sig.strip():
        return sig.strip()
    raise InvalidSpec("signal %r: want a name such as TERM or a number" % (sig,))


def worker_path(worker_id: str, suffix: str = "") -> str:
    """The API path of a worker, its id or token quoted."""
    if not isinstance(worker_id, str) or not worker_id:
        raise InvalidSpec("worker id: want the id (w-...) or the token (hl1....) as a non-empty string")
    return "/v1/workers/" + urllib.parse.quote(worker_id, safe="") + suffix


def list_path(state: Optional[str]) -> str:
    """GET /v1/workers, filtered by a state that exists."""
    if state is None:
        return "/v1/workers"
    if state not in STATES:
        raise InvalidSpec("state %r: want one of %s" % (state, ", ".join(STATES)))
    return "/v1/workers?" + urllib.parse.urlencode({"state": state})


def events_path(since: Optional[int], heartbeat: Optional[Duration], idle_timeout: Optional[Duration],
                default_heartbeat: float) -> Tuple[str, float]:
    """GET /v1/events (replaying after ``since``, with a ``heartbeat`` period when given) and the stream's
    idle timeout: ``idle_timeout``, else three heartbeat periods."""
    query: Dict[str, Any] = {}
    if since is not None:
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise InvalidSpec("since %r: want an event sequence number, 0 or more" % (since,))
        query["since"] = since
    period = default_heartbeat
    if heartbeat is not None:
        period = seconds(heartbeat, "heartbeat")
        if period <= 0:
            raise InvalidSpec("heartbeat %r: want a period longer than 0" % (heartbeat,))
        query["heartbeat"] = duration_string(heartbeat, "heartbeat")
    idle = 3 * period if idle_timeout is None else seconds(idle_timeout, "idle_timeout")
    if idle <= 0:
        raise InvalidSpec("idle_timeout %r: want a time longer than 0" % (idle_timeout,))
    path = "/v1/events" + ("?" + urllib.parse.urlencode(query) if query else "")
    return path, idle


def logs_path(worker_id: str, offset: int, follow: bool) -> str:
    """GET /v1/workers/ID/logs from ``offset``, following when asked."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidSpec("offset %r: want a byte offset in the log, 0 or more" % (offset,))
    query: Dict[str, Any] = {"offset": offset}
    if follow:
        query["follow"] = 1
    return worker_path(worker_id, "/logs") + "?" + urllib.parse.urlencode(query)


_KEY = re.compile(r"[\x21-\x7e]{1,128}")


def idempotency_key(key: str) -> str:
    """A spawn's ``Idempotency-Key``: 1 to 128 printable ASCII characters, no space."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidSpec("idempotency_key %r: want 1 to 128 printable ASCII characters without spaces" % (key,))
    return key


def wait_path(worker_id: str, timeout: Optional[Duration]) -> str:
    """GET /v1/workers/ID/wait, with the sidecar-side timeout when given."""
    path = worker_path(worker_id, "/wait")
    t = duration_string(timeout, "timeout")
    if t is None:
        return path
    return path + "?" + urllib.parse.urlencode({"timeout": t})


def stop_body(grace: Optional[Duration]) -> Dict[str, Any]:
    """The body of POST /v1/workers/ID/stop."""
    g = duration_string(grace, "grace")
    return {} if g is None else {"grace": g}


def prepare_spec(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """A copy of ``spec`` as the sidecar takes it: durations as Go strings, the required fields checked.

    The sidecar checks everything else (unknown fields, names, limits) and answers InvalidSpec naming the
    field; this only refuses what the client itself can tell is wrong.
    """
    if not isinstance(spec, Mapping):
        raise InvalidSpec("spec: want a dict (the launch spec), got %s" % type(spec).__name__)
    out = dict(spec)
    profile = out.get("profile")
    if not isinstance(profile, str) or not profile:
        raise InvalidSpec("spec field profile: required, a profile name such as \"b\" (\"default\" is the root)")
    argv = out.get("argv")
    if (not isinstance(argv, (list, tuple)) or not argv
            or not all(isinstance(a, str) for a in argv) or not argv[0]):
        raise InvalidSpec("spec field argv: required, a non-empty list of strings (the command and its arguments)")
    out["argv"] = list(argv)
    for field in DURATION_FIELDS:
        if field in out:
            value = duration_string(out[field], "spec field " + field)
            if value is None:
                del out[field]
            else:
                out[field] = value
    return out


def fds_for(stdin: Any, stdout: Any, stderr: Any, devnull: int) -> List[int]:
    """Descriptors 0, 1 and 2 for a spawn that passes its stdio; a missing one is ``devnull``."""
    return [devnull if f is None else fileno(f, name)
            for f, name in ((stdin, "stdin"), (stdout, "stdout"), (stderr, "stderr"))]


def fileno(f: Any, what: str) -> int:
    """An int descriptor from an int or an object with fileno()."""
    if isinstance(f, bool):
        raise InvalidSpec("%s: want a file or a descriptor, got a bool" % what)
    if isinstance(f, int):
        if f < 0:
            raise InvalidSpec("%s %d: want an open descriptor" % (what, f))
        return f
    try:
        n = f.fileno()
    except (AttributeError, OSError, ValueError) as e:
        raise InvalidSpec("%s: want a file or a descriptor, got %s" % (what, type(f).__name__)) from e
    if not isinstance(n, int):
        raise InvalidSpec("%s: fileno() did not return a descriptor" % what)
    return n
