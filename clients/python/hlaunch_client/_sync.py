"""The blocking client: one HTTP request per call on a fresh connection to the sidecar's Unix socket."""

from __future__ import annotations

import array
import http.client
import json
import os
import socket
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _args
from ._args import Duration, Signal
from ._errors import ProtocolError, SidecarUnavailable, error_for

#: A record, receipt, event or health answer: the sidecar's JSON object.
Record = Dict[str, Any]


def default_socket() -> str:
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


class _Default:
    """The type of ``_DEFAULT``: "use Client.timeout" (None means no timeout at all)."""


_DEFAULT = _Default()


class _UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose transport is a Unix stream socket."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("hlaunch", timeout=timeout)
        self._path = path

    def connect(self) -> None:
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

    def __init__(self, path: str, timeout: Optional[float], fds: Sequence[int]) -> None:
        super().__init__(path, timeout)
        self._fds: Optional[List[int]] = list(fds)

    def send(self, data: Any) -> None:
        if self._fds and data:
            if self.sock is None:
                self.connect()
            if isinstance(data, str):
                data = data.encode("iso-8859-1")
            fds, self._fds = self._fds, None
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
            sock = self.sock
            if sock is None:
                raise ConnectionError("not connected")
            sent = sock.sendmsg([bytes(data)], rights)
            if sent < len(data):
                sock.sendall(data[sent:])
            return
        super().send(data)


def _decode(status: int, raw: bytes, retry_after: Optional[str] = None) -> Any:
    """The JSON of an answer; an error answer raises its exception (with the answer's ``Retry-After``)."""
    try:
        payload = json.loads(raw.decode("utf-8")) if raw else None
    except ValueError as e:
        raise ProtocolError("answer is not JSON (HTTP %d): %r" % (status, raw[:200]), status=status) from e
    if status >= 400:
        raise error_for(status, payload, retry_after)
    return payload


def _obj(payload: Any) -> Record:
    """An answer that must be one JSON object."""
    if not isinstance(payload, dict):
        raise ProtocolError("answer is not a JSON object: %.200r" % (payload,))
    return payload


def _records(payload: Any) -> List[Record]:
    """An answer that must be a JSON array of objects."""
    if not isinstance(payload, list) or not all(isinstance(r, dict) for r in payload):
        raise ProtocolError("answer is not a JSON array of records: %.200r" % (payload,))
    return payload


def _event(line: bytes) -> Record:
    try:
        ev = json.loads(line.decode("utf-8"))
    except ValueError as e:
        raise ProtocolError("bad event line: %r" % line[:200]) from e
    if not isinstance(ev, dict):
        raise ProtocolError("event is not a JSON object: %r" % line[:200])
    return ev


class _Base:
    """What both clients hold: the socket path and the timeout of an ordinary request, both checked."""

    def __init__(self, socket_path: Optional[str] = None, timeout: Optional[float] = 30.0) -> None:
        self.socket_path = socket_path or default_socket()
        if timeout is not None:
            timeout = _args.seconds(timeout, "timeout")
        self.timeout = timeout

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self.socket_path)


