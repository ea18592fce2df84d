"""Both clients against a real sidecar that is SIGKILLed or SIGSTOPped at each point of each call.

The points: before the call connects (dead: SidecarUnavailable; stopped: the connection waits in the
socket's queue, so the request is sent and unanswered: AnswerLost), after the request is sent and before
the sidecar read it (killed: the kernel resets the connection: SidecarUnavailable), after the sidecar read
it (killed: AnswerLost), and in the middle of a stream (killed or stopped: StreamLost; shut down: the
stream ends). A call never
raises ProtocolError for any of these. Workers use ``--scope none`` (no cgroups); every worker a test
started is killed by its pid at the end.
"""

import array
import asyncio
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import termios
import threading
import time
import unittest

import hlaunch_client as hc
import hlaunch_client._async as hc_async
import hlaunch_client._streams as hc_streams

HLAUNCH_BIN = os.environ.get("HLAUNCH_BIN", "")
_NEEDS_BIN = unittest.skipUnless(HLAUNCH_BIN and os.access(HLAUNCH_BIN, os.X_OK),
                                 "set HLAUNCH_BIN to an hlaunch binary (make test does) to run against a real sidecar")

# A worker that outlives a stop's SIGTERM (ignored signals stay ignored across exec).
HOLDER = ["/bin/sh", "-c", "trap '' TERM; exec sleep 60"]


