"""The sidecar's limits as the client sees them: 429 and 503 become TooMany and Busy with .retry_after.

Against real `hlaunch sidecar` processes with small limits (needs $HLAUNCH_BIN, as test_sidecar_real.py);
the answers' parsing alone is tested without one.
"""

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import hlaunch_client as hc
from hlaunch_client._errors import error_for, retry_after_seconds

HLAUNCH_BIN = os.environ.get("HLAUNCH_BIN", "")

_NEEDS_BIN = unittest.skipUnless(HLAUNCH_BIN and os.access(HLAUNCH_BIN, os.X_OK),
                                 "set HLAUNCH_BIN to an hlaunch binary (make test does) to run against a real sidecar")


class RetryAfterTest(unittest.TestCase):
    def test_error_for_limits(self):
        e = error_for(429, {"error": {"code": "too_many", "message": "m"}}, "7")
        self.assertIsInstance(e, hc.TooMany)
        self.assertIsInstance(e, hc.Overloaded)
        self.assertEqual((e.status, e.code, e.retry_after), (429, "too_many", 7.0))
        e = error_for(503, {"error": {"code": "busy", "message": "m"}}, None)
        self.assertIsInstance(e, hc.Busy)
        self.assertIsNone(e.retry_after)
        # A 429 of a code this client does not know is still a limit to retry after.
        e = error_for(429, {"error": {"code": "newer_limit", "message": "m"}}, "2")
        self.assertIsInstance(e, hc.TooMany)
        self.assertEqual((e.code, e.retry_after), ("newer_limit", 2.0))
        # degraded is a 503 too, but not a limit.
        self.assertNotIsInstance(error_for(503, {"error": {"code": "degraded", "message": "m"}}, "1"), hc.Overloaded)

    def test_retry_after_forms(self):
        self.assertEqual(retry_after_seconds("1"), 1.0)
        self.assertEqual(retry_after_seconds(" 2.5 "), 2.5)
        self.assertEqual(retry_after_seconds("-3"), 0.0)
        self.assertEqual(retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0)  # a date long past
        self.assertIsNone(retry_after_seconds("soon"))
        self.assertIsNone(retry_after_seconds(None))


# A request that is answered and leaves the connection kept alive: held open, it is an idle connection.
_HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: sidecar\r\n\r\n"


class _Sidecar:
    """One real sidecar with extra flags, on a socket of its own."""

    def __init__(self, *flags):
        self.dir = tempfile.mkdtemp(prefix="hlpyl-")
        root = os.path.join(self.dir, "hermes")
        os.makedirs(os.path.join(root, "profiles", "alpha", "home"))
        with open(os.path.join(root, "profiles", "alpha", ".env"), "w") as f:
            f.write("ALPHA=1\n")
        self.sock = os.path.join(self.dir, "s.sock")
        self.log = open(os.path.join(self.dir, "sidecar.log"), "w")
        self.proc = subprocess.Popen(
            [HLAUNCH_BIN, "--root", root, "--state-dir", os.path.join(self.dir, "state"), "sidecar",
             "--socket", self.sock, "--scope", "none", "--poll-interval", "20ms"] + list(flags),
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.dir, "LANG": "C.UTF-8"},
            stdout=self.log, stderr=subprocess.STDOUT)
        self.client = hc.Client(self.sock, timeout=10)
        self.wait_served()

    def wait_served(self):
        """Wait until a health request is served (the sidecar is up, or a slot has come free)."""
        deadline = time.monotonic() + 15
        while True:
            try:
                if self.client.health()["status"] == "ok":
                    return
            except (hc.SidecarUnavailable, hc.Overloaded):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.flush()
                with open(self.log.name) as f:
                    log = f.read()
                self.stop()
                raise RuntimeError("sidecar did not serve: " + log)
            time.sleep(0.02)

    def hold(self, n, request=_HEALTH):
        """n connections, each sending request and answered 200, held open.

        The answer is what shows the sidecar counts the connection. A connection whose peer closed a moment
        ago may still hold its slot: an unanswered connection may be the one refused then, and the next
        request served in its place. A held connection refused (429, 503) is closed and made again until
        the stale slot is given back."""
        out = []
        try:
            while len(out) < n:
                out.append(self._served(request))
        except BaseException:
            for s in out:
                s.close()
            raise
        return out

    def _served(self, request):
        deadline = time.monotonic() + 10
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(self.sock)
            s.sendall(request)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    s.close()
                    raise AssertionError("held connection closed: %r" % head)
                head += chunk
            if head.startswith(b"HTTP/1.1 200"):
                return s
            s.close()
            if not head.startswith((b"HTTP/1.1 429", b"HTTP/1.1 503")) or time.monotonic() > deadline:
                raise AssertionError("held request not served: %r" % head[:200])
            time.sleep(0.02)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@_NEEDS_BIN
