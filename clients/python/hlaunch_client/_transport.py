"""The one transport of both clients: an HTTP/1.1 exchange on a fresh Unix-socket connection (asyncio).

The blocking ``Client`` runs these same coroutines on a private event loop, so a crash, a stop or a cut
answer of the sidecar raises the same error in both clients. Every failure is classified here, by how far
the exchange got:

- the connection could not be made, or the sidecar reset it before any answer (it had not read our
  request: a process that dies with unread data in its socket resets it): ``SidecarUnavailable``;
- the request was sent and no whole answer came (end of file before or during the answer, no answer
  within the timeout): ``AnswerLost``;
- an answer that is whole but not HTTP or not JSON: ``ProtocolError``.
"""

from __future__ import annotations

import array
import asyncio
import json
import os
import socket
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import _args
from ._errors import AnswerLost, ProtocolError, SidecarUnavailable, error_for

_MAX_HEAD = 64 << 10  # an answer's status line and headers; the sidecar's are a few hundred bytes


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


class Conn:
    """One HTTP exchange on its own connection, from the request sent to the answer's end."""

    def __init__(self, path: str, reader: asyncio.StreamReader, writer: Optional[asyncio.StreamWriter],
                 sock: Optional[socket.socket] = None) -> None:
        self.path = path
        self.reader = reader
        self.writer = writer
        self.sock = sock  # the socket, when no writer owns it
        self.status = 0
        self.headers: Dict[str, str] = {}
        self.chunked = False
        self.remaining: Optional[int] = None  # Content-Length left, when the answer has one
        self.answered = False  # a byte of the answer has arrived
        self.ended = False  # the body's end was read (the last chunk, or Content-Length bytes)
        self.cut: Optional[OSError] = None  # the sidecar closed before the whole request was sent

    def close(self) -> None:
        # Closing the transport releases the socket at once; there is nothing to flush for a caller that
        # has its answer or gave up on it.
        if self.writer is not None:
            self.writer.close()
        if self.sock is not None:
            self.sock.close()

    def lost(self, e: BaseException) -> Exception:
        """The error for a connection that failed with ``e`` after the request was written."""
        if not self.answered and (self.cut is not None or isinstance(e, (ConnectionResetError, BrokenPipeError))):
            return SidecarUnavailable("the sidecar at %s closed the connection without reading the request: %s"
                                      % (self.path, e))
        what = "before answering" if not self.answered else "in the middle of its answer"
        return AnswerLost("the sidecar at %s closed the connection %s (%s)" % (self.path, what, e or "end of file"))

    async def _line(self) -> bytes:
        try:
            line = await self.reader.readline()
        except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
            raise self.lost(e) from e
        if not line:
            raise self.lost(EOFError("end of file"))
        self.answered = True
        if not line.endswith(b"\n"):
            raise self.lost(EOFError("end of file in the middle of a line"))
        return line

    async def _exactly(self, n: int) -> bytes:
        try:
            return await self.reader.readexactly(n)
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            raise self.lost(e) from e

    async def head(self) -> int:
        """Read the status line and headers; return the status."""
        line = await self._line()
        parts = line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError("not an HTTP answer: %r" % line[:200])
        self.status = int(parts[1])
        size = len(line)
        while True:
            h = await self._line()
            size += len(h)
            if size > _MAX_HEAD:
                raise ProtocolError("answer headers larger than %d bytes" % _MAX_HEAD, status=self.status)
            if h in (b"\r\n", b"\n"):
                break
            name, _, value = h.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip()
            self.headers[name] = value
            if name == "transfer-encoding" and "chunked" in value.lower():
                self.chunked = True
            elif name == "content-length" and value.isdigit():
                self.remaining = int(value)
        return self.status

    async def piece(self) -> bytes:
        """The next piece of the body (b"" at its end). An answer cut short raises AnswerLost."""
        if self.ended:
            return b""
        if self.chunked:
            line = await self._line()
            try:
                n = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError as e:
                raise ProtocolError("bad chunk header: %r" % line[:100]) from e
            if n == 0:
                while (await self._line()) not in (b"\r\n", b"\n"):
                    pass  # trailers
                self.ended = True
                return b""
            data = await self._exactly(n)
            await self._exactly(2)  # CRLF after the chunk
            return data
        if self.remaining is not None:
            if self.remaining == 0:
                self.ended = True
                return b""
            try:
                data = await self.reader.read(min(self.remaining, 1 << 16))
            except (ConnectionError, OSError) as e:
                raise self.lost(e) from e
            if not data:
                raise self.lost(EOFError("%d bytes short of its Content-Length" % self.remaining))
            self.remaining -= len(data)
            return data
        # No length: the body runs to the end of the connection (the sidecar always sends a length or chunks).
        try:
            data = await self.reader.read(1 << 16)
        except (ConnectionError, OSError) as e:
            raise self.lost(e) from e
        if not data:
            self.ended = True
        return data

    async def body(self) -> bytes:
        out = bytearray()
        while True:
            p = await self.piece()
            if not p:
                return bytes(out)
            out += p


