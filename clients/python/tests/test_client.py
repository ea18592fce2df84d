"""Unit tests of hlaunch_client against a stub HTTP server on a Unix socket (no sidecar needed)."""

import datetime
import http.server
import json
import os
import signal
import socketserver
import tempfile
import threading
import unittest

import hlaunch_client as hc


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # AF_UNIX has no client address to log
        pass

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append((self.command, self.path, body))
        route = self.server.routes.get((self.command, self.path.split("?")[0]))
        if route is None:
            route = (404, {"error": {"code": "not_found", "message": "no route"}})
        status, payload = route
        if self.path.startswith("/v1/events"):
            # NDJSON, chunked, as Go's server streams it.
            self.send_response(status)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for ev in payload:
                line = json.dumps(ev).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True
            return
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = _serve
    do_POST = _serve


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hlc-")
        self.sock = os.path.join(self.dir, "s.sock")
        self.server = _Server(self.sock, _Handler)
        self.server.routes = {}
        self.server.requests = []
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.client = hc.Client(self.sock, timeout=5)

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.sock)
        os.rmdir(self.dir)

    def route(self, method, path, status, payload):
        self.server.routes[(method, path)] = (status, payload)

    def last(self):
        method, path, body = self.server.requests[-1]
        return method, path, json.loads(body) if body else None

    def test_spawn_sends_spec_and_returns_receipt(self):
        receipt = {"id": "w-0123456789ab", "token": "t", "pid": 42, "state": "running"}
        self.route("POST", "/v1/workers", 201, receipt)
        spec = {"profile": "alice", "argv": ["true"], "limits": {"memory": 1 << 20}}
        self.assertEqual(self.client.spawn(spec), receipt)
        self.assertEqual(self.last(), ("POST", "/v1/workers", spec))

    def test_spawn_rejects_non_dict(self):
        with self.assertRaises(hc.InvalidSpec):
            self.client.spawn(["profile"])
        self.assertEqual(self.server.requests, [])

    def test_error_codes_map_to_exceptions(self):
        cases = [
            ("invalid", 400, hc.InvalidSpec),
            ("not_found", 404, hc.NotFound),
            ("refused", 409, hc.Refused),
            ("unverified", 409, hc.Unverified),
            ("not_running", 409, hc.NotRunning),
            ("key_held", 409, hc.KeyHeld),
            ("degraded", 503, hc.Degraded),
            ("no_space", 503, hc.NoSpace),
            ("not_empty", 500, hc.NotEmpty),
            ("cannot_run", 422, hc.CannotRun),
            ("command_not_found", 422, hc.CommandNotFound),
            ("forbidden", 403, hc.Forbidden),
            ("too_large", 413, hc.TooLarge),
            ("timeout", 408, hc.WaitTimeout),
            ("not_implemented", 501, hc.Unsupported),
            ("brand_new_code", 500, hc.HlaunchError),
        ]
        for code, status, cls in cases:
            with self.subTest(code=code):
                self.route("POST", "/v1/workers", status, {"error": {"code": code, "message": "m " + code}})
                with self.assertRaises(cls) as cm:
                    self.client.spawn({"profile": "a", "argv": ["x"]})
                self.assertIs(type(cm.exception), cls)
                self.assertEqual(cm.exception.code, code)
                self.assertEqual(cm.exception.status, status)
                self.assertEqual(cm.exception.message, "m " + code)
                self.assertIsInstance(cm.exception, hc.HlaunchError)
        self.assertTrue(issubclass(hc.Unverified, hc.Refused))
        self.assertTrue(issubclass(hc.CommandNotFound, hc.CannotRun))

    def test_non_json_error_is_protocol_error(self):
        self.route("GET", "/v1/health", 502, b"<html>bad gateway</html>")
        with self.assertRaises(hc.ProtocolError) as cm:
            self.client.health()
        self.assertEqual(cm.exception.status, 502)

    def test_missing_socket_is_unavailable(self):
        c = hc.Client(os.path.join(self.dir, "nope.sock"))
        with self.assertRaises(hc.SidecarUnavailable):
            c.health()

    def test_worker_endpoints(self):
        rec = {"id": "w-1", "state": "exited", "exit_code": 3}
        self.route("GET", "/v1/workers", 200, [rec])
        self.route("GET", "/v1/workers/w-1", 200, rec)
        self.route("POST", "/v1/workers/w-1/signal", 200, {"id": "w-1", "signal": "SIGKILL", "all": True})
        self.route("POST", "/v1/workers/w-1/stop", 200, rec)
        self.route("GET", "/v1/workers/w-1/wait", 200, rec)

        self.assertEqual(self.client.list(), [rec])
        self.client.list(state="running")
        self.assertEqual(self.server.requests[-1][1], "/v1/workers?state=running")
        self.assertEqual(self.client.get("w-1"), rec)

        self.client.signal("w-1", signal.SIGKILL, all=True)
        self.assertEqual(self.last()[2], {"signal": "SIGKILL", "all": True})
        self.client.signal("w-1", 15)
        self.assertEqual(self.last()[2], {"signal": "15", "all": False})
        self.client.signal("w-1")
        self.assertEqual(self.last()[2], {"signal": "TERM", "all": False})

        self.client.stop("w-1")
        self.assertEqual(self.last()[2], {})
        self.client.stop("w-1", grace=2.5)
        self.assertEqual(self.last()[2], {"grace": "2500ms"})
        self.client.stop("w-1", grace=datetime.timedelta(seconds=1))
        self.assertEqual(self.last()[2], {"grace": "1000ms"})
        self.client.stop("w-1", grace="3s")
        self.assertEqual(self.last()[2], {"grace": "3s"})
        with self.assertRaises(hc.InvalidSpec):
            self.client.stop("w-1", grace=-1)

        self.assertEqual(self.client.wait("w-1"), rec)
        self.assertEqual(self.server.requests[-1][1], "/v1/workers/w-1/wait")
        self.client.wait("w-1", timeout=0.5)
        self.assertEqual(self.server.requests[-1][1], "/v1/workers/w-1/wait?timeout=500ms")

    def test_ids_are_quoted(self):
        self.route("GET", "/v1/workers/a%2F..%2Fb", 200, {})
        self.client.get("a/../b")
        self.assertEqual(self.server.requests[-1][1], "/v1/workers/a%2F..%2Fb")
        with self.assertRaises(hc.InvalidSpec):
            self.client.get("")

    def test_events_iterates_ndjson(self):
        evs = [{"seq": 1, "type": "adopted", "id": "w-1", "initial": True},
               {"seq": 2, "type": "exited", "id": "w-1", "exit_code": 0}]
        self.route("GET", "/v1/events", 200, evs)
        self.assertEqual(list(self.client.events(since=0)), evs)
        self.assertEqual(self.server.requests[-1][1], "/v1/events?since=0")
        self.assertEqual(list(self.client.events()), evs)
        self.assertEqual(self.server.requests[-1][1], "/v1/events")

    def test_events_error(self):
        self.route("GET", "/v1/events", 400, [])
        # The stub answers an error without a JSON body: still an exception, never an empty iterator.
        with self.assertRaises(hc.ProtocolError):
            list(self.client.events(since=5))

    def test_default_socket(self):
        old = os.environ.get("HLAUNCH_SOCKET")
        os.environ["HLAUNCH_SOCKET"] = "/x/y.sock"
        try:
            self.assertEqual(hc.default_socket(), "/x/y.sock")
            self.assertEqual(hc.Client().socket_path, "/x/y.sock")
        finally:
            if old is None:
                del os.environ["HLAUNCH_SOCKET"]
            else:
                os.environ["HLAUNCH_SOCKET"] = old


if __name__ == "__main__":
    unittest.main()
