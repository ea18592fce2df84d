"""Client for the hlaunch sidecar: spawn, track and stop workers over its Unix socket.

Standard library only (``http.client`` over ``AF_UNIX``), so a gateway can import it without new
dependencies. Every method is one HTTP request on a fresh connection, so a ``Client`` is safe to share
between threads and survives sidecar restarts without any reconnect logic.

Workers, receipts and events are plain dicts with the same fields as ``hlaunch exec --detach`` and
``hlaunch ps --json`` print (``id``, ``token``, ``pid``, ``state``, ``exit_code``, ...); see
docs/sidecar.md and docs/schema/.

Example::

    from hlaunch_client import Client, KeyHeld

    c = Client("/run/hlaunch/sidecar.sock")
    receipt = c.spawn({"profile": "alice", "argv": ["hermes", "chat", "-q", "hi"],
                       "key": "kanban-42", "log": "/srv/logs/42.log"})
    final = c.wait(receipt["id"], timeout=600)
    print(final["exit_code"])

Errors are typed: every error answer of the sidecar raises a subclass of ``HlaunchError`` chosen by its
stable code (``InvalidSpec`` for ``invalid``, ``KeyHeld`` for ``key_held``, ...), with ``.code``,
``.status`` and the message.
"""

import array
import datetime
import http.client
import json
import os
import signal as _signal
import socket
import urllib.parse

__all__ = [
    "Client",
    "HlaunchError",
    "SidecarUnavailable",
    "ProtocolError",
    "InvalidSpec",
    "NotFound",
    "Refused",
    "Unverified",
    "NotRunning",
    "LeaderExited",
    "KeyHeld",
    "Degraded",
    "NotEmpty",
    "CannotRun",
    "CommandNotFound",
    "Forbidden",
    "TooLarge",
    "WaitTimeout",
    "Unsupported",
    "default_socket",
]