class Client(_Base):
    """A blocking client of one sidecar socket. Safe to share between threads.

    Every method is one HTTP request on a fresh connection, so a sidecar restart needs no reconnect logic.

    Args:
        socket_path: the sidecar's Unix socket; None means ``default_socket()``.
        timeout: seconds to wait for an answer to ordinary requests (``wait`` and ``events`` manage
            their own timeouts).
    """

    # -- transport ---------------------------------------------------------------------------------

    def _connect(self, timeout: Optional[float]) -> _UnixHTTPConnection:
        return _UnixHTTPConnection(self.socket_path, timeout)

    def _send(self, conn: _UnixHTTPConnection, method: str, path: str,
              body: Optional[Mapping[str, Any]]) -> http.client.HTTPResponse:
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

    def _request(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None,
                 timeout: Union[Optional[float], _Default] = _DEFAULT,
                 fds: Optional[Sequence[int]] = None) -> Any:
        t = self.timeout if isinstance(timeout, _Default) else timeout
        conn = _FDPassingConnection(self.socket_path, t, fds) if fds else self._connect(t)
        try:
            resp = self._send(conn, method, path, body)
            raw = resp.read()
        except socket.timeout as e:
            raise SidecarUnavailable("no answer from %s within the timeout" % self.socket_path) from e
        finally:
            conn.close()
        return _decode(resp.status, raw, resp.getheader("Retry-After"))

    # -- API ---------------------------------------------------------------------------------------

    def spawn(self, spec: Mapping[str, Any], stdin: Any = None, stdout: Any = None, stderr: Any = None) -> Record:
        """Start a worker and return its receipt.

        Args:
            spec: the launch spec as a dict (the spec schema): ``profile`` and ``argv`` are required;
                ``env``, ``inherit``, ``secrets``, ``pass``, ``scope``, ``require_scope``, ``limits``,
                ``sandbox``, ``key``, ``timeout``, ``grace``, ``log``, ... as for ``hlaunch exec``.
                ``timeout`` and ``grace`` take seconds (a number), a timedelta or a string ("10m").
                Unknown fields are refused.
            stdin, stdout, stderr: files (or descriptors) the worker gets as its own 0, 1 and 2, passed
                to the sidecar with the request (SCM_RIGHTS); any one given sets ``"stdio": "inherit"``,
                and the others are /dev/null. The caller keeps (and closes) its own copies.

        Returns:
            The receipt dict: ``id``, ``token``, ``pid``, ``mode``, ``profile``, ``home``, ``cgroup``, ...

        Raises:
            InvalidSpec, KeyHeld, Degraded, CannotRun, CommandNotFound, TooLarge, ...
        """
        body = _args.prepare_spec(spec)
        if stdin is None and stdout is None and stderr is None:
            return _obj(self._request("POST", "/v1/workers", body))
        body["stdio"] = "inherit"
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            fds = _args.fds_for(stdin, stdout, stderr, devnull)
            return _obj(self._request("POST", "/v1/workers", body, fds=fds))
        finally:
            os.close(devnull)

    def list(self, state: Optional[str] = None) -> List[Record]:
        """Return every worker record (a list of dicts), each verified now.

        Args:
            state: only records in this state: one of ``hlaunch_client.STATES`` (``"running"``,
                ``"exited"``, ...); anything else raises InvalidSpec.
        """
        return _records(self._request("GET", _args.list_path(state)))

    def get(self, worker_id: str) -> Record:
        """Return one worker's record; ``worker_id`` is its id or its token. Raises NotFound."""
        return _obj(self._request("GET", _args.worker_path(worker_id)))

    def signal(self, worker_id: str, sig: Signal = "TERM", all: bool = False) -> Record:
        """Send a signal to the worker's leader (or, with ``all``, to every process of its cgroup).

        The signal is sent only when the worker's identity verifies; otherwise Refused or Unverified
        is raised and nothing was sent.

        Args:
            sig: ``"TERM"``, ``"SIGKILL"``, ``15`` or ``signal.SIGTERM``.
            all: signal the whole cgroup instead of the leader.
        """
        body = {"signal": _args.signal_name(sig), "all": bool(all)}
        return _obj(self._request("POST", _args.worker_path(worker_id, "/signal"), body))

    def stop(self, worker_id: str, grace: Optional[Duration] = None) -> Record:
        """SIGTERM, wait up to ``grace``, then kill the worker's whole cgroup; return the final record.

        Args:
            grace: seconds, a timedelta, or a duration string such as ``"2s"``; None means the sidecar's
                default (5 s).

        Raises:
            NotEmpty when the cgroup could not be verified empty.
        """
        body = _args.stop_body(grace)
        path = _args.worker_path(worker_id, "/stop")
        # The answer comes after the grace: allow for it on top of the normal timeout.
        extra = 5.0 if grace is None else _args.seconds(grace, "grace")
        t = None if self.timeout is None else self.timeout + extra
        return _obj(self._request("POST", path, body, timeout=t))

    def wait(self, worker_id: str, timeout: Optional[Duration] = None) -> Record:
        """Block until the worker has ended and return its final record (``exit_code`` or ``signal``).

        Args:
            timeout: seconds, a timedelta or a duration string; None waits as long as it takes.

        Raises:
            WaitTimeout when ``timeout`` elapsed while the worker still runs.
        """
        path = _args.wait_path(worker_id, timeout)
        if timeout is None:
            return _obj(self._request("GET", path, timeout=None))
        t = _args.seconds(timeout, "timeout") + (self.timeout or 30.0)
        return _obj(self._request("GET", path, timeout=t))

    def events(self, since: Optional[int] = None) -> Iterator[Record]:
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
        path = _args.events_path(since)
        return self._events(path)

    def _events(self, path: str) -> Iterator[Record]:
        conn = self._connect(None)
        try:
            resp = self._send(conn, "GET", path, None)
            if resp.status >= 400:
                _decode(resp.status, resp.read(), resp.getheader("Retry-After"))
            while True:
                line = resp.readline()
                if not line:
                    return
                line = line.strip()
                if line:
                    yield _event(line)
        finally:
            conn.close()

    def health(self) -> Record:
        """Return the sidecar's health: ``status`` (``ok`` or ``degraded``), ``version``, ``pid``, ``workers``, ..."""
        return _obj(self._request("GET", "/v1/health"))

    def doctor(self) -> Record:
        """Return the host report of ``hlaunch doctor --json``, as seen by the sidecar. Raises Unsupported if absent."""
        return _obj(self._request("GET", "/v1/doctor"))
