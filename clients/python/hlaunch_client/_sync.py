"""The blocking client: each call runs the asyncio client's coroutine on a private event loop.

Both clients therefore share one transport and one error model: a sidecar that crashes, stops or cuts
its answer raises the same exception in both, and their streams end or raise alike.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Awaitable, Dict, List, Optional, Type, TypeVar

from ._args import Duration, Signal
from ._async import AsyncClient
from ._streams import Blocking
from ._transport import Base
from ._types import Event, Receipt, Record, Spec

T = TypeVar("T")


def _run(aw: Awaitable[T]) -> T:
    """Run one call to its end on an event loop of its own (so the client works in any thread)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(aw)
    finally:
        loop.close()


class Client(Base):
    """A blocking client of one sidecar socket. Safe to share between threads; not for use inside a
    running event loop (use ``AsyncClient`` there).

    Every method is one HTTP request on a fresh connection, so a sidecar restart needs no reconnect logic.
    Use it with ``with`` or on its own: it holds no connection between calls.

    Args:
        socket_path: the sidecar's Unix socket; None means ``default_socket()``.
        timeout: seconds to wait for an answer to ordinary requests (``wait`` and the streams manage
            their own timeouts).
    """

    def __init__(self, socket_path: Optional[str] = None, timeout: Optional[float] = 30.0) -> None:
        super().__init__(socket_path, timeout)
        self._async = AsyncClient(self.socket_path, self.timeout)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, et: Optional[Type[BaseException]], e: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        return None

    def spawn(self, spec: Spec, stdin: Any = None, stdout: Any = None, stderr: Any = None,
              idempotency_key: Optional[str] = None, retry: bool = True) -> Receipt:
        """Start a worker and return its receipt.

        Args:
            spec: the launch spec (the spec schema, ``hlaunch_client.Spec``): ``profile`` and ``argv`` are
                required; ``timeout`` and ``grace`` take seconds (a number), a timedelta or a string
                ("10m"). Unknown fields are refused.
            stdin, stdout, stderr: files (or descriptors) the worker gets as its own 0, 1 and 2, passed
                to the sidecar with the request (SCM_RIGHTS); any one given sets ``"stdio": "inherit"``,
                and the others are /dev/null. The caller keeps (and closes) its own copies.
            idempotency_key: the request's ``Idempotency-Key`` (1 to 128 printable ASCII characters);
                None: a fresh one for this call. A repeat with the same key and spec returns the first
                receipt instead of starting another worker.
            retry: when the connection fails, try again (3 attempts in all) if that is safe: the request
                never reached the sidecar, or it did and the key makes a repeat return the first receipt.
                Not after a local timeout (the sidecar is stuck: AnswerLost).

        Raises:
            InvalidSpec, KeyHeld, Degraded, CannotRun, CommandNotFound, TooLarge, ...; TooMany (this
            uid's spawns hold their share of running workers) or Busy (the sidecar runs as many as it
            may), nothing started; SidecarUnavailable (nothing started), AnswerLost (a worker may have
            started).
        """
        return _run(self._async.spawn(spec, stdin, stdout, stderr, idempotency_key, retry))

    def list(self, state: Optional[str] = None) -> List[Record]:
        """Return every worker record, each verified now; ``state`` (one of ``STATES``) filters."""
        return _run(self._async.list(state))

    def get(self, worker_id: str) -> Record:
        """Return one worker's record; ``worker_id`` is its id or its token. Raises NotFound."""
        return _run(self._async.get(worker_id))

    def signal(self, worker_id: str, sig: Signal = "TERM", all: bool = False) -> Record:
        """Send a signal to the worker's leader (or, with ``all``, to every process of its cgroup).

        The signal is sent only when the worker's identity verifies; otherwise Refused or Unverified
        is raised and nothing was sent. ``sig``: ``"TERM"``, ``"SIGKILL"``, ``15`` or ``signal.SIGTERM``.
        """
        return _run(self._async.signal(worker_id, sig, all))

    def stop(self, worker_id: str, grace: Optional[Duration] = None) -> Record:
        """SIGTERM, wait up to ``grace`` (None: the sidecar's 5 s), then kill the worker's whole cgroup;
        return the final record. Raises NotEmpty when the cgroup could not be verified empty."""
        return _run(self._async.stop(worker_id, grace))

    def wait(self, worker_id: str, timeout: Optional[Duration] = None) -> Record:
        """Block until the worker has ended and return its final record (``exit_code`` or ``signal``).

        ``timeout``: seconds, a timedelta or a duration string; None waits as long as it takes. Raises
        WaitTimeout when it elapsed while the worker still runs.
        """
        return _run(self._async.wait(worker_id, timeout))

    def events(self, since: Optional[int] = None, heartbeat: Optional[Duration] = None,
               idle_timeout: Optional[Duration] = None) -> Blocking[Event]:
        """Iterate over the sidecar's events as they happen (``for ev in client.events(): ...``).

        Each event has ``seq``, ``type`` (``started``, ``exited``, ``oom``, ``adopted``, ``refused``,
        ``lost``), ``time`` and, for worker events, ``id``, ``pid``, ``state``, ``exit_code``/``signal``.

        Args:
            since: replay the events after this ``seq`` that the sidecar still holds first (0: all it holds);
                None: only new events. After a ``lost`` event, re-``list()`` and resubscribe.
            heartbeat: the heartbeat period to ask the sidecar for (default: its own, 15 s).
            idle_timeout: raise StreamLost after this long without a byte (default: 3 heartbeat periods).

        The iteration ends when the sidecar ends the stream (shutdown); it raises StreamLost when the
        stream is cut or silent. Either way call ``list()`` and subscribe again with ``since`` set to the
        last ``seq`` seen. Close it with ``.close()`` or ``with``.
        """
        return Blocking(self._async.events(since, heartbeat, idle_timeout))

    def logs(self, worker_id: str, offset: int = 0, follow: bool = False,
             idle_timeout: Optional[Duration] = None) -> Blocking[bytes]:
        """Iterate over a worker's log from byte ``offset`` (of its whole history) as byte pieces.

        ``.start`` is the first offset the sidecar still holds, ``.offset`` the offset of the next byte.
        With ``follow`` the stream carries new output until the worker has ended and its output is drained.
        """
        return Blocking(self._async.logs(worker_id, offset, follow, idle_timeout))

    def health(self) -> Dict[str, Any]:
        """Return the sidecar's health: ``status`` (``ok`` or ``degraded``), ``version``, ``pid``, ``workers``, ..."""
        return _run(self._async.health())

    def doctor(self) -> Dict[str, Any]:
        """Return the host report of ``hlaunch doctor --json``, as seen by the sidecar. Raises Unsupported if absent."""
        return _run(self._async.doctor())
