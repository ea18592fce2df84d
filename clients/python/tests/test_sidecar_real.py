"""hlaunch_client against a real `hlaunch sidecar` process.

Needs the hlaunch binary in $HLAUNCH_BIN (``make test`` sets it). Workers use ``--scope none`` so the
test creates no cgroups and runs as any user; the sidecar's cgroup placement is tested in Go
(integration/sidecar_test.go).
"""

import os
import shutil
import subprocess
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


@unittest.skipUnless(HLAUNCH_BIN and os.access(HLAUNCH_BIN, os.X_OK),
                     "set HLAUNCH_BIN to an hlaunch binary (make test does) to run against a real sidecar")
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

    def test_signal_delivered(self):
        rc = self.spawn("alpha", "trap 'exit 42' USR1; while :; do sleep 0.05; done")
        time.sleep(0.3)  # let the shell install its trap
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


if __name__ == "__main__":
    unittest.main()
