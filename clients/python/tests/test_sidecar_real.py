"""hlaunch_client against a real `hlaunch sidecar` process.

Needs the hlaunch binary in $HLAUNCH_BIN (``make test`` sets it). Workers use ``--scope none`` so the
test creates no cgroups and runs as any user; the sidecar's cgroup placement is tested in Go
(integration/sidecar_test.go).
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import hlaunch_client as hc

HLAUNCH_BIN = os.environ.get("HLAUNCH_BIN", "")


def _write(path, text, mode=0o600):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def _socket_fds():
    """This process's open sockets (their /proc/self/fd link targets), to tell a leaked connection."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith("socket:"):
            out.append(target)
    return sorted(out)


_NEEDS_BIN = unittest.skipUnless(HLAUNCH_BIN and os.access(HLAUNCH_BIN, os.X_OK),
                                 "set HLAUNCH_BIN to an hlaunch binary (make test does) to run against a real sidecar")


@_NEEDS_BIN
def _remove_cgroup_parent(parent):
    """Remove the test's cgroup parent (and the shims' exit leaf in it) from every cgroup mount, v1
    hierarchies included (a hybrid host has the parent in each): only what the test made; the worker's own
    cgroup was removed by its shim."""
    with open("/proc/self/mounts") as f:
        roots = [line.split()[1] for line in f if line.split()[2] in ("cgroup", "cgroup2")]
    for root in roots:
        top = os.path.join(root, parent)
        if not os.path.isdir(top):
            continue
        for d in sorted((os.path.join(top, n) for n in os.listdir(top) if os.path.isdir(os.path.join(top, n))), reverse=True):
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.02)
        os.rmdir(top)


class RealSidecarTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="hlpy-")
        cls.root = os.path.join(cls.dir, "hermes")
        for prof, env in (("alpha", "ALPHA=1\nSHARED=alpha\n"), ("beta", "BETA=2\nSHARED=beta\n")):
            home = os.path.join(cls.root, "profiles", prof)
            for d in ("cache/scratch", "home", "logs", "workspace"):
                os.makedirs(os.path.join(home, d), exist_ok=True)
            _write(os.path.join(home, ".env"), env)
        _write(os.path.join(cls.root, ".env"), "ROOT_ONLY=1\n")
        cls.sock = os.path.join(cls.dir, "s.sock")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cls.dir, "LANG": "C.UTF-8",
               "SHARED": "from-the-sidecar", "SECRET_API_KEY": "ambient"}
        cls.log = open(os.path.join(cls.dir, "sidecar.log"), "w")
        cls.proc = subprocess.Popen(
            [HLAUNCH_BIN, "--root", cls.root, "--state-dir", os.path.join(cls.dir, "state"),
             "sidecar", "--socket", cls.sock, "--scope", "none", "--poll-interval", "20ms"],
            env=env, stdout=cls.log, stderr=subprocess.STDOUT)
        cls.client = hc.Client(cls.sock, timeout=10)
        deadline = time.monotonic() + 15
        while True:
            try:
                if cls.client.health()["status"] == "ok":
                    break
            except hc.SidecarUnavailable:
                pass
            if cls.proc.poll() is not None or time.monotonic() > deadline:
                cls._stop()
                raise RuntimeError("sidecar did not start: " + open(cls.log.name).read())
            time.sleep(0.02)

    @classmethod
    def _stop(cls):
        try:
            for rec in cls.client.list(state="running"):
                try:
                    cls.client.stop(rec["id"], grace=0.2)
                except hc.HlaunchError:
                    pass
        except hc.HlaunchError:
            pass
        cls.proc.terminate()
        try:
            cls.proc.wait(10)
        except subprocess.TimeoutExpired:
            cls.proc.kill()
            cls.proc.wait()
        cls.log.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        cls._stop()

    def spawn(self, profile, script, **extra):
        spec = {"profile": profile, "argv": ["/bin/sh", "-c", script]}
        spec.update(extra)
        return self.client.spawn(spec)

    def test_spawn_wait_and_clean_env(self):
        out = os.path.join(self.dir, "alpha.out")
        rc = self.spawn("alpha", 'echo "$ALPHA|$BETA|$SHARED|$SECRET_API_KEY|$HERMES_HOME"', log=out)
        for field in ("id", "token", "pid", "mode", "profile", "home"):
            self.assertIn(field, rc)
        self.assertEqual(rc["profile"], "alpha")
        final = self.client.wait(rc["id"], timeout=20)
        self.assertEqual(final["state"], "exited")
        self.assertEqual(final["exit_code"], 0)
        with open(out) as f:
            self.assertEqual(f.read().strip(), "1||alpha||" + os.path.join(self.root, "profiles", "alpha"))

    def test_exit_code_and_events(self):
        rc = self.spawn("beta", "exit 7")
        self.assertEqual(self.client.wait(rc["id"], timeout=20)["exit_code"], 7)
        seen = []
        for ev in self.client.events(since=0):
            if ev.get("id") == rc["id"]:
                seen.append(ev["type"])
                if ev["type"] == "exited":
                    self.assertEqual(ev["exit_code"], 7)
                    break
        self.assertEqual(seen, ["started", "exited"])
        self.assertEqual(self.client.get(rc["id"])["exit_code"], 7)
        self.assertIn(rc["id"], [r["id"] for r in self.client.list(state="exited")])

    def test_wait_timeout_stop_and_signal(self):
        rc = self.spawn("beta", "exec sleep 30")
        with self.assertRaises(hc.WaitTimeout) as cm:
            self.client.wait(rc["id"], timeout=0.2)
        self.assertEqual(cm.exception.status, 408)
        self.assertEqual(self.client.get(rc["id"])["state"], "running")
        final = self.client.stop(rc["id"], grace=1)
        self.assertEqual(final["state"], "exited")
        with self.assertRaises(hc.NotRunning):
            self.client.signal(rc["id"], "TERM")

    @unittest.skipUnless(os.geteuid() == 0, "needs root: the worker needs a cgroup of its own")
    def test_leader_exited_and_idempotent_stop(self):
        # The worker is its whole tree (its cgroup): the leader exits at once, its child keeps it running.
        parent = "hlaunch-test-py-%d" % os.getpid()
        self.addCleanup(_remove_cgroup_parent, parent)
        rc = self.spawn("beta", "sleep 30 & exit 0", scope="cgroup", cgroup_parent=parent)
        # The leader's status is recorded as soon as it ends, while the worker still runs.
        deadline = time.time() + 10
        rec = self.client.get(rc["id"])
        while rec.get("exit_code") is None and time.time() < deadline:
            time.sleep(0.01)
            rec = self.client.get(rc["id"])
        self.assertEqual((rec["state"], rec.get("exit_code")), ("running", 0))
        with self.assertRaises(hc.LeaderExited) as cm:
            self.client.signal(rc["id"], "TERM")
        self.assertEqual((cm.exception.code, cm.exception.status), ("leader_exited", 409))
        self.assertIsInstance(cm.exception, hc.NotRunning)
        self.client.signal(rc["id"], "KILL", all=True)
        final = self.client.wait(rc["id"], timeout=10)
        self.assertEqual(final["state"], "exited")
        self.assertEqual(final["exit_code"], 0)  # the leader's own
        # stop of an ended worker: its final record, every time.
        for _ in range(2):
            self.assertEqual(self.client.stop(rc["id"], grace=0.5)["state"], "exited")

    def test_signal_delivered(self):
        # The shell says when its trap is in place (a USR1 before that ends it by the default action), so
        # the test waits for that, not for a fixed time a loaded host can miss.
        ready = os.path.join(self.dir, "trap-%d" % time.monotonic_ns())
        rc = self.spawn("alpha", "trap 'exit 42' USR1; : > '%s'; while :; do sleep 0.05; done" % ready)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            self.assertLess(time.monotonic(), deadline, "the worker never installed its trap")
            time.sleep(0.01)
        self.assertEqual(self.client.signal(rc["id"], "USR1")["signal"], "SIGUSR1")
        self.assertEqual(self.client.wait(rc["id"], timeout=10)["exit_code"], 42)

    def test_key_held(self):
        rc = self.spawn("alpha", "exec sleep 30", key="job-1")
        with self.assertRaises(hc.KeyHeld) as cm:
            self.spawn("alpha", "true", key="job-1")
        self.assertEqual(cm.exception.status, 409)
        self.client.stop(rc["id"], grace=0.5)

    def test_bad_requests(self):
        with self.assertRaises(hc.InvalidSpec):
            self.client.spawn({"profile": "alpha", "argv": ["true"], "detatch": True})
        with self.assertRaises(hc.InvalidSpec):
            self.client.spawn({"profile": "../alpha", "argv": ["true"]})
        with self.assertRaises(hc.InvalidSpec):
            self.client.spawn({"profile": "nosuch", "argv": ["true"]})
        with self.assertRaises(hc.TooLarge):
            self.client.spawn({"profile": "alpha", "argv": ["true", "x" * (2 << 20)]})
        with self.assertRaises(hc.NotFound):
            self.client.get("w-000000000000")
        with self.assertRaises(hc.InvalidSpec):
            self.client.signal("w-000000000000", "NOPE")


    def test_worker_speaks_over_passed_pipes(self):
        """A worker that speaks over its stdio gets the caller's own pipes, passed with the spawn."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            receipt = self.client.spawn({"profile": "alpha", "argv": ["/bin/sh", "-c", "read x; echo got:$x"]},
                                        stdin=in_r, stdout=out_w)
            os.close(in_r)
            os.close(out_w)
            in_r = out_w = None
            os.write(in_w, b'{"jsonrpc":"2.0","id":1}\n')
            os.close(in_w)
            in_w = None
            with os.fdopen(out_r, "rb") as out:
                out_r = None
                self.assertEqual(out.read(), b'got:{"jsonrpc":"2.0","id":1}\n')
            rec = self.client.wait(receipt["id"], timeout=10)
            self.assertEqual(rec.get("exit_code"), 0)
        finally:
            for fd in (in_r, in_w, out_r, out_w):
                if fd is not None:
                    os.close(fd)

    def test_per_worker_log(self):
        receipt = self.client.spawn({"profile": "alpha", "argv": ["/bin/sh", "-c", "echo to-out; echo to-err >&2"]})
        self.assertTrue(receipt.get("log", "").endswith("/logs/%s.log" % receipt["id"]), receipt)
        self.client.wait(receipt["id"], timeout=10)
        with open(receipt["log"]) as f:
            self.assertEqual(sorted(f.read().split()), ["to-err", "to-out"])

    def test_no_descriptors_with_inherit_is_refused(self):
        with self.assertRaises(hc.InvalidSpec):
            self.client.spawn({"profile": "alpha", "argv": ["true"], "stdio": "inherit"})

    def test_version_matches_the_binaries(self):
        out = subprocess.run([HLAUNCH_BIN, "version", "--json"], check=True, capture_output=True).stdout
        self.assertEqual(json.loads(out)["version"], hc.__version__)
        self.assertEqual(self.client.health()["version"], hc.__version__)

    def test_installed_package_is_tested(self):
        """make test runs this suite against the package pip installed, not the source tree."""
        if os.environ.get("HLAUNCH_CLIENT_INSTALLED") != "1":
            self.skipTest("not run from an installed package (scripts/test.sh sets HLAUNCH_CLIENT_INSTALLED)")
        pkg = os.path.dirname(hc.__file__)
        self.assertIn("site-packages", pkg)
        self.assertTrue(os.path.isfile(os.path.join(pkg, "py.typed")), pkg)

    def test_durations_as_seconds(self):
        rc = self.spawn("beta", "exec sleep 30", timeout=0.3, grace=0.2)
        final = self.client.wait(rc["id"], timeout=20)
        self.assertTrue(final.get("timed_out"), final)
        with self.assertRaises(hc.InvalidSpec):
            self.client.list(state="bogus")

    def test_worker_that_kills_its_shim_ends_at_its_deadline(self):
        """An unsandboxed worker SIGKILLs its shim once the receipt is out; the record holds the deadline,
        and the sidecar enforces it: the final record says shim_lost, reason shim-lost."""
        go = os.path.join(self.dir, "go-shim-%d" % time.monotonic_ns())
        # 5 s: the worker must kill its shim, after the go, before its deadline, or the shim enforces the
        # deadline itself (a loaded host's start and go can take a good part of a second).
        rc = self.spawn("beta", 'while [ ! -e "%s" ]; do sleep 0.02; done; kill -9 $PPID; exec sleep 60' % go,
                        timeout=5, grace=0.2)
        self.assertGreater(rc.get("deadline_boottime_ns", 0), 0, rc)
        self.assertEqual(rc.get("grace_ns"), 200_000_000, rc)
        _write(go, "")
        final = self.client.wait(rc["id"], timeout=30)
        self.assertEqual(final["state"], "exited", final)
        self.assertTrue(final.get("shim_lost"), final)
        self.assertTrue(final.get("reason", "").startswith("shim-lost"), final)

    def test_async_spawn_wait_events(self):
        async def go():
            c = hc.AsyncClient(self.sock, timeout=10)
            rc = await c.spawn({"profile": "alpha", "argv": ["/bin/sh", "-c", "exit 5"], "timeout": 20})
            final = await c.wait(rc["id"], timeout=20)
            self.assertEqual(final["exit_code"], 5)
            types = []
            async with c.events(since=0) as evs:
                async for ev in evs:
                    if ev.get("id") == rc["id"]:
                        types.append(ev["type"])
                        if ev["type"] == "exited":
                            break
            self.assertEqual(types, ["started", "exited"])
            self.assertIn(rc["id"], [r["id"] for r in await c.list(state="exited")])
            self.assertEqual((await c.get(rc["token"]))["id"], rc["id"])
            with self.assertRaises(hc.NotFound):
                await c.get("w-000000000000")
            with self.assertRaises(hc.InvalidSpec):
                await c.spawn({"profile": "alpha", "argv": ["true"], "detatch": True})
        asyncio.run(go())

    def test_async_wait_timeout_stop_signal(self):
        async def go():
            c = hc.AsyncClient(self.sock, timeout=10)
            rc = await c.spawn({"profile": "beta", "argv": ["/bin/sh", "-c", "exec sleep 30"]})
            with self.assertRaises(hc.WaitTimeout):
                await c.wait(rc["id"], timeout=0.2)
            self.assertEqual((await c.signal(rc["id"], "CONT"))["signal"], "SIGCONT")
            final = await c.stop(rc["id"], grace=1)
            self.assertEqual(final["state"], "exited")
            with self.assertRaises(hc.NotRunning):
                await c.signal(rc["id"], "TERM")
        asyncio.run(go())

    def test_async_passed_pipes(self):
        async def go():
            c = hc.AsyncClient(self.sock, timeout=10)
            r, w = os.pipe()
            try:
                rc = await c.spawn({"profile": "alpha", "argv": ["/bin/sh", "-c", "echo via-pipe"]}, stdout=w)
                os.close(w)
                w = None
                final = await c.wait(rc["id"], timeout=20)
                self.assertEqual(final.get("exit_code"), 0)
                with os.fdopen(r, "rb") as f:
                    r = None
                    self.assertEqual(f.read(), b"via-pipe\n")
            finally:
                for fd in (r, w):
                    if fd is not None:
                        os.close(fd)
        asyncio.run(go())

    def test_async_cancellation_closes_connections(self):
        """A cancelled wait or event stream leaves no connection open, and the event loop was never blocked."""
        async def go():
            c = hc.AsyncClient(self.sock, timeout=10)
            rc = await c.spawn({"profile": "beta", "argv": ["/bin/sh", "-c", "exec sleep 30"]})
            before = _socket_fds()
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            t = asyncio.create_task(ticker())
            waiter = asyncio.create_task(c.wait(rc["id"]))

            # Held here, so that only the stream's own closing (not the garbage collector) can free it.
            evs = c.events()

            async def read_events():
                async for _ in evs:
                    pass

            streamer = asyncio.create_task(read_events())
            # Both requests are in flight once each has its connection (one per request, Connection: close);
            # the ticker keeps running meanwhile and after (nothing blocks the loop).
            end = time.monotonic() + 30
            while len(_socket_fds()) < len(before) + 2:
                self.assertLess(time.monotonic(), end, "the wait and the event stream did not both connect")
                await asyncio.sleep(0.01)
            seen = ticks
            while ticks < seen + 2:
                self.assertLess(time.monotonic(), end, "the event loop stopped ticking with both requests open")
                await asyncio.sleep(0.01)
            waiter.cancel()
            streamer.cancel()
            for task in (waiter, streamer):
                with self.assertRaises(asyncio.CancelledError):
                    await task
            for _ in range(5):
                await asyncio.sleep(0)  # the transports' close callbacks
            self.assertEqual(_socket_fds(), before)
            self.assertIsNotNone(evs)
            t.cancel()
            # The worker is not affected by a cancelled wait.
            self.assertEqual((await c.get(rc["id"]))["state"], "running")
            await c.stop(rc["id"], grace=0.5)
        asyncio.run(go())

    def test_gateway_example(self):
        """The README's gateway: tool calls with deadlines and a watcher reacting to events, run as a script."""
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "gateway.py")
        # The script imports the package under test: the installed one (make test), else the source tree's.
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(hc.__file__))))
        p = subprocess.run([sys.executable, script, self.sock, "alpha"], capture_output=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        out = json.loads(p.stdout)
        ok, failed, overrun = out["results"]
        self.assertEqual((ok["state"], ok["exit_code"]), ("exited", 0))
        self.assertEqual((failed["state"], failed["exit_code"]), ("exited", 3))
        self.assertEqual(overrun["state"], "exited")
        self.assertIn(overrun["signal"], ("SIGTERM", "SIGKILL"))
        for wid, types in out["events"].items():
            self.assertEqual(types[0], "started", wid)
            self.assertIn("exited", types, wid)


if __name__ == "__main__":
    unittest.main()
