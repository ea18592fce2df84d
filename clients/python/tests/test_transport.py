"""The shared transport and error model, against a raw fake server on a Unix socket.

Each fake answers one connection at a time with a scripted behaviour (answer, cut the answer short, read
and never answer, reset without reading), so that every way a sidecar can fail mid-call is exercised in
both clients. The parts of the API the sidecar of this tree does not serve yet (Idempotency-Key replays,
logs, heartbeats, error fields) are checked here against the agreed wire format.
"""

import asyncio
import json
import os
import socket
import tempfile
import threading
import unittest

import hlaunch_client as hc


def _read_request(conn):
    """One HTTP request from conn: (head text, body bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return data.decode("latin-1"), b""
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    text = head.decode("latin-1")
    length = 0
    for line in text.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            break
        body += piece
    return text, body


def _answer(status, payload, headers=()):
    raw = json.dumps(payload).encode()
    head = "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % (status, len(raw))
    head += "".join("%s: %s\r\n" % h for h in headers)
    return head.encode() + b"\r\n" + raw


def _chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


class Fake:
    """A Unix-socket server that hands each accepted connection to the next of ``behaviours``."""

    def __init__(self, behaviours):
        self.dir = tempfile.mkdtemp(prefix="hlt-")
        self.path = os.path.join(self.dir, "s.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.behaviours = list(behaviours)
        self.requests = []
        self.release = threading.Event()  # lets a behaviour that holds its connection go
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.behaviours:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            behaviour = self.behaviours.pop(0)
            threading.Thread(target=self._one, args=(conn, behaviour), daemon=True).start()

    def _one(self, conn, behaviour):
        try:
            behaviour(self, conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.release.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)


def answers(status, payload, headers=()):
    def b(fake, conn):
        fake.requests.append(_read_request(conn))
        conn.sendall(_answer(status, payload, headers))
    return b


def reset_unread(fake, conn):
    """A sidecar that dies with our request unread: the kernel resets the connection."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    # Wait until the request has arrived, and close with it still unread.
    import select
    select.select([conn], [], [], 5)


def read_then_close(fake, conn):
    """A sidecar that read the request and died before answering."""
    fake.requests.append(_read_request(conn))


def read_then_hold(fake, conn):
    """A sidecar that read the request and never answers (a stopped one)."""
    fake.requests.append(_read_request(conn))
    fake.release.wait(30)


def cut_body(fake, conn):
    """An answer that stops in the middle of its body."""
    fake.requests.append(_read_request(conn))
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\": \"w-")


def cut_head(fake, conn):
    """An answer that stops in the middle of its status line."""
    fake.requests.append(_read_request(conn))
    conn.sendall(b"HTTP/1.")


def events_then(lines, end):
    """An event stream of ``lines``, then ``end``: "close" (the proper end), "cut" or "hold"."""
    def b(fake, conn):
        fake.requests.append(_read_request(conn))
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
        for line in lines:
            conn.sendall(_chunk(json.dumps(line).encode() + b"\n"))
        if end == "close":
            conn.sendall(b"0\r\n\r\n")
        elif end == "hold":
            fake.release.wait(30)
    return b


def both(fn):
    """Run ``fn(self, call)`` for the blocking and the asyncio client: call(name, *args, **kw) is the
    method's result, however the client is driven."""
    def test(self):
        for kind in ("sync", "async"):
            with self.subTest(client=kind):
                fn(self, lambda fake, timeout=5.0: _Driver(kind, fake.path, timeout))
    return test


class _Driver:
    """One client of either kind behind the same blocking calls."""

    def __init__(self, kind, path, timeout):
        self.kind = kind
        self.sync = hc.Client(path, timeout=timeout)
        self.aio = hc.AsyncClient(path, timeout=timeout)

    def __getattr__(self, name):
        if self.kind == "sync":
            return getattr(self.sync, name)

        def call(*args, **kw):
            return asyncio.run(getattr(self.aio, name)(*args, **kw))
        return call

    def drain(self, stream_name, *args, **kw):
        """Every item of a stream, and the exception that ended it (None for a proper end)."""
        items = []
        if self.kind == "sync":
            try:
                with getattr(self.sync, stream_name)(*args, **kw) as s:
                    for x in s:
                        items.append(x)
            except hc.HlaunchError as e:
                return items, e, s
            return items, None, s

        async def run():
            s = getattr(self.aio, stream_name)(*args, **kw)
            try:
                async with s:
                    async for x in s:
                        items.append(x)
            except hc.HlaunchError as e:
                return items, e, s
            return items, None, s
        return asyncio.run(run())


