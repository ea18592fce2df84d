"""The sidecar's streams (events, a worker's log) as async iterators, and their blocking form.

A stream holds one connection. It ends (``StopAsyncIteration``/``StopIteration``) only when the sidecar
ends its answer properly; a stream cut short (the sidecar died) or silent for longer than its idle timeout
(a stopped sidecar) raises ``StreamLost``. The blocking form drives the same coroutines on a private event
loop, so both end or raise alike.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Generic, Iterator, Mapping, Optional, Type, TypeVar, cast

from ._errors import AnswerLost, SidecarUnavailable, StreamLost
from ._transport import Conn, decode, event, open_exchange
from ._types import Event

T = TypeVar("T")

#: The events' heartbeat period the sidecar uses unless asked for another (docs/sidecar.md, "Events").
HEARTBEAT = 15.0


class _Stream(Generic[T]):
    """What both streams share: the connection, opened on first use, and the idle timeout."""

    def __init__(self, socket_path: str, path: str, idle_timeout: Optional[float],
                 open_timeout: Optional[float], headers: Optional[Mapping[str, str]] = None) -> None:
        self._socket_path = socket_path
        self._path = path
        self._idle = idle_timeout
        self._open_timeout = open_timeout
        self._headers = headers
        self._conn: Optional[Conn] = None
        self._done = False

    def __aiter__(self) -> "_Stream[T]":
        return self

    async def __aenter__(self) -> "_Stream[T]":
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

    async def _open(self) -> Conn:
        if self._conn is None:
            conn = await asyncio.wait_for(
                open_exchange(self._socket_path, "GET", self._path, headers=self._headers), self._open_timeout)
            self._conn = conn
            try:
                status = await asyncio.wait_for(conn.head(), self._open_timeout)
            except asyncio.TimeoutError as e:
                raise conn.lost(TimeoutError("no answer within %ss" % self._open_timeout)) from e
            if status >= 400:
                decode(status, await asyncio.wait_for(conn.body(), self._open_timeout), conn.headers.get("retry-after"))
            self._opened(conn)
        return self._conn

    def _opened(self, conn: Conn) -> None:
        """Called with the answer's head before the first piece is read."""

    async def _piece(self, conn: Conn) -> bytes:
        """The next piece of the body; b"" at its proper end; StreamLost when cut or idle too long."""
        try:
            return await asyncio.wait_for(conn.piece(), self._idle)
        except asyncio.TimeoutError as e:
            raise StreamLost("the stream from %s was silent for %ss" % (self._socket_path, self._idle)) from e
        except StreamLost:
            raise
        except (AnswerLost, SidecarUnavailable) as e:
            raise StreamLost("the stream from %s was cut: %s" % (self._socket_path, e)) from e

    async def _next(self) -> T:
        raise NotImplementedError

    async def __anext__(self) -> T:
        if self._done:
            raise StopAsyncIteration
        try:
            return await self._next()
        except BaseException:
            # Ended, cancelled, cut, or the answer was bad: a half-read stream cannot be resumed.
            await self.aclose()
            raise


class EventStream(_Stream[Event]):
    """The sidecar's events as an async iterator (``async for ev in client.events()``).

    Heartbeats (``{"type": "heartbeat"}``) are not handed out: they only keep the idle timeout from firing.
    Close the stream with ``aclose()`` or by leaving ``async with``; cancelling the task reading it closes it
    too.
    """

    def __init__(self, socket_path: str, path: str, idle_timeout: Optional[float],
                 open_timeout: Optional[float]) -> None:
        super().__init__(socket_path, path, idle_timeout, open_timeout)
        self._buf = b""

    async def __aenter__(self) -> "EventStream":
        return self

    def __aiter__(self) -> "EventStream":
        return self

    async def _next(self) -> Event:
        conn = await self._open()
        while True:
            line, sep, rest = self._buf.partition(b"\n")
            if sep:
                self._buf = rest
                if line.strip():
                    ev = event(line.strip())
                    if ev.get("type") == "heartbeat":
                        continue
                    return cast(Event, ev)
                continue
            piece = await self._piece(conn)
            if not piece:
                raise StopAsyncIteration
            self._buf += piece


class LogStream(_Stream[bytes]):
    """A worker's log as an async iterator of byte pieces (``async for data in client.logs(id)``).

    Attributes:
        start: the first offset the sidecar still holds (its ``Log-Start``), known once the stream opened.
        offset: the log offset of the next byte: resume a lost stream with ``logs(id, offset=s.offset)``.
    """

    def __init__(self, socket_path: str, path: str, offset: int, idle_timeout: Optional[float],
                 open_timeout: Optional[float]) -> None:
        super().__init__(socket_path, path, idle_timeout, open_timeout)
        self.offset = offset
        self.start: Optional[int] = None

    async def __aenter__(self) -> "LogStream":
        return self

    def __aiter__(self) -> "LogStream":
        return self

    def _opened(self, conn: Conn) -> None:
        value = conn.headers.get("log-start", "")
        if value.isdigit():
            self.start = int(value)
            self.offset = max(self.offset, self.start)

    async def _next(self) -> bytes:
        conn = await self._open()
        piece = await self._piece(conn)
        if not piece:
            raise StopAsyncIteration
        self.offset += len(piece)
        return piece


class Blocking(Generic[T]):
    """A stream for the blocking client: the same async stream, driven on a private event loop.

    Iterate with ``for``; close with ``close()`` or by leaving ``with``.
    """

    def __init__(self, stream: _Stream[T]) -> None:
        self.stream = stream
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def __iter__(self) -> Iterator[T]:
        return self

    def __enter__(self) -> "Blocking[T]":
        return self

    def __exit__(self, et: Optional[Type[BaseException]], e: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __next__(self) -> T:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        try:
            return self._loop.run_until_complete(self.stream.__anext__())
        except StopAsyncIteration:
            self.close()
            raise StopIteration from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the stream's connection and its event loop."""
        loop, self._loop = self._loop, None
        if loop is not None:
            try:
                loop.run_until_complete(self.stream.aclose())
            finally:
                loop.close()
        else:
            self.stream._done = True

    def __getattr__(self, name: str) -> Any:
        # ``start`` and ``offset`` of a log stream.
        return getattr(self.stream, name)
