#!/usr/bin/env python3
"""Print make cover's table (scripts/cover.sh) as Markdown.

  cover_table.py MODULE COVER_OUT UNIT_SELF UNIT_CHILD ALL

MODULE is the module path, COVER_OUT the merged textfmt profile, and the other three are the outputs of
`go tool covdata percent` over the unit tests' own processes, those with their re-executed children, and
everything (the integration suite too). One row per package of the module, sorted by path, the
child-side packages marked; the last row is the module's total from COVER_OUT. Standard library only.
"""
import re
import sys

# The code that runs in hlaunch's re-executed roles (the init stub, the shim and the records and log it
# writes) and in its workers' setup.
CHILD_SIDE = {
    "internal/nsenv/sandbox",
    "internal/selfguard",
    "internal/handshake",
    "internal/shim",
    "internal/records",
    "internal/workerlog",
    "internal/seccomp",
    "internal/landlock",
}

LINE = re.compile(r"^\s*(\S+)\s+coverage:\s+([0-9.]+)% of statements")


def read_percent(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    out[m.group(1)] = float(m.group(2))
    except FileNotFoundError:
        pass
    return out


def total(profile):
    """The share of statements covered in a textfmt profile (go tool cover -func's total)."""
    blocks = {}
    with open(profile) as f:
        next(f)  # mode: atomic
        for line in f:
            pos, stmts, count = line.rsplit(" ", 2)
            prev = blocks.get(pos, (int(stmts), 0))
            blocks[pos] = (int(stmts), prev[1] + int(count))
    all_ = sum(s for s, _ in blocks.values())
    hit = sum(s for s, c in blocks.values() if c > 0)
    return 100.0 * hit / all_ if all_ else 0.0


def main():
    mod, profile, self_, child, all_ = sys.argv[1:6]
    cols = [read_percent(p) for p in (self_, child, all_)]
    pkgs = sorted(set().union(*cols))

    def cell(col, pkg):
        v = col.get(pkg)
        return "-" if v is None else f"{v:.1f}%"

    print("| package | unit tests, in-process | + their re-executed children | + integration suite |")
    print("|---|---|---|---|")
    for pkg in pkgs:
        short = pkg[len(mod) + 1:] if pkg.startswith(mod + "/") else pkg
        name = f"**{short}** (child side)" if short in CHILD_SIDE else short
        print(f"| {name} | " + " | ".join(cell(c, pkg) for c in cols) + " |")
    print(f"| total (all statements) | | | {total(profile):.1f}% |")


if __name__ == "__main__":
    main()
