"""The package's version: the hlaunch release it belongs to (``hlaunch --version``)."""

# Kept equal to internal/version.Version by a Go test (TestPythonVersionMatches) and checked against the
# real binary's ``hlaunch version --json`` by tests/test_sidecar_real.py.
__version__ = "0.5.0"
