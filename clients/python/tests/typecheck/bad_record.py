"""Must FAIL mypy --strict: a misspelt record field."""

from hlaunch_client import Client


def run(c: Client) -> object:
    r = c.get("w-000000000001")
    return r["exit_cod"]