def request_bytes(method: str, path: str, body: Optional[Mapping[str, Any]],
                  headers: Optional[Mapping[str, str]] = None) -> bytes:
    """One HTTP/1.1 request with ``Connection: close``: the sidecar closes after its answer."""
    head = ["%s %s HTTP/1.1" % (method, path), "Host: hlaunch", "Accept: application/json",
            "Connection: close"]
    head += ["%s: %s" % (k, v) for k, v in (headers or {}).items()]
    data = b""
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        head += ["Content-Type: application/json", "Content-Length: %d" % len(data)]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data


async def open_exchange(socket_path: str, method: str, path: str, body: Optional[Mapping[str, Any]] = None,
                        fds: Optional[Sequence[int]] = None,
                        headers: Optional[Mapping[str, str]] = None) -> Conn:
    """Connect and send one request (with ``fds`` passed alongside its first bytes). A failure to connect
    raises SidecarUnavailable: nothing of the request reached the sidecar."""
    data = request_bytes(method, path, body, headers)
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cut: Optional[OSError] = None
    try:
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, socket_path)
        except OSError as e:
            raise SidecarUnavailable("cannot reach the sidecar at %s: %s" % (socket_path, e)) from e
        try:
            if fds:
                # The descriptors travel with the request's first bytes (SCM_RIGHTS). A fresh socket's send
                # buffer takes a request this small at once; the rest follows.
                rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                data = data[sock.sendmsg([data], rights):]
            await loop.sock_sendall(sock, data)
        except (BrokenPipeError, ConnectionResetError) as e:
            # The sidecar closed before reading the whole request: it may have answered first (413
            # too_large); the answer, if any, is read below, and none is SidecarUnavailable.
            cut = e
        except OSError as e:
            raise SidecarUnavailable("cannot send the request to %s: %s" % (socket_path, e)) from e
        if cut is not None:
            # Whatever answer came is read now: the socket also reports the reset, which would hide the
            # answer from a stream reader.
            reader = asyncio.StreamReader()
            reader.feed_data(await _rest(loop, sock))
            reader.feed_eof()
            conn = Conn(socket_path, reader, None, sock)
            conn.cut = cut
            return conn
        reader, writer = await asyncio.open_unix_connection(sock=sock)
    except BaseException:
        sock.close()
        raise
    return Conn(socket_path, reader, writer)


async def _rest(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> bytes:
    """What the peer sent before it closed; its reset, reported once, does not end it early."""
    out = bytearray()
    resets = 0
    while True:
        try:
            piece = await loop.sock_recv(sock, 1 << 16)
        except (ConnectionResetError, BrokenPipeError):
            resets += 1
            if resets > 1:
                return bytes(out)
            continue
        if not piece:
            return bytes(out)
        out += piece


def decode(status: int, raw: bytes, retry_after: Optional[str] = None) -> Any:
    """The JSON of an answer; an error answer raises its exception (with the answer's ``Retry-After``)."""
    try:
        payload = json.loads(raw.decode("utf-8")) if raw else None
    except ValueError as e:
        raise ProtocolError("answer is not JSON (HTTP %d): %r" % (status, raw[:200]), status=status) from e
    if status >= 400:
        raise error_for(status, payload, retry_after)
    return payload


def obj(payload: Any) -> Any:
    """An answer that must be one JSON object."""
    if not isinstance(payload, dict):
        raise ProtocolError("answer is not a JSON object: %.200r" % (payload,))
    return payload


def records(payload: Any) -> List[Any]:
    """An answer that must be a JSON array of objects."""
    if not isinstance(payload, list) or not all(isinstance(r, dict) for r in payload):
        raise ProtocolError("answer is not a JSON array of records: %.200r" % (payload,))
    return payload


def event(line: bytes) -> Any:
    """One line of the event stream as its JSON object."""
    try:
        ev = json.loads(line.decode("utf-8"))
    except ValueError as e:
        raise ProtocolError("bad event line: %r" % line[:200]) from e
    if not isinstance(ev, dict):
        raise ProtocolError("event is not a JSON object: %r" % line[:200])
    return ev


class Base:
    """What both clients hold: the socket path and the timeout of an ordinary request, both checked."""

    def __init__(self, socket_path: Optional[str] = None, timeout: Optional[float] = 30.0) -> None:
        self.socket_path = socket_path or default_socket()
        if timeout is not None:
            timeout = _args.seconds(timeout, "timeout")
        self.timeout = timeout

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self.socket_path)