class Sidecar:
    """One sidecar process in a temporary hermes root with a profile "alpha"."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hlcrash-")
        root = os.path.join(self.dir, "hermes")
        home = os.path.join(root, "profiles", "alpha")
        for d in ("home", "logs", "workspace", "cache/scratch"):
            os.makedirs(os.path.join(home, d))
        for env in (os.path.join(root, ".env"), os.path.join(home, ".env")):
            with open(env, "w") as f:
                f.write("A=1\n")
            os.chmod(env, 0o600)
        self.sock = os.path.join(self.dir, "s.sock")
        self.log = open(os.path.join(self.dir, "sidecar.log"), "w")
        self.proc = subprocess.Popen(
            [HLAUNCH_BIN, "--root", root, "--state-dir", os.path.join(self.dir, "state"), "sidecar",
             "--socket", self.sock, "--scope", "none", "--poll-interval", "20ms"],
            env={"PATH": "/usr/bin:/bin", "HOME": self.dir, "LANG": "C.UTF-8"},
            stdout=self.log, stderr=subprocess.STDOUT)
        self.pids = []
        c = hc.Client(self.sock, timeout=10)
        deadline = time.monotonic() + 30
        while True:
            try:
                if c.health()["status"] in ("ok", "degraded"):
                    break
            except (hc.SidecarUnavailable, hc.AnswerLost):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("sidecar did not start")
            time.sleep(0.02)

    def worker(self, argv=None):
        r = hc.Client(self.sock, timeout=10).spawn({"profile": "alpha", "argv": argv or HOLDER})
        self.pids.append((r["pid"], r.get("shim_pid")))
        return r["id"]

    def kill(self):
        self.proc.kill()  # also a stopped one, which does not run again before it dies
        self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            self.kill()
        for pid, _ in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # Each worker's shim records its exit in the state directory: it must be gone before that is removed.
        deadline = time.monotonic() + 20
        for _, shim in self.pids:
            while shim and os.path.exists("/proc/%d" % shim) and time.monotonic() < deadline:
                time.sleep(0.01)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def calls(wid):
    """Every call of the API, as (name, fn(client)) where fn drives the call the way its kind does."""
    return [
        ("health", lambda c: c.health()),
        ("list", lambda c: c.list()),
        ("get", lambda c: c.get(wid)),
        ("spawn", lambda c: c.spawn({"profile": "alpha", "argv": ["true"]})),
        ("signal", lambda c: c.signal(wid, "CONT")),
        ("stop", lambda c: c.stop(wid, grace=0.1)),
        ("wait", lambda c: c.wait(wid, timeout=0.2)),
        ("events", lambda c: c.first("events")),
        ("logs", lambda c: c.first("logs", wid)),
    ]


class Drive:
    """A client of either kind behind blocking calls; ``first`` opens a stream and reads one item."""

    def __init__(self, kind, path, timeout):
        self.kind = kind
        self.sync = hc.Client(path, timeout=timeout)
        self.aio = hc.AsyncClient(path, timeout=timeout)

    def first(self, name, *args, **kw):
        if self.kind == "sync":
            with getattr(self.sync, name)(*args, **kw) as s:
                return next(s)

        async def run():
            async with getattr(self.aio, name)(*args, **kw) as s:
                return await s.__anext__()
        return asyncio.run(run())

    def __getattr__(self, name):
        if self.kind == "sync":
            return getattr(self.sync, name)
        return lambda *a, **kw: asyncio.run(getattr(self.aio, name)(*a, **kw))


def _unread(conn):
    """Bytes we sent on conn that its peer has not read yet."""
    buf = array.array("i", [0])
    fcntl.ioctl(conn.writer.get_extra_info("socket").fileno(), termios.TIOCOUTQ, buf)
    return buf[0]


class SentHook:
    """Counts requests sent (the transport's open_exchange returned) and keeps their connections."""

    def __init__(self, test):
        self.lock = threading.Lock()
        self.conns = []
        real = hc_async.open_exchange

        async def hooked(*args, **kw):
            conn = await real(*args, **kw)
            with self.lock:
                self.conns.append(conn)
            return conn
        for mod in (hc_async, hc_streams):
            test.addCleanup(setattr, mod, "open_exchange", real)
            setattr(mod, "open_exchange", hooked)

    def wait_sent(self, n, deadline=20.0):
        end = time.monotonic() + deadline
        while True:
            with self.lock:
                if len(self.conns) >= n:
                    return list(self.conns)
            if time.monotonic() > end:
                raise AssertionError("only %d of %d requests were sent" % (len(self.conns), n))
            time.sleep(0.005)


def _stopped(pid, deadline=20.0):
    """Wait until every thread of pid is stopped (state T in its stat): a SIGSTOP is delivered to each thread
    in its own time, and a sidecar thread still running would serve a request sent meanwhile."""
    end = time.monotonic() + deadline
    while True:
        states = []
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                continue
        if states and all(st in ("T", "t") for st in states):
            return
        if time.monotonic() > end:
            raise AssertionError("sidecar %d not stopped after %ss: %s" % (pid, deadline, states))
        time.sleep(0.005)


def run_all(drive, named):
    """Run every call at once (threads: the asyncio kind runs a loop per call); {name: exception or None}."""
    out = {}

    def one(name, fn):
        try:
            fn(drive)
            out[name] = None
        except BaseException as e:  # noqa: B902 - what the call raised is what the test checks
            out[name] = e
    threads = [threading.Thread(target=one, args=nf) for nf in named]
    for t in threads:
        t.start()
    return threads, out


@_NEEDS_BIN
class CrashTest(unittest.TestCase):
    def sidecar(self):
        s = Sidecar()
        self.addCleanup(s.close)
        return s

    def check(self, got, want, kinds):
        for name, e in got.items():
            with self.subTest(call=name, client=kinds):
                self.assertIsInstance(e, want.get(name, want.get("*")), "%s: %r" % (name, e))
                self.assertNotIsInstance(e, hc.ProtocolError)

    def test_dead_sidecar_every_call_unavailable(self):
        s = self.sidecar()
        wid = s.worker()
        s.kill()  # the socket file stays behind: connections are refused
        for kind in ("sync", "async"):
            got = {}
            for name, fn in calls(wid):
                try:
                    fn(Drive(kind, s.sock, 2))
                    got[name] = None
                except BaseException as e:  # noqa: B902
                    got[name] = e
            self.check(got, {"*": hc.SidecarUnavailable}, kind)

    def test_stopped_sidecar_every_call_answer_lost(self):
        s = self.sidecar()
        wid = s.worker()
        s.proc.send_signal(signal.SIGSTOP)
        _stopped(s.proc.pid)
        try:
            for kind in ("sync", "async"):
                got = {}
                for name, fn in calls(wid):
                    try:
                        fn(Drive(kind, s.sock, 0.5))
                        got[name] = None
                    except BaseException as e:  # noqa: B902
                        got[name] = e
                self.check(got, {"*": hc.AnswerLost, "wait": hc.WaitTimeout}, kind)
        finally:
            s.proc.send_signal(signal.SIGCONT)
        # The sidecar answers again once it runs, and the stopped calls left it consistent.
        self.assertEqual(hc.Client(s.sock, timeout=10).health()["status"] in ("ok", "degraded"), True)

    def test_killed_with_requests_unread_every_call_unavailable(self):
        for kind in ("sync", "async"):
            s = self.sidecar()
            wid = s.worker()
            named = calls(wid)
            hook = SentHook(self)
            s.proc.send_signal(signal.SIGSTOP)
            _stopped(s.proc.pid)
            threads, got = run_all(Drive(kind, s.sock, 20), named)
            hook.wait_sent(len(named))
            s.kill()
            for t in threads:
                t.join(30)
            self.check(got, {"*": hc.SidecarUnavailable}, kind)
            self.doCleanups()  # this sidecar and the hook, before the other client's turn

    def test_killed_after_reading_answer_lost(self):
        """wait and stop held by the sidecar, a stream after its first event: killed, each is lost."""
        for kind in ("sync", "async"):
            s = self.sidecar()
            held = s.worker()
            stopping = s.worker()
            named = [
                ("wait", lambda c: c.wait(held)),
                ("stop", lambda c: c.stop(stopping, grace=60)),
                ("events", lambda c: _two_events(c)),
            ]
            hook = SentHook(self)
            threads, got = run_all(Drive(kind, s.sock, 60), named)
            conns = hook.wait_sent(len(named))
            end = time.monotonic() + 20
            while any(_unread(c) for c in conns) or not _first_events.is_set():
                self.assertLess(time.monotonic(), end, "the sidecar did not read every request")
                time.sleep(0.005)
            s.kill()
            for t in threads:
                t.join(30)
            _first_events.clear()
            self.check(got, {"wait": hc.AnswerLost, "stop": hc.AnswerLost, "events": hc.StreamLost}, kind)
            self.doCleanups()

    def test_stopped_mid_stream_is_stream_lost(self):
        s = self.sidecar()
        s.worker(["true"])
        for kind in ("sync", "async"):
            with self.subTest(client=kind):
                c = Drive(kind, s.sock, 5)
                got = {}

                def stop_after_first(drive):
                    return _events_then(drive, lambda: s.proc.send_signal(signal.SIGSTOP))
                try:
                    stop_after_first(c)
                except BaseException as e:  # noqa: B902
                    got["events"] = e
                finally:
                    s.proc.send_signal(signal.SIGCONT)
                self.check(got, {"events": hc.StreamLost}, kind)


    def test_shutdown_ends_the_stream(self):
        """A sidecar that shuts down (SIGTERM) ends the stream properly: the iteration ends, nothing raises."""
        for kind in ("sync", "async"):
            with self.subTest(client=kind):
                s = self.sidecar()
                s.worker(["true"])
                _events_then(Drive(kind, s.sock, 5), lambda: s.proc.send_signal(signal.SIGTERM))
                self.assertEqual(s.proc.wait(30), 0)


_first_events = threading.Event()


def _two_events(drive):
    """Open an event stream replaying from 0, say when the first event arrived, and read on."""
    return _events_then(drive, _first_events.set)


def _events_then(drive, after_first):
    if drive.kind == "sync":
        with drive.sync.events(since=0, idle_timeout=1.5) as evs:
            next(evs)
            after_first()
            for _ in evs:
                pass
        return

    async def run():
        async with drive.aio.events(since=0, idle_timeout=1.5) as evs:
            await evs.__anext__()
            after_first()
            async for _ in evs:
                pass
    asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
