"""The gateway-shaped acceptance program: what a hermes gateway does with the sidecar, on AsyncClient only.

    python3 acceptance.py SOCKET WORKDIR HERMES_ROOT CONTROL_OUT_FD CONTROL_IN_FD
    python3 acceptance.py cron-child SOCKET WORKDIR KEY     (the second gateway of check 2)

WORKDIR is a directory every worker can write (markers, PID files). The workers' output is read through
logs(): the log the sidecar keeps of each. The harness that started the
sidecar restarts it on request: this program writes one command line to CONTROL_OUT_FD ("restart": kill
it and start it again; "kill": kill it; "start": start it again; "stop": SIGSTOP it) and reads "ok" from
CONTROL_IN_FD once it is done; "stop-at-key KEY" SIGSTOPs it once it has read a spawn with that
Idempotency-Key and written the key down, before the launch answers. It prints one line per check and exits 1 on the first failure. It has no
retry loop of its own: the client's own retries (spawn's, with its Idempotency-Key) are the only ones.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any, Coroutine, Dict, List, Optional, Tuple, cast

from hlaunch_client import (AnswerLost, AsyncClient, HlaunchError, InvalidSpec, KeyHeld, Record,
                            SidecarUnavailable, Spec)


class CheckFailed(Exception):
    """One check did not hold."""


def expect(cond: bool, what: str) -> None:
    """Fail the running check with what unless cond holds."""
    if not cond:
        raise CheckFailed(what)


class Harness:
    """The harness's control pipes: one command line out, "ok" back."""

    def __init__(self, out_fd: int, in_fd: int) -> None:
        self.out = os.fdopen(out_fd, "w", buffering=1)
        self.inp = os.fdopen(in_fd, "r")

    async def ask(self, cmd: str) -> None:
        """Have the harness do cmd to the sidecar and wait until it is done."""
        self.out.write(cmd + "\n")
        answer = await asyncio.get_running_loop().run_in_executor(None, self.inp.readline)
        expect(answer.strip() == "ok", "harness answered %r to %s" % (answer, cmd))


def alive(pid: int) -> bool:
    """Whether a process pid exists (a zombie counts as ended)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


async def read_log(c: AsyncClient, worker_id: str) -> bytes:
    """A worker's whole log."""
    out = b""
    async with c.logs(worker_id, idle_timeout=60) as pieces:
        async for piece in pieces:
            out += piece
    return out


def env_of(log: bytes) -> Dict[str, str]:
    """The NAME=value lines a worker printed."""
    env: Dict[str, str] = {}
    for line in log.decode().splitlines():
        name, sep, value = line.partition("=")
        if sep:
            env[name] = value
    return env


async def serve_two(c: AsyncClient, work: str, root: str) -> None:
    """1: profiles b and c at once, each worker's output followed live; each saw only its own environ."""

    async def one(profile: str) -> Dict[str, str]:
        go = os.path.join(work, "go-" + profile)
        # The worker reports its environ, then runs on until the gateway has read the report live.
        script = ("echo B_MARKER=$B_MARKER; echo C_MARKER=$C_MARKER; echo HERMES_HOME=$HERMES_HOME; i=0; "
                  "while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo end=1" % go)
        rc = await c.spawn({"profile": profile, "argv": ["/bin/sh", "-c", script]})
        log = b""
        async with c.logs(rc["id"], follow=True, idle_timeout=120) as pieces:
            async for piece in pieces:
                log += piece
                if b"HERMES_HOME=" in log and not os.path.exists(go):
                    rec = await c.get(rc["id"])
                    expect(rec["state"] == "running", "profile %s: output only after its end: %s" % (profile, rec))
                    open(go, "w").close()
        final = await c.wait(rc["id"], timeout=60)
        expect(final.get("exit_code") == 0, "profile %s worker: %s" % (profile, final))
        expect(os.path.exists(go), "profile %s: no environ report in its log: %r" % (profile, log))
        return env_of(log)

    b, cenv = await asyncio.gather(one("b"), one("c"))
    for profile, env, mine, other in (("b", b, "B_MARKER", "C_MARKER"), ("c", cenv, "C_MARKER", "B_MARKER")):
        expect(env.get("end") == "1", "profile %s: log incomplete: %s" % (profile, env))
        expect(env.get(mine) == profile and env.get(other) == "", "profile %s environ: %s" % (profile, env))
        home = os.path.join(root, "profiles", profile)
        expect(env.get("HERMES_HOME") == home, "profile %s HERMES_HOME %r, want %r" % (profile, env.get("HERMES_HOME"), home))


