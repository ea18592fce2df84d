"""Type-checks clean under mypy --strict: the spec and record fields as the schemas name them."""

from typing import List

from hlaunch_client import Client, Event, Record, Spec


def run(c: Client) -> List[str]:
    spec: Spec = {"profile": "alpha", "argv": ["true"], "timeout": 5, "grace": "2s", "pass": ["TOKEN"],
                  "limits": {"memory": 1 << 30, "pids": 64}}
    receipt = c.spawn(spec)
    rec: Record = c.wait(receipt["id"], timeout=10)
    out = [rec["state"], str(rec.get("exit_code"))]
    with c.events(since=0) as evs:
        for ev in evs:
            e: Event = ev
            out.append(e["type"])
    return out
