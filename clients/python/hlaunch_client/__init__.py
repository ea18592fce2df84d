"""Client for the hlaunch sidecar: spawn, track and stop workers over its Unix socket.

Standard library only. Two clients with the same methods:

- ``Client``: blocking, one HTTP request per call on a fresh connection (safe to share between threads,
  survives sidecar restarts without reconnect logic);
- ``AsyncClient``: the same as coroutines for an asyncio program, with ``async for`` over events and
  cancellation that closes the call's connection.

Workers, receipts and events are plain dicts with the same fields as ``hlaunch exec --detach`` and
``hlaunch ps --json`` print (``id``, ``token``, ``pid``, ``state``, ``exit_code``, ...). Durations
(``timeout``, ``grace``, also inside a spec) are seconds, a ``timedelta`` or a string such as ``"10m"``.

Example::

    from hlaunch_client import AsyncClient

    c = AsyncClient("/run/hlaunch/sidecar.sock")
    receipt = await c.spawn({"profile": "alice", "argv": ["hermes", "chat", "-q", "hi"], "timeout": 600})
    final = await c.wait(receipt["id"], timeout=630)
    print(final["exit_code"])

Both clients share one transport (the blocking one runs the asyncio one's calls on a private event loop)
and one error model: ``SidecarUnavailable`` when the call never reached the sidecar (safe to retry),
``AnswerLost`` when it was sent and no whole answer came (the sidecar died or stopped; it may have acted),
``StreamLost`` when an event or log stream was cut or went silent. ``spawn`` sends an ``Idempotency-Key``
and retries a lost connection by itself when that is safe.

Errors are typed: every error answer of the sidecar raises a subclass of ``HlaunchError`` chosen by its
stable code (``InvalidSpec`` for ``invalid``, ``KeyHeld`` for ``key_held``, ...), with ``.code``,
``.status``, the message, and ``.field`` and ``.reason`` when the sidecar names them; ``TooMany`` (429) and ``Busy`` (503), both ``Overloaded``, say the sidecar is
at one of its limits and carry ``.retry_after`` in seconds. Arguments the client can check itself raise ``InvalidSpec`` (also a
``ValueError``) before anything is sent.
"""

from ._args import STATES, Duration, Signal
from ._async import AsyncClient
from ._errors import (
    AnswerLost,
    Busy,
    CannotRun,
    CommandNotFound,
    Degraded,
    Forbidden,
    HlaunchError,
    InvalidSpec,
    KeyHeld,
    LeaderExited,
    NoSpace,
    NotEmpty,
    NotFound,
    NotRunning,
    Overloaded,
    ProtocolError,
    Refused,
    SidecarUnavailable,
    StreamLost,
    TooLarge,
    TooMany,
    TooSlow,
    Unsupported,
    Unverified,
    WaitTimeout,
    error_for,
)
from ._streams import Blocking, EventStream, LogStream
from ._sync import Client
from ._transport import default_socket
from ._types import Event, Receipt, Record, Spec
from ._version import __version__

__all__ = [
    "__version__",
    "AsyncClient",
    "Client",
    "Duration",
    "Blocking",
    "Event",
    "EventStream",
    "LogStream",
    "Receipt",
    "Record",
    "Spec",
    "Signal",
    "STATES",
    "HlaunchError",
    "SidecarUnavailable",
    "AnswerLost",
    "StreamLost",
    "ProtocolError",
    "InvalidSpec",
    "NotFound",
    "Refused",
    "Unverified",
    "NotRunning",
    "LeaderExited",
    "KeyHeld",
    "Degraded",
    "NoSpace",
    "NotEmpty",
    "CannotRun",
    "CommandNotFound",
    "Forbidden",
    "TooLarge",
    "TooSlow",
    "Overloaded",
    "TooMany",
    "Busy",
    "WaitTimeout",
    "Unsupported",
    "default_socket",
    "error_for",
]
