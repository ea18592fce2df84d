"""The asyncio client: the blocking client's methods as coroutines, for an asyncio gateway.

Each call opens its own connection to the sidecar's Unix socket (asyncio streams, HTTP/1.1 with
``Connection: close``) and closes it however the call ends: with an answer, an error, a timeout, or the
task being cancelled. Nothing blocks the event loop.
"""

from __future__ import annotations

import array
import asyncio
import json
import os
import socket
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type

from . import _args
from ._args import Duration, Signal
from ._errors import ProtocolError, SidecarUnavailable, WaitTimeout
from ._sync import Record, _Base, _decode, _event, _obj, _records

_MAX_HEAD = 64 << 10  # an answer's status line and headers; the sidecar's are a few hundred bytes


class _Conn:
    """One HTTP exchange on its own connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.chunked = False
        self.remaining: Optional[int] = None  # Content-Length left, when the answer has one
        self.retry_after: Optional[str] = None  # the answer's Retry-After, when it has one

    def close(self) -> None:
        # Closing the transport releases the socket at once; there is nothing to flush for a caller that
        # has its answer or gave up on it.
        self.writer.close()

    async def head(self) -> int:
        """Read the status line and headers; return the status."""
        line = await self.reader.readline()
        parts = line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError("not an HTTP answer: %r" % line[:200])
        status = int(parts[1])
        size = len(line)
        while True:
            h = await self.reader.readline()
            size += len(h)
            if size > _MAX_HEAD:
                raise ProtocolError("answer headers larger than %d bytes" % _MAX_HEAD, status=status)
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "transfer-encoding" and "chunked" in value.lower():
                self.chunked = True
            elif name == "content-length" and value.isdigit():
                self.remaining = int(value)
            elif name == "retry-after":
                self.retry_after = value
        return status

    async def piece(self) -> bytes:
        """The next piece of the body (b"" at its end)."""
        if self.chunked:
            line = await self.reader.readline()
            try:
                n = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError as e:
                raise ProtocolError("bad chunk header: %r" % line[:100]) from e
            if n == 0:
                while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b""
            data = await self.reader.readexactly(n)
            await self.reader.readexactly(2)  # CRLF after the chunk
            return data
        if self.remaining is not None:
            if self.remaining == 0:
                return b""
            data = await self.reader.read(min(self.remaining, 1 << 16))
            if not data:
                raise ProtocolError("answer ended before its Content-Length")
            self.remaining -= len(data)
            return data
        return await self.reader.read(1 << 16)

    async def body(self) -> bytes:
        out = bytearray()
        while True:
            p = await self.piece()
            if not p:
                return bytes(out)
            out += p


def _request_bytes(method: str, path: str, body: Optional[Mapping[str, Any]]) -> bytes:
    head = ["%s %s HTTP/1.1" % (method, path), "Host: hlaunch", "Accept: application/json",
            "Connection: close"]
    data = b""
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        head += ["Content-Type: application/json", "Content-Length: %d" % len(data)]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data


class EventStream:
    """The sidecar's events as an async iterator (``async for ev in client.events()``).

    The stream holds one connection. It is closed when the sidecar ends the stream, when the task reading
    it is cancelled, on ``aclose()``, and on leaving ``async with``: use ``async with client.events() as
    evs:`` (or call ``aclose()``) when leaving the loop early, so the connection is not left to the
    garbage collector.
    """

    def __init__(self, client: "AsyncClient", path: str) -> None:
        self._client = client
        self._path = path
        self._conn: Optional[_Conn] = None
        self._buf = b""
        self._done = False

    def __aiter__(self) -> "EventStream":
        return self

    async def __aenter__(self) -> "EventStream":
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], e: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the stream's connection; further iteration ends at once."""
        self._done = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def __anext__(self) -> Record:
        if self._done:
            raise StopAsyncIteration
        try:
            if self._conn is None:
                self._conn = await self._client._open(self._path, None, None)
                status = await self._conn.head()
                if status >= 400:
                    _decode(status, await self._conn.body(), self._conn.retry_after)
            while True:
                line, sep, rest = self._buf.partition(b"\n")
                if sep:
                    self._buf = rest
                    if line.strip():
                        return _event(line.strip())
                    continue
                piece = await self._conn.piece()
                if not piece:
                    await self.aclose()
                    raise StopAsyncIteration
                self._buf += piece
        except StopAsyncIteration:
            raise
        except BaseException:
            # Cancelled, or the answer was bad: a half-read stream cannot be resumed, so it is closed now.
            await self.aclose()
            raise