class HlaunchError(Exception):
    """An error answer of the sidecar, or a failure to get one.

    Attributes:
        code: the stable error code (``"invalid"``, ``"key_held"``, ...; see docs/sidecar.md).
        status: the HTTP status, or None when no answer was received.
        message: the sidecar's one-line message.
    """

    code = "internal"

    def __init__(self, message, code=None, status=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status

    def __str__(self):
        return "%s (%s)" % (self.message, self.code)


class SidecarUnavailable(HlaunchError):
    """The socket could not be reached (no sidecar, wrong path, or no permission on the socket file)."""

    code = "unavailable"


class ProtocolError(HlaunchError):
    """The sidecar's answer was not the JSON it should be."""

    code = "protocol"


class InvalidSpec(HlaunchError):
    """Bad input: a spec field, a profile name, a signal, a duration. Nothing was started."""

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
    """This process's uid is not the sidecar's, not root, and not in its socket group."""

    code = "forbidden"


class TooLarge(HlaunchError):
    """The request body exceeded the sidecar's limit (1 MiB by default)."""

    code = "too_large"


class WaitTimeout(HlaunchError):
    """``wait(timeout=...)`` elapsed while the worker still runs."""

    code = "timeout"


class Unsupported(HlaunchError):
    """The endpoint is not implemented by this sidecar."""

    code = "not_implemented"


def _all_subclasses(cls):
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


_BY_CODE = {cls.code: cls for cls in _all_subclasses(HlaunchError)}


def error_for(status, payload):
    """Return the exception for an error answer ``payload`` (the decoded JSON) with HTTP ``status``."""
    err = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(err, dict) or "code" not in err:
        return ProtocolError("HTTP %d without a JSON error body" % status, status=status)
    code = str(err.get("code"))
    cls = _BY_CODE.get(code, HlaunchError)
    return cls(str(err.get("message", "")), code=code, status=status)


def default_socket():
    """The sidecar's default socket path, as ``hlaunch sidecar`` chooses it.

    ``$HLAUNCH_SOCKET`` when set; else ``/run/hlaunch/sidecar.sock`` for root; else
    ``$XDG_RUNTIME_DIR/hlaunch/sidecar.sock``.
    """
    path = os.environ.get("HLAUNCH_SOCKET")
    if path:
        return path
    if os.geteuid() == 0:
        return "/run/hlaunch/sidecar.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "hlaunch", "sidecar.sock")
    return "/run/user/%d/hlaunch/sidecar.sock" % os.geteuid()


_DEFAULT = object()  # "use Client.timeout"; None means no timeout at all


class _UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose transport is a Unix stream socket."""

    def __init__(self, path, timeout):
        super().__init__("hlaunch", timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class _FDPassingConnection(_UnixHTTPConnection):
    """A Unix HTTP connection that passes descriptors (SCM_RIGHTS) with the first bytes of its request."""

    def __init__(self, path, timeout, fds):
        super().__init__(path, timeout)
        self._fds = list(fds)

    def send(self, data):
        if self._fds and data:
            if self.sock is None:
                self.connect()
            if isinstance(data, str):
                data = data.encode("iso-8859-1")
            fds, self._fds = self._fds, None
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
            sent = self.sock.sendmsg([bytes(data)], rights)
            if sent < len(data):
                self.sock.sendall(data[sent:])
            return
        super().send(data)


def _fileno(f, what):
    """An int descriptor from an int or an object with fileno()."""
    if isinstance(f, bool):
        raise InvalidSpec("%s must be a file or a descriptor" % what)
    if isinstance(f, int):
        return f
    try:
        return f.fileno()
    except (AttributeError, OSError, ValueError) as e:
        raise InvalidSpec("%s must be a file or a descriptor" % what) from e


def _duration(value, what):
    """Turn seconds (int/float), a timedelta, or a Go duration string into a Go duration string."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidSpec("%s must be seconds, a timedelta, or a duration string" % what)
    if value < 0:
        raise InvalidSpec("%s must not be negative" % what)
    return "%dms" % round(value * 1000)


def _signal_name(sig):
    """Accept "TERM", "SIGTERM", 15 or signal.SIGTERM; return what the sidecar accepts."""
    if isinstance(sig, _signal.Signals):
        return sig.name
    if isinstance(sig, bool):
        raise InvalidSpec("signal must be a name or a number")
    if isinstance(sig, int):
        return str(sig)
    if isinstance(sig, str):
        return sig
    raise InvalidSpec("signal must be a name or a number")


class Client:
    """A client of one sidecar socket.

    Args:
        socket_path: the sidecar's Unix socket; None means ``default_socket()``.
        timeout: seconds to wait for an answer to ordinary requests (``wait`` and ``events`` manage
            their own timeouts).
    """

    def __init__(self, socket_path=None, timeout=30.0):
        self.socket_path = socket_path or default_socket()
        self.timeout = timeout

    def __repr__(self):
        return "Client(%r)" % self.socket_path

    # -- transport ---------------------------------------------------------------------------------

    def _connect(self, timeout):
        return _UnixHTTPConnection(self.socket_path, timeout)

    def _send(self, conn, method, path, body):
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            try:
                conn.request(method, path, body=data, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                # The sidecar may answer before reading the whole body (413 too_large) and close; its answer
                # is already in our receive buffer. If it is not, getresponse fails and we report that.
                if conn.sock is None:
                    raise
            return conn.getresponse()
        except (FileNotFoundError, ConnectionRefusedError, PermissionError) as e:
            conn.close()
            raise SidecarUnavailable("cannot reach the sidecar at %s: %s" % (self.socket_path, e)) from e
        except (ConnectionError, http.client.HTTPException) as e:
            conn.close()
            raise SidecarUnavailable("connection to %s failed: %s" % (self.socket_path, e)) from e

    def _request(self, method, path, body=None, timeout=_DEFAULT, fds=None):
        timeout = self.timeout if timeout is _DEFAULT else timeout
        conn = _FDPassingConnection(self.socket_path, timeout, fds) if fds else self._connect(timeout)
        try:
            resp = self._send(conn, method, path, body)
            raw = resp.read()
        except socket.timeout as e:
            raise SidecarUnavailable("no answer from %s within the timeout" % self.socket_path) from e
        finally:
            conn.close()
        try:
            payload = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError as e:
            raise ProtocolError("answer is not JSON (HTTP %d): %r" % (resp.status, raw[:200]), status=resp.status) from e
        if resp.status >= 400:
            raise error_for(resp.status, payload)
        return payload

    @staticmethod
    def _worker_path(worker_id, suffix=""):
        if not worker_id or not isinstance(worker_id, str):
            raise InvalidSpec("worker id must be a non-empty string")
        return "/v1/workers/" + urllib.parse.quote(worker_id, safe="") + suffix

    # -- API ---------------------------------------------------------------------------------------

    def spawn(self, spec, stdin=None, stdout=None, stderr=None):
        """Start a worker and return its receipt.

        Args:
            spec: the launch spec as a dict (docs/schema/spec.schema.json): ``profile`` and ``argv`` are
                required; ``env``, ``inherit``, ``secrets``, ``pass``, ``scope``, ``require_scope``,
                ``limits``, ``sandbox``, ``key``, ``timeout``, ``grace``, ``log``, ... as for
                ``hlaunch exec``. Unknown fields are refused.
            stdin, stdout, stderr: files (or descriptors) the worker gets as its own 0, 1 and 2, passed
                to the sidecar with the request (SCM_RIGHTS); any one given sets ``"stdio": "inherit"``,
                and the others are /dev/null. A worker that speaks JSON over its stdio gets the caller's
                pipes this way. The caller keeps (and closes) its own copies.

        Returns:
            The receipt dict: ``id``, ``token``, ``pid``, ``mode``, ``profile``, ``home``, ``cgroup``, ...

        Raises:
            InvalidSpec, KeyHeld, Degraded, CannotRun, CommandNotFound, TooLarge, ...
        """
        if not isinstance(spec, dict):
            raise InvalidSpec("spec must be a dict")
        if stdin is None and stdout is None and stderr is None:
            return self._request("POST", "/v1/workers", spec)
        spec = dict(spec, stdio="inherit")
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            fds = [devnull if f is None else _fileno(f, name)
                   for f, name in ((stdin, "stdin"), (stdout, "stdout"), (stderr, "stderr"))]
            return self._request("POST", "/v1/workers", spec, fds=fds)
        finally:
            os.close(devnull)

    def list(self, state=None):
        """Return every worker record (a list of dicts), each verified now.

        Args:
            state: only records in this state (``"running"``, ``"exited"``, ...).
        """
        path = "/v1/workers"
        if state:
            path += "?" + urllib.parse.urlencode({"state": state})
        return self._request("GET", path)

    def get(self, worker_id):
        """Return one worker's record; ``worker_id`` is its id or its token. Raises NotFound."""
        return self._request("GET", self._worker_path(worker_id))

    def signal(self, worker_id, sig="TERM", all=False):
        """Send a signal to the worker's leader (or, with ``all``, to every process of its cgroup).

        The signal is sent only when the worker's identity verifies; otherwise Refused or Unverified
        is raised and nothing was sent.

        Args:
            sig: ``"TERM"``, ``"SIGKILL"``, ``15`` or ``signal.SIGTERM``.
            all: signal the whole cgroup instead of the leader.
        """
        body = {"signal": _signal_name(sig), "all": bool(all)}
        return self._request("POST", self._worker_path(worker_id, "/signal"), body)

    def stop(self, worker_id, grace=None):
        """SIGTERM, wait up to ``grace``, then kill the worker's whole cgroup; return the final record.

        Args:
            grace: seconds (int/float), a timedelta, or a Go duration string such as ``"2s"``; None means
                the sidecar's default (5 s).

        Raises:
            NotEmpty when the cgroup could not be verified empty.
        """
        body = {}
        g = _duration(grace, "grace")
        if g is not None:
            body["grace"] = g
        # The answer comes after the grace: allow for it on top of the normal timeout.
        extra = 5.0 if grace is None else _seconds(grace)
        return self._request("POST", self._worker_path(worker_id, "/stop"), body, timeout=self.timeout + extra)

    def wait(self, worker_id, timeout=None):
        """Block until the worker has ended and return its final record (``exit_code`` or ``signal``).

        Args:
            timeout: seconds (or a timedelta or duration string); None waits as long as it takes.

        Raises:
            WaitTimeout when ``timeout`` elapsed while the worker still runs.
        """
        path = self._worker_path(worker_id, "/wait")
        if timeout is None:
            return self._request("GET", path, timeout=None)  # no socket timeout: answered when it ends
        t = _duration(timeout, "timeout")
        return self._request("GET", path + "?" + urllib.parse.urlencode({"timeout": t}),
                             timeout=_seconds(timeout) + self.timeout)

    def events(self, since=None):
        """Iterate over the sidecar's events as they happen (a generator of dicts).

        Each event has ``seq``, ``type`` (``started``, ``exited``, ``oom``, ``adopted``, ``refused``,
        ``lost``), ``time`` and, for worker events, ``id``, ``pid``, ``state``, ``exit_code``/``signal``.
        ``initial: true`` marks events of the sidecar's start-up reconciliation.

        Args:
            since: replay the events after this ``seq`` that the sidecar still holds first (0: all it holds);
                None: only new events. After a ``lost`` event, re-``list()`` and resubscribe.

        The generator ends when the sidecar closes the stream (shutdown or restart): call ``list()`` and
        subscribe again with ``since`` set to the last ``seq`` seen. Close it with ``.close()``.
        """
        path = "/v1/events"
        if since is not None:
            path += "?" + urllib.parse.urlencode({"since": int(since)})
        conn = self._connect(None)
        try:
            resp = self._send(conn, "GET", path, None)
            if resp.status >= 400:
                raw = resp.read()
                try:
                    payload = json.loads(raw.decode("utf-8"))
                except ValueError:
                    payload = None
                raise error_for(resp.status, payload)
            while True:
                line = resp.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    continue
                try:
                    yield json.loads(line.decode("utf-8"))
                except ValueError as e:
                    raise ProtocolError("bad event line: %r" % line[:200]) from e
        finally:
            conn.close()

    def health(self):
        """Return the sidecar's health: ``status`` (``ok`` or ``degraded``), ``pid``, ``workers``, ``running``, ..."""
        return self._request("GET", "/v1/health")

    def doctor(self):
        """Return the host report of ``hlaunch doctor --json``, as seen by the sidecar. Raises Unsupported if absent."""
        return self._request("GET", "/v1/doctor")


def _seconds(value):
    """Seconds in a duration given as number, timedelta or Go duration string (for socket timeouts only)."""
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    total, num, i = 0.0, "", 0
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    s = str(value)
    while i < len(s):
        if s[i].isdigit() or s[i] == ".":
            num += s[i]
            i += 1
            continue
        for u in ("ns", "us", "µs", "ms", "s", "m", "h"):
            if s.startswith(u, i):
                total += float(num or 0) * units[u]
                num, i = "", i + len(u)
                break
        else:
            return 60.0  # unparseable here: the sidecar will answer InvalidSpec; any timeout will do
    return total