async def cron_child(sock: str, work: str, key: str) -> int:
    """The second gateway of check 2: spawn the keyed cron worker, say its id, then wait to be killed."""
    c = AsyncClient(sock, timeout=30)
    # The job runs until the first gateway has seen it running after this one's death.
    go = os.path.join(work, key + ".go")
    script = ("echo cron-start; i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
              "echo cron-done; exit 7" % go)
    rc = await c.spawn({"profile": "b", "key": key, "argv": ["/bin/sh", "-c", script]})
    print(rc["id"], flush=True)
    await asyncio.sleep(3600)
    return 0


async def cron_across_kill(c: AsyncClient, sock: str, work: str) -> None:
    """2: a cron worker outlives its gateway's SIGKILL; another gateway finds it by key, waits, reads it."""
    key = "cron-nightly-exec-%d" % os.getpid()
    child = await asyncio.create_subprocess_exec(sys.executable, os.path.abspath(__file__), "cron-child",
                                                 sock, work, key, stdout=asyncio.subprocess.PIPE)
    assert child.stdout is not None
    line = await asyncio.wait_for(child.stdout.readline(), 60)
    child.kill()
    await child.wait()
    expect(child.returncode == -signal.SIGKILL, "the second gateway ended %s, not by SIGKILL" % child.returncode)
    said = line.decode().strip()
    found = [r for r in await c.list() if r.get("key") == key]
    expect(len(found) == 1 and found[0]["id"] == said, "by key %s: %s (the child said %s)" % (key, found, said))
    rec = await c.get(found[0]["id"])
    expect(rec["state"] == "running", "the cron worker after its gateway's SIGKILL: %s" % rec["state"])
    open(os.path.join(work, key + ".go"), "w").close()
    final = await c.wait(rec["id"], timeout=60)
    expect(final.get("exit_code") == 7, "the cron worker's end: %s" % final)
    log = await read_log(c, rec["id"])
    expect(log == b"cron-start\ncron-done\n", "the cron worker's output: %r" % log)


async def kanban_timeout(c: AsyncClient, work: str) -> None:
    """3: a kanban worker with a timeout and a setsid double-forked grandchild: the whole tree ends."""
    pidfile = os.path.join(work, "grandchild.pid")
    # The leader waits for the grandchild's PID file, so the deadline finds the grandchild started.
    script = ("(setsid /bin/sh -c 'echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 300' &); "
              "while [ ! -e %s ]; do sleep 0.1; done; exec sleep 300" % (pidfile, pidfile, pidfile, pidfile))
    rc = await c.spawn({"profile": "b", "argv": ["/bin/sh", "-c", script], "timeout": 8, "grace": 0.5})
    final = await c.wait(rc["id"], timeout=60)
    expect(final.get("timed_out") is True, "the kanban worker's record: %s" % final)
    with open(pidfile) as f:
        grandchild = int(f.read())
    expect(not alive(grandchild), "the escaped grandchild %d outlived the deadline" % grandchild)
    expect(not alive(rc["pid"]), "the kanban leader %d outlived the deadline" % rc["pid"])


async def stop_after_restart(c: AsyncClient, h: Harness) -> None:
    """4: a restarted sidecar re-adopts a worker (its "adopted" event), and stop by id answers its final record."""
    rc = await c.spawn({"profile": "b", "argv": ["/bin/sleep", "300"]})
    await h.ask("restart")
    rec = await c.get(rc["id"])
    expect(rec["state"] == "running", "after the restart: %s" % rec["state"])

    async def adopted() -> None:
        async with c.events(since=0) as events:
            async for ev in events:
                if ev.get("id") == rc["id"]:
                    expect(ev["type"] == "adopted", "the new sidecar's first event of the worker: %s" % ev)
                    return

    await asyncio.wait_for(adopted(), 60)
    final = await c.stop(rc["id"], grace=1)
    expect(final["id"] == rc["id"] and final["state"] == "exited", "stop's answer: %s" % final)
    expect(final.get("signal") == "SIGTERM", "stop's record: %s" % final)
    expect(not alive(rc["pid"]), "the worker %d outlived stop" % rc["pid"])


async def refused(call: "asyncio.Future[Any]") -> HlaunchError:
    """The error call raised; a check fails if it succeeded."""
    try:
        got = await call
    except HlaunchError as e:
        return e
    raise CheckFailed("succeeded, want an error: %s" % (got,))


