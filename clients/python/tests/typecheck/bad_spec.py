"""Must FAIL mypy --strict: a misspelt spec field."""

from hlaunch_client import Client


def run(c: Client) -> None:
    c.spawn({"profile": "alpha", "argv": ["true"], "timout": 5})
