"""The client's own argument checks and conversions (pure logic: no sidecar)."""

import datetime
import signal
import unittest

import hlaunch_client as hc
from hlaunch_client import _args


class DurationTest(unittest.TestCase):
    def test_seconds_timedelta_and_strings_become_go_strings(self):
        for value, want in ((10, "10000ms"), (0.25, "250ms"), (0, "0ms"), (datetime.timedelta(minutes=2), "120000ms"),
                            ("10m", "10m"), (" 1h30m ", "1h30m"), ("0", "0"), (1e-7, "100ns")):
            self.assertEqual(_args.duration_string(value, "timeout"), want, value)

    def test_parse_go_duration(self):
        for s, want in (("1h2m3.5s", 3723.5), ("250ms", 0.25), ("1.5h", 5400.0), ("3us", 3e-6), ("0", 0.0)):
            self.assertAlmostEqual(_args.parse_duration(s, "timeout"), want)

    def test_bad_durations_name_the_argument(self):
        for value in ("10", "ten", "-1s", "1s-", "", -1, float("nan"), float("inf"), True, [1], None.__class__):
            with self.assertRaises(hc.InvalidSpec) as cm:
                _args.duration_string(value, "spec field timeout")
            self.assertIn("spec field timeout", str(cm.exception), value)
            self.assertIsInstance(cm.exception, ValueError)

    def test_spec_durations_are_converted(self):
        spec = {"profile": "b", "argv": ("true",), "timeout": 10, "grace": datetime.timedelta(seconds=1.5)}
        out = _args.prepare_spec(spec)
        self.assertEqual(out, {"profile": "b", "argv": ["true"], "timeout": "10000ms", "grace": "1500ms"})
        self.assertEqual(spec["timeout"], 10, "the caller's spec is not changed")
        self.assertNotIn("timeout", _args.prepare_spec({"profile": "b", "argv": ["x"], "timeout": None}))


class ArgumentTest(unittest.TestCase):
    def test_spec_required_fields(self):
        for spec, field in (([], "spec:"), ({"argv": ["x"]}, "profile"), ({"profile": "", "argv": ["x"]}, "profile"),
                            ({"profile": "b"}, "argv"), ({"profile": "b", "argv": []}, "argv"),
                            ({"profile": "b", "argv": "true"}, "argv"), ({"profile": "b", "argv": [1]}, "argv"),
                            ({"profile": "b", "argv": ["true"], "timeout": "10"}, "timeout")):
            with self.assertRaises(hc.InvalidSpec) as cm:
                _args.prepare_spec(spec)  # type: ignore[arg-type]
            self.assertIn(field, str(cm.exception))

    def test_state_must_exist(self):
        self.assertEqual(_args.list_path(None), "/v1/workers")
        self.assertEqual(_args.list_path("running"), "/v1/workers?state=running")
        for bad in ("bogus", "Running", ""):
            with self.assertRaises(hc.InvalidSpec) as cm:
                _args.list_path(bad)
            self.assertIn("want one of running, exited", str(cm.exception))

    def test_since(self):
        self.assertEqual(_args.events_path(0, None, None, 15.0), ("/v1/events?since=0", 45.0))
        self.assertEqual(_args.events_path(None, "2s", None, 15.0), ("/v1/events?heartbeat=2s", 6.0))
        self.assertEqual(_args.events_path(None, 0.5, 4, 15.0), ("/v1/events?heartbeat=500ms", 4.0))
        for bad in (-1, "3", 1.5, True):
            with self.assertRaises(hc.InvalidSpec):
                _args.events_path(bad, None, None, 15.0)  # type: ignore[arg-type]
        for hb in (0, "0s", -1):
            with self.assertRaises(hc.InvalidSpec):
                _args.events_path(None, hb, None, 15.0)

    def test_signals(self):
        self.assertEqual(_args.signal_name(signal.SIGUSR1), "SIGUSR1")
        self.assertEqual(_args.signal_name(15), "15")
        self.assertEqual(_args.signal_name(" HUP "), "HUP")
        for bad in (0, -9, "", True, 1.0):
            with self.assertRaises(hc.InvalidSpec):
                _args.signal_name(bad)  # type: ignore[arg-type]

    def test_worker_id(self):
        self.assertEqual(_args.worker_path("w-1/x", "/wait"), "/v1/workers/w-1%2Fx/wait")
        for bad in ("", None, 3):
            with self.assertRaises(hc.InvalidSpec):
                _args.worker_path(bad)  # type: ignore[arg-type]

    def test_client_timeout_checked(self):
        with self.assertRaises(hc.InvalidSpec):
            hc.Client("/x", timeout=-1)
        with self.assertRaises(hc.InvalidSpec):
            hc.AsyncClient("/x", timeout="soon")  # type: ignore[arg-type]

    def test_version(self):
        self.assertRegex(hc.__version__, r"^\d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main()
