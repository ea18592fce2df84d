"""The asyncio client, and the calls the blocking client runs too: one transport, one error model.

Each call opens its own connection to the sidecar's Unix socket (asyncio streams, HTTP/1.1 with
``Connection: close``) and closes it however the call ends: with an answer, an error, a timeout, or the
task being cancelled. Nothing blocks the event loop.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Type, cast

from . import _args
from ._args import Duration, Signal
from ._errors import AnswerLost, SidecarUnavailable, WaitTimeout
from ._streams import HEARTBEAT, EventStream, LogStream
from ._transport import Base, decode, obj, open_exchange, records
from ._types import Receipt, Record, Spec

#: How often ``spawn`` tries in all when its connection fails (``retry=True``), and the pauses between.
SPAWN_ATTEMPTS = 3
_SPAWN_PAUSES = (0.1, 0.5)


class AsyncClient(Base):
    """An asyncio client of one sidecar socket: the methods of ``Client``, as coroutines.

    Use it with ``async with`` or on its own: it holds no connection between calls.

    Args:
        socket_path: the sidecar's Unix socket; None means ``default_socket()``.
        timeout: seconds to wait for an answer to ordinary requests (``wait`` and the streams manage
            their own timeouts).
    """

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], e: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        return None

    async def _request(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None,
                       timeout: Optional[float] = -1.0, fds: Optional[Sequence[int]] = None,
                       headers: Optional[Mapping[str, str]] = None) -> Any:
        """One exchange. No connection within the timeout: SidecarUnavailable; no answer: AnswerLost."""
        t = self.timeout if timeout is not None and timeout < 0 else timeout
        start = time.monotonic()
        try:
            conn = await asyncio.wait_for(open_exchange(self.socket_path, method, path, body, fds, headers), t)
        except asyncio.TimeoutError as e:
            raise SidecarUnavailable("no connection to %s within %ss" % (self.socket_path, t)) from e
        try:
            left = None if t is None else max(t - (time.monotonic() - start), 0.001)
            try:
                status = await asyncio.wait_for(conn.head(), left)
                raw = await asyncio.wait_for(conn.body(), None if t is None else max(
                    t - (time.monotonic() - start), 0.001))
            except asyncio.TimeoutError as e:
                raise AnswerLost("no answer from %s within %ss (the request was sent)" % (self.socket_path, t)) from e
        finally:
            conn.close()
            await asyncio.sleep(0)  # the transport releases the socket on the loop's next turn
        return decode(status, raw, conn.headers.get("retry-after"))

    # -- API ---------------------------------------------------------------------------------------

    async def spawn(self, spec: Spec, stdin: Any = None, stdout: Any = None, stderr: Any = None,
                    idempotency_key: Optional[str] = None, retry: bool = True) -> Receipt:
        """Start a worker and return its receipt; see ``Client.spawn``.

        A cancelled spawn may still have started its worker (the sidecar runs a launch it has received
        to its end and announces it with a ``started`` event).
        """
        body = _args.prepare_spec(cast(Mapping[str, Any], spec))
        key = _args.idempotency_key(idempotency_key) if idempotency_key is not None else uuid.uuid4().hex
        headers = {"Idempotency-Key": key}
        fds: Optional[List[int]] = None
        devnull = -1
        if stdin is not None or stdout is not None or stderr is not None:
            body["stdio"] = "inherit"
            devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            if devnull >= 0:
                fds = _args.fds_for(stdin, stdout, stderr, devnull)
            lost: Optional[AnswerLost] = None
            for attempt in range(1, SPAWN_ATTEMPTS + 1):
                try:
                    return cast(Receipt, obj(await self._request("POST", "/v1/workers", body, fds=fds,
                                                                 headers=headers)))
                except (SidecarUnavailable, AnswerLost) as e:
                    # Never reached the sidecar: safe. Reached it, answer lost: the key makes a repeat
                    # return the first receipt. No answer within the timeout: the sidecar is alive but
                    # stuck, and a repeat would only queue behind the first.
                    if isinstance(e, AnswerLost):
                        lost = lost or e
                    timed_out = isinstance(e.__cause__, asyncio.TimeoutError)
                    if not retry or attempt == SPAWN_ATTEMPTS or (isinstance(e, AnswerLost) and timed_out):
                        # Once a request may have reached the sidecar, that is what the caller must know.
                        if lost is not None and lost is not e:
                            raise lost from e
                        raise
                await asyncio.sleep(_SPAWN_PAUSES[min(attempt, len(_SPAWN_PAUSES)) - 1])
            raise AssertionError("unreachable")
        finally:
            if devnull >= 0:
                os.close(devnull)

    async def list(self, state: Optional[str] = None) -> List[Record]:
        """Every worker record, each verified now; ``state`` filters (one of ``STATES``)."""
        return cast(List[Record], records(await self._request("GET", _args.list_path(state))))

    async def get(self, worker_id: str) -> Record:
        """One worker's record by id or token. Raises NotFound."""
        return cast(Record, obj(await self._request("GET", _args.worker_path(worker_id))))

    async def signal(self, worker_id: str, sig: Signal = "TERM", all: bool = False) -> Record:
        """Signal the worker's leader (``all``: its whole cgroup) when its identity verifies."""
        body: Dict[str, Any] = {"signal": _args.signal_name(sig), "all": bool(all)}
        path = _args.worker_path(worker_id, "/signal")
        return cast(Record, obj(await self._request("POST", path, body)))

    async def stop(self, worker_id: str, grace: Optional[Duration] = None) -> Record:
        """SIGTERM, ``grace``, then the whole cgroup killed; the final record. Raises NotEmpty."""
        body = _args.stop_body(grace)
        path = _args.worker_path(worker_id, "/stop")
        # The answer comes after the grace: allow for it on top of the normal timeout.
        extra = 5.0 if grace is None else _args.seconds(grace, "grace")
        t = None if self.timeout is None else self.timeout + extra
        return cast(Record, obj(await self._request("POST", path, body, timeout=t)))

    async def wait(self, worker_id: str, timeout: Optional[Duration] = None) -> Record:
        """Wait until the worker has ended and return its final record.

        ``timeout`` (seconds, a timedelta or a string) raises WaitTimeout while the worker still runs, and
        also when no answer came within it plus the client's timeout. Cancelling the awaiting task closes
        the connection; the worker is not affected.
        """
        path = _args.wait_path(worker_id, timeout)
        if timeout is None:
            return cast(Record, obj(await self._request("GET", path, timeout=None)))
        secs = _args.seconds(timeout, "timeout")
        try:
            # The sidecar answers 408 at the deadline; the local bound only covers a sidecar that does not.
            return cast(Record, obj(await self._request("GET", path, timeout=secs + (self.timeout or 30.0))))
        except AnswerLost as e:
            if isinstance(e.__cause__, asyncio.TimeoutError):
                raise WaitTimeout("no answer within %ss: the worker may still run" % secs) from e
            raise

    def events(self, since: Optional[int] = None, heartbeat: Optional[Duration] = None,
               idle_timeout: Optional[Duration] = None) -> EventStream:
        """The sidecar's events: ``async with client.events(since=0) as evs: async for ev in evs: ...``.

        ``heartbeat`` asks the sidecar for another heartbeat period than its default (15 s); the stream
        raises StreamLost when silent for ``idle_timeout`` (default: three heartbeat periods).
        """
        path, idle = _args.events_path(since, heartbeat, idle_timeout, HEARTBEAT)
        return EventStream(self.socket_path, path, idle, self.timeout)

    def logs(self, worker_id: str, offset: int = 0, follow: bool = False,
             idle_timeout: Optional[Duration] = None) -> LogStream:
        """A worker's log from byte ``offset`` of its whole history: ``async for data in client.logs(id)``.

        With ``follow`` the stream stays open and carries new output until the worker has ended and its
        output is drained. ``idle_timeout`` (default: none) raises StreamLost after that long without bytes.
        """
        path = _args.logs_path(worker_id, offset, follow)
        idle = None if idle_timeout is None else _args.seconds(idle_timeout, "idle_timeout")
        return LogStream(self.socket_path, path, offset, idle, self.timeout)

    async def health(self) -> Dict[str, Any]:
        """The sidecar's health: ``status``, ``version``, ``pid``, ``workers``, ``running``, ..."""
        return cast(Dict[str, Any], obj(await self._request("GET", "/v1/health")))

    async def doctor(self) -> Dict[str, Any]:
        """The host report of ``hlaunch doctor --json``, as seen by the sidecar."""
        return cast(Dict[str, Any], obj(await self._request("GET", "/v1/doctor")))