async def error_cases(c: AsyncClient, h: Harness) -> None:
    """5: the errors a gateway tells apart, by type and .reason / .field."""
    e = await refused(asyncio.ensure_future(c.spawn({"profile": "nosuch", "argv": ["true"]})))
    expect(isinstance(e, InvalidSpec) and e.reason == "unknown_profile" and e.field == "profile",
           "unknown profile: %r reason=%s field=%s" % (e, e.reason, e.field))
    misspelt = cast(Spec, {"profile": "b", "argv": ["true"], "timout": 5})
    e = await refused(asyncio.ensure_future(c.spawn(misspelt)))
    expect(isinstance(e, InvalidSpec) and e.reason == "unknown_field" and e.field == "timout",
           "misspelt field: %r reason=%s field=%s" % (e, e.reason, e.field))
    bad_size = cast(Spec, {"profile": "b", "argv": ["true"], "limits": {"memory": "12x"}})
    e = await refused(asyncio.ensure_future(c.spawn(bad_size)))
    expect(isinstance(e, InvalidSpec) and e.field == "limits.memory",
           "bad size: %r reason=%s field=%s" % (e, e.reason, e.field))
    key = "kanban-card-%d" % os.getpid()
    holder = await c.spawn({"profile": "b", "key": key, "argv": ["/bin/sleep", "300"]})
    e = await refused(asyncio.ensure_future(c.spawn({"profile": "b", "key": key, "argv": ["true"]})))
    expect(isinstance(e, KeyHeld), "a held key: %r" % e)
    await c.stop(holder["id"], grace=1)
    await h.ask("kill")
    e = await refused(asyncio.ensure_future(c.health()))
    expect(isinstance(e, SidecarUnavailable), "no sidecar: %r" % e)
    await h.ask("start")


async def lost_answer(c: AsyncClient, h: Harness, work: str) -> str:
    """6: a spawn whose answer is lost in a sidecar restart, retried by the client: exactly one worker ran."""
    marker = os.path.join(work, "starts")
    key = "cron-report-exec-%d" % os.getpid()
    spec: Spec = {"profile": "b", "argv": ["/bin/sh", "-c", "echo $$ >> %s; exec sleep 300" % marker]}
    # The harness SIGSTOPs the sidecar once it has read the request and written the key down, which it
    # does just before the launch; then it kills it and starts it again on the same state.
    stopped = asyncio.ensure_future(h.ask("stop-at-key " + key))
    spawn = asyncio.ensure_future(c.spawn(spec, idempotency_key=key))
    await stopped
    expect(not spawn.done(), "the spawn was answered before the sidecar stopped: %s" % spawn)
    await h.ask("restart")
    how = "answered by the client's own retry"
    try:
        rc = cast(Dict[str, Any], await spawn)
    except (AnswerLost, SidecarUnavailable) as e:
        how = "the client's retries ended in %s; one repeat with the key answered" % type(e).__name__
        # The client tried as often as it does while the sidecar was down; the key makes this one
        # repeat (a gateway reconnecting) return the first receipt if the first request was read.
        rc = cast(Dict[str, Any], await c.spawn(spec, idempotency_key=key))
    ours: List[Record] = [r for r in await c.list() if r["pid"] == rc["pid"] or r["id"] == rc["id"]]
    expect(len(ours) == 1, "the retried spawn's records: %s" % ours)
    starts = open(marker).read().split() if os.path.exists(marker) else []
    expect(len(starts) == 1, "the worker started %d times: %s" % (len(starts), starts))
    await c.stop(rc["id"], grace=1)
    return how


async def main(argv: List[str]) -> int:
    if argv[1:2] == ["cron-child"]:
        return await cron_child(argv[2], argv[3], argv[4])
    sock, work, root = argv[1:4]
    h = Harness(int(argv[4]), int(argv[5]))
    c = AsyncClient(sock, timeout=60)
    checks: List[Tuple[str, Coroutine[Any, Any, Optional[str]]]] = [
        ("serve b and c with live logs", serve_two(c, work, root)),
        ("cron worker across a gateway SIGKILL", cron_across_kill(c, sock, work)),
        ("kanban timeout ends an escaped grandchild", kanban_timeout(c, work)),
        ("stop by id after a sidecar restart", stop_after_restart(c, h)),
        ("error cases by type and reason", error_cases(c, h)),
        ("lost spawn answer retried: one worker", lost_answer(c, h, work)),
    ]
    for i, (name, check) in enumerate(checks, 1):
        try:
            note = await check
        except (CheckFailed, HlaunchError, OSError, asyncio.TimeoutError) as e:
            print("FAIL %d %s: %s: %s" % (i, name, type(e).__name__, e), flush=True)
            for _, rest in checks[i:]:
                rest.close()
            return 1
        print("ok %d %s%s" % (i, name, ": " + note if note else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