class LimitsRealTest(unittest.TestCase):
    """Per uid: 3 connections, 1 event stream; these tests run as one uid, so they reach the uid's share."""

    @classmethod
    def setUpClass(cls):
        cls.sc = _Sidecar("--max-conns-per-uid", "3", "--max-streams-per-uid", "1")

    @classmethod
    def tearDownClass(cls):
        cls.sc.stop()

    def setUp(self):
        self.sc.wait_served()

    def _refused_stream(self, open_stream):
        """The TooMany that open_stream() raises once it is the streams' refusal, not the connections'.

        The connection of a request answered a moment ago (this test's or the one before) may still hold
        its slot, which the sidecar gives back when it reads the connection's end; the client does not wait
        for that. With the held stream's connection beside it, the uid is then at its share of connections,
        and the stream is refused for those before its own limit is asked: it is opened again until that
        slot is given back."""
        deadline = time.monotonic() + 10
        while True:
            with self.assertRaises(hc.TooMany) as cm:
                open_stream()
            if "--max-conns-per-uid" not in cm.exception.message or time.monotonic() > deadline:
                return cm.exception
            time.sleep(0.02)

    def _close(self, socks):
        for s in socks:
            s.close()
        self.sc.wait_served()

    def test_too_many_connections(self):
        held = self.sc.hold(3)  # answered, then idle: the uid's share
        try:
            # The sidecar accepts in order: the held connections are counted before this one.
            with self.assertRaises(hc.TooMany) as cm:
                self.sc.client.health()
            e = cm.exception
            self.assertEqual((e.status, e.code, e.retry_after), (429, "too_many", 1.0))
            self.assertIn("--max-conns-per-uid", e.message)
            with self.assertRaises(hc.TooMany) as cm:
                asyncio.run(hc.AsyncClient(self.sc.sock, timeout=10).health())
            self.assertEqual((cm.exception.status, cm.exception.retry_after), (429, 1.0))
        finally:
            # Served again once they are closed: wait_served fails the test when no request is served
            # within its deadline. One request served is all it shows: the held connections' slots come
            # back as the sidecar reads their ends, a moment after the closes, so a single request at once
            # may still be refused.
            self._close(held)

    def test_too_many_streams(self):
        held = self.sc.hold(1, b"GET /v1/events HTTP/1.1\r\nHost: sidecar\r\n\r\n")
        try:
            e = self._refused_stream(lambda: next(self.sc.client.events()))
            self.assertEqual((e.status, e.retry_after), (429, 1.0))
            self.assertIn("--max-streams-per-uid", e.message)

            async def one_event():
                async for ev in hc.AsyncClient(self.sc.sock).events():
                    return ev

            with self.assertRaises(hc.TooMany) as cm:
                asyncio.run(one_event())
            self.assertEqual(cm.exception.retry_after, 1.0)
        finally:
            self._close(held)


@_NEEDS_BIN
class BusyRealTest(unittest.TestCase):
    """In all: 2 connections; one uid's share (the default, larger) is not reached first."""

    @classmethod
    def setUpClass(cls):
        cls.sc = _Sidecar("--max-conns", "2")

    @classmethod
    def tearDownClass(cls):
        cls.sc.stop()

    def test_busy(self):
        held = self.sc.hold(2)
        try:
            with self.assertRaises(hc.Busy) as cm:
                self.sc.client.health()
            self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.retry_after), (503, "busy", 1.0))
            with self.assertRaises(hc.Busy):
                asyncio.run(hc.AsyncClient(self.sc.sock, timeout=10).list())
        finally:
            for s in held:
                s.close()
        self.sc.wait_served()


if __name__ == "__main__":
    unittest.main()