class TransportTest(unittest.TestCase):
    def fake(self, *behaviours):
        f = Fake(behaviours)
        self.addCleanup(f.close)
        return f

    @both
    def test_unread_reset_is_unavailable(self, client):
        f = self.fake(reset_unread)
        with self.assertRaises(hc.SidecarUnavailable):
            client(f).get("w-000000000001")

    @both
    def test_read_then_closed_is_answer_lost(self, client):
        f = self.fake(read_then_close)
        with self.assertRaises(hc.AnswerLost) as cm:
            client(f).signal("w-000000000001", "TERM")
        self.assertNotIsInstance(cm.exception, hc.ProtocolError)
        self.assertEqual(len(f.requests), 1, "a signal is never repeated by the client")

    @both
    def test_cut_body_is_answer_lost(self, client):
        f = self.fake(cut_body)
        with self.assertRaises(hc.AnswerLost):
            client(f).get("w-000000000001")

    @both
    def test_cut_head_is_answer_lost(self, client):
        f = self.fake(cut_head)
        with self.assertRaises(hc.AnswerLost) as cm:
            client(f).health()
        self.assertNotIsInstance(cm.exception, hc.ProtocolError)

    @both
    def test_no_answer_within_timeout_is_answer_lost(self, client):
        f = self.fake(read_then_hold)
        with self.assertRaises(hc.AnswerLost):
            client(f, timeout=0.3).list()

    @both
    def test_wait_without_answer_is_wait_timeout(self, client):
        f = self.fake(read_then_hold)
        with self.assertRaises(hc.WaitTimeout):
            client(f, timeout=0.2).wait("w-000000000001", timeout=0.1)

    @both
    def test_error_field_and_reason(self, client):
        f = self.fake(answers(400, {"error": {"code": "invalid", "message": "profile nope: no such profile",
                                              "field": "profile", "reason": "unknown_profile"}}))
        with self.assertRaises(hc.InvalidSpec) as cm:
            client(f).spawn({"profile": "nope", "argv": ["true"]})
        self.assertEqual((cm.exception.field, cm.exception.reason), ("profile", "unknown_profile"))
        f = self.fake(answers(404, {"error": {"code": "not_found", "message": "no worker"}}))
        with self.assertRaises(hc.NotFound) as cm2:
            client(f).get("w-000000000001")
        self.assertIsNone(cm2.exception.field)
        self.assertIsNone(cm2.exception.reason)

    @both
    def test_spawn_sends_a_key_and_retries_safely(self, client):
        receipt = {"id": "w-000000000001", "token": "hl1.x", "pid": 5}
        f = self.fake(reset_unread, read_then_close,
                      answers(201, receipt, [("Idempotent-Replay", "true")]))
        got = client(f).spawn({"profile": "a", "argv": ["true"]})
        self.assertEqual(got["id"], "w-000000000001")
        keys = [h for (text, _) in f.requests for h in text.split("\r\n") if h.startswith("Idempotency-Key:")]
        self.assertEqual(len(keys), 2, f.requests)  # the reset one was not read by the fake
        self.assertEqual(keys[0], keys[1], "a retry must send the same key")
        self.assertRegex(keys[0], r"^Idempotency-Key: [\x21-\x7e]{1,128}$")

    @both
    def test_spawn_keys_differ_per_call_unless_given(self, client):
        ok = answers(201, {"id": "w-000000000001"})
        f = self.fake(ok, ok, ok)
        c = client(f)
        c.spawn({"profile": "a", "argv": ["true"]})
        c.spawn({"profile": "a", "argv": ["true"]})
        c.spawn({"profile": "a", "argv": ["true"]}, idempotency_key="job-42")
        keys = [h for (text, _) in f.requests for h in text.split("\r\n") if h.startswith("Idempotency-Key:")]
        self.assertNotEqual(keys[0], keys[1])
        self.assertEqual(keys[2], "Idempotency-Key: job-42")
        with self.assertRaises(hc.InvalidSpec):
            c.spawn({"profile": "a", "argv": ["true"]}, idempotency_key="has space")

    @both
    def test_spawn_retry_false_and_lost_answer_wins(self, client):
        f = self.fake(read_then_close)
        with self.assertRaises(hc.AnswerLost):
            client(f).spawn({"profile": "a", "argv": ["true"]}, retry=False)
        self.assertEqual(len(f.requests), 1)
        # Lost once, then unread twice: the caller learns that a worker may have started.
        f2 = self.fake(read_then_close, reset_unread, reset_unread)
        with self.assertRaises(hc.AnswerLost):
            client(f2).spawn({"profile": "a", "argv": ["true"]})
        self.assertEqual(len(f2.requests), 1)

    @both
    def test_spawn_not_retried_after_a_timeout(self, client):
        f = self.fake(read_then_hold, answers(201, {"id": "w-000000000001"}))
        with self.assertRaises(hc.AnswerLost):
            client(f, timeout=0.3).spawn({"profile": "a", "argv": ["true"]})
        self.assertEqual(len(f.requests), 1)

    @both
    def test_events_skip_heartbeats_and_end_properly(self, client):
        f = self.fake(events_then([{"type": "heartbeat", "seq": 0}, {"type": "started", "seq": 1, "id": "w-1"},
                                   {"type": "heartbeat", "seq": 0}], "close"))
        items, err, _ = client(f).drain("events", since=0, heartbeat=2)
        self.assertIsNone(err)
        self.assertEqual([e["type"] for e in items], ["started"])
        self.assertIn("GET /v1/events?since=0&heartbeat=2000ms ", f.requests[0][0])

    @both
    def test_events_cut_is_stream_lost(self, client):
        f = self.fake(events_then([{"type": "started", "seq": 1}], "cut"))
        items, err, _ = client(f).drain("events")
        self.assertEqual(len(items), 1)
        self.assertIsInstance(err, hc.StreamLost)

    @both
    def test_events_silent_is_stream_lost(self, client):
        f = self.fake(events_then([{"type": "started", "seq": 1}], "hold"))
        items, err, _ = client(f).drain("events", heartbeat=0.1)
        self.assertEqual(len(items), 1)
        self.assertIsInstance(err, hc.StreamLost)

    @both
    def test_logs(self, client):
        def logs(fake, conn):
            fake.requests.append(_read_request(conn))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nLog-Start: 100\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n" + _chunk(b"hello ") + _chunk(b"world\n")
                         + b"0\r\n\r\n")
        f = self.fake(logs, logs)
        items, err, s = client(f).drain("logs", "w-000000000001", offset=40, follow=True)
        self.assertIsNone(err)
        self.assertEqual(b"".join(items), b"hello world\n")
        self.assertEqual((s.start, s.offset), (100, 112))
        self.assertIn("GET /v1/workers/w-000000000001/logs?offset=40&follow=1 ", f.requests[0][0])
        client(f).drain("logs", "w-000000000001")
        self.assertIn("GET /v1/workers/w-000000000001/logs?offset=0 ", f.requests[1][0])

    @both
    def test_logs_cut_is_stream_lost(self, client):
        def logs(fake, conn):
            fake.requests.append(_read_request(conn))
            conn.sendall(b"HTTP/1.1 200 OK\r\nLog-Start: 0\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunk(b"abc"))
        f = self.fake(logs)
        items, err, s = client(f).drain("logs", "w-000000000001", follow=True)
        self.assertEqual(items, [b"abc"])
        self.assertIsInstance(err, hc.StreamLost)
        self.assertEqual(s.offset, 3)

    def test_context_managers(self):
        f = self.fake(answers(200, {"status": "ok"}), answers(200, {"status": "ok"}))
        with hc.Client(f.path) as c:
            self.assertEqual(c.health()["status"], "ok")

        async def run():
            async with hc.AsyncClient(f.path) as c:
                return await c.health()
        self.assertEqual(asyncio.run(run())["status"], "ok")


if __name__ == "__main__":
    unittest.main()
