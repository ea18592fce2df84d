"""A gateway-shaped use of the asyncio client: a worker per tool call, a deadline for each, and a task that
reacts to the sidecar's events while the calls run.

    python3 gateway.py SOCKET PROFILE

It runs three tool calls at once (one succeeds, one fails with exit 3, one overruns its deadline and is
stopped), follows the event stream until every worker's "exited" event has arrived, then cancels the
watcher and prints one JSON line: each call's outcome and the events seen per worker.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Dict, List, Set

from hlaunch_client import AsyncClient, EventStream, HlaunchError, Record, WaitTimeout


async def tool_call(c: AsyncClient, profile: str, script: str, deadline: float) -> Record:
    """One tool call: its own worker, waited for with a deadline; an overrun worker is stopped."""
    receipt = await c.spawn({"profile": profile, "argv": ["/bin/sh", "-c", script], "timeout": deadline * 4})
    try:
        return await c.wait(receipt["id"], timeout=deadline)
    except WaitTimeout:
        return await c.stop(receipt["id"], grace=0.5)


async def watch(events: EventStream, seen: Dict[str, List[str]], ours: Set[str], done: asyncio.Event) -> None:
    """React to events: record each worker's, and say when every one of ours has exited."""
    async with events:
        async for ev in events:
            if "id" in ev:
                seen.setdefault(ev["id"], []).append(ev["type"])
            if ours and all("exited" in seen.get(i, []) for i in ours):
                done.set()


async def main(socket: str, profile: str) -> int:
    c = AsyncClient(socket, timeout=10)
    health = await c.health()
    seen: Dict[str, List[str]] = {}
    ours: Set[str] = set()
    done = asyncio.Event()
    watcher = asyncio.create_task(watch(c.events(since=health.get("last_event", 0)), seen, ours, done))
    try:
        results = await asyncio.gather(
            tool_call(c, profile, "echo ok", deadline=20),
            tool_call(c, profile, "exit 3", deadline=20),
            tool_call(c, profile, "exec sleep 30", deadline=0.5),
        )
    except HlaunchError as e:
        print("tool call failed: %s" % e, file=sys.stderr)
        return 1
    ours.update(r["id"] for r in results)
    if all("exited" in seen.get(i, []) for i in ours):
        done.set()
    await asyncio.wait_for(done.wait(), 30)
    watcher.cancel()  # closes the stream's connection
    try:
        await watcher
    except asyncio.CancelledError:
        pass
    out = {
        "results": [{"id": r["id"], "state": r.get("state"), "exit_code": r.get("exit_code"),
                     "signal": r.get("signal")} for r in results],
        "events": {i: seen.get(i, []) for i in sorted(ours)},
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