class AsyncClient(_Base):
    """An asyncio client of one sidecar socket: the methods of ``Client``, as coroutines.

    Args:
        socket_path: the sidecar's Unix socket; None means ``default_socket()``.
        timeout: seconds to wait for an answer to ordinary requests (``wait`` and ``events`` manage
            their own timeouts).
    """

    async def _open(self, path: str, body: Optional[Mapping[str, Any]], fds: Optional[Sequence[int]],
                    method: str = "GET") -> _Conn:
        """Connect and send one request (with ``fds`` passed alongside its first bytes)."""
        data = _request_bytes(method, path, body)
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            try:
                await loop.sock_connect(sock, self.socket_path)
            except (FileNotFoundError, ConnectionRefusedError, PermissionError) as e:
                raise SidecarUnavailable("cannot reach the sidecar at %s: %s" % (self.socket_path, e)) from e
            if fds:
                # The descriptors travel with the request's first bytes (SCM_RIGHTS). A fresh socket's send
                # buffer takes a request this small at once; the rest, if any, goes through the stream.
                rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                sent = sock.sendmsg([data], rights)
                data = data[sent:]
            reader, writer = await asyncio.open_unix_connection(sock=sock)
        except BaseException:
            sock.close()
            raise
        conn = _Conn(reader, writer)
        try:
            if data:
                writer.write(data)
                await writer.drain()
        except BaseException as e:
            conn.close()
            if isinstance(e, (ConnectionError, OSError)):
                raise SidecarUnavailable("connection to %s failed: %s" % (self.socket_path, e)) from e
            raise
        return conn

    async def _exchange(self, method: str, path: str, body: Optional[Mapping[str, Any]],
                        fds: Optional[Sequence[int]]) -> Tuple[int, bytes, Optional[str]]:
        conn = await self._open(path, body, fds, method)
        try:
            status = await conn.head()
            return status, await conn.body(), conn.retry_after
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            raise SidecarUnavailable("connection to %s failed: %s" % (self.socket_path, e)) from e
        finally:
            conn.close()

    async def _request(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None,
                       timeout: Optional[float] = -1.0, fds: Optional[Sequence[int]] = None) -> Any:
        t = self.timeout if timeout is not None and timeout < 0 else timeout
        try:
            status, raw, retry_after = await asyncio.wait_for(self._exchange(method, path, body, fds), t)
        except asyncio.TimeoutError as e:
            raise SidecarUnavailable("no answer from %s within %ss" % (self.socket_path, t)) from e
        return _decode(status, raw, retry_after)

    # -- API ---------------------------------------------------------------------------------------

    async def spawn(self, spec: Mapping[str, Any], stdin: Any = None, stdout: Any = None,
                    stderr: Any = None) -> Record:
        """Start a worker and return its receipt; as ``Client.spawn``.

        A cancelled spawn may still have started its worker (the sidecar runs a launch it has received
        to its end and announces it with a ``started`` event).
        """
        body = _args.prepare_spec(spec)
        if stdin is None and stdout is None and stderr is None:
            return _obj(await self._request("POST", "/v1/workers", body))
        body["stdio"] = "inherit"
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            fds = _args.fds_for(stdin, stdout, stderr, devnull)
            return _obj(await self._request("POST", "/v1/workers", body, fds=fds))
        finally:
            os.close(devnull)

    async def list(self, state: Optional[str] = None) -> List[Record]:
        """Every worker record, each verified now; ``state`` filters (one of ``STATES``)."""
        return _records(await self._request("GET", _args.list_path(state)))

    async def get(self, worker_id: str) -> Record:
        """One worker's record by id or token. Raises NotFound."""
        return _obj(await self._request("GET", _args.worker_path(worker_id)))

    async def signal(self, worker_id: str, sig: Signal = "TERM", all: bool = False) -> Record:
        """Signal the worker's leader (``all``: its whole cgroup) when its identity verifies."""
        body: Dict[str, Any] = {"signal": _args.signal_name(sig), "all": bool(all)}
        path = _args.worker_path(worker_id, "/signal")
        return _obj(await self._request("POST", path, body))

    async def stop(self, worker_id: str, grace: Optional[Duration] = None) -> Record:
        """SIGTERM, ``grace``, then the whole cgroup killed; the final record. Raises NotEmpty."""
        body = _args.stop_body(grace)
        path = _args.worker_path(worker_id, "/stop")
        extra = 5.0 if grace is None else _args.seconds(grace, "grace")
        t = None if self.timeout is None else self.timeout + extra
        return _obj(await self._request("POST", path, body, timeout=t))

    async def wait(self, worker_id: str, timeout: Optional[Duration] = None) -> Record:
        """Wait until the worker has ended and return its final record.

        ``timeout`` (seconds, a timedelta or a string) raises WaitTimeout while the worker still runs.
        Cancelling the awaiting task closes the connection; the worker is not affected.
        """
        path = _args.wait_path(worker_id, timeout)
        if timeout is None:
            return _obj(await self._request("GET", path, timeout=None))
        secs = _args.seconds(timeout, "timeout")
        try:
            # The sidecar answers 408 at the deadline; the local bound only covers a sidecar that does not.
            return _obj(await self._request("GET", path, timeout=secs + (self.timeout or 30.0)))
        except SidecarUnavailable as e:
            if isinstance(e.__cause__, asyncio.TimeoutError):
                raise WaitTimeout("the worker still ran after %ss" % secs) from e
            raise

    def events(self, since: Optional[int] = None) -> EventStream:
        """The sidecar's events: ``async for ev in client.events(since=0): ...``; see ``EventStream``."""
        return EventStream(self, _args.events_path(since))

    async def health(self) -> Record:
        """The sidecar's health: ``status``, ``version``, ``pid``, ``workers``, ``running``, ..."""
        return _obj(await self._request("GET", "/v1/health"))

    async def doctor(self) -> Record:
        """The host report of ``hlaunch doctor --json``, as seen by the sidecar."""
        return _obj(await self._request("GET", "/v1/doctor"))
