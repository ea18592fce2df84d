#!/usr/bin/env python3
"""Read `go test -json` output.

  gotest-report.py stream              copy the test output from stdin to stdout as `go test -v` prints it
  gotest-report.py summary LOG...      print skipped and failed tests, then write counts as JSON on stdout's
                                       last line; exit 1 if a test failed, or, with --no-skip, if one skipped

Standard library only: it runs in CI before anything else is installed.
"""
import json
import re
import sys


def stream():
    for line in sys.stdin:
        try:
            ev = json.loads(line)
        except ValueError:
            sys.stdout.write(line)  # go's own messages (build errors before -json starts)
            continue
        out = ev.get("Output")
        if out and ev.get("Action") in ("output", "build-output"):
            sys.stdout.write(out)
            sys.stdout.flush()


def summary(paths, no_skip, allow):
    passed, failed, skipped = [], [], []
    skip_reason = {}
    pkg_failed, pkg_with_failed_test = set(), set()
    out_by_test = {}
    for path in paths:
        try:
            f = open(path, encoding="utf-8", errors="replace")
        except OSError as e:
            print(f"report: {e}", file=sys.stderr)
            failed.append(path)
            continue
        with f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                act, test = ev.get("Action"), ev.get("Test")
                # Build events name "pkg [pkg.test]"; count the package once.
                pkg = (ev.get("Package") or ev.get("ImportPath") or "").split(" [")[0]
                if act == "output" and test:
                    out_by_test.setdefault((pkg, test), []).append(ev.get("Output", ""))
                if act == "build-fail":
                    pkg_failed.add(pkg)
                if not test:
                    # A package-level "skip" is "no test files": not a skipped test.
                    if act == "fail":
                        pkg_failed.add(pkg)
                    continue
                name = f"{pkg}.{test}"
                if act == "pass":
                    passed.append(name)
                elif act == "fail":
                    failed.append(name)
                    pkg_with_failed_test.add(pkg)
                elif act == "skip":
                    skipped.append(name)
                    skip_reason[name] = reason(out_by_test.get((pkg, test), []))
    # A package that failed with no failing test (build error, panic in TestMain, timeout) is a failure too.
    for pkg in sorted(pkg_failed - pkg_with_failed_test):
        failed.append(f"{pkg} (package failed: build error, panic or timeout)")

    for name in skipped:
        print(f"SKIP {name}: {skip_reason[name]}")
    for name in failed:
        print(f"FAIL {name}")
    bad_skips = [s for s in skipped if not (allow and re.search(allow, s))]
    if no_skip and bad_skips:
        print(f"report: {len(bad_skips)} test(s) skipped; in CI every test must run (docs/testing.md): "
              "fix the capability or the test, do not skip")
    print(json.dumps({"passed": len(passed), "failed": len(failed), "skipped": len(skipped),
                      "forbidden_skips": len(bad_skips) if no_skip else 0}))
    return 1 if failed or (no_skip and bad_skips) else 0


def reason(lines):
    """The skip message: the text go test prints under `--- SKIP:`."""
    text = [l.strip() for l in lines if l.strip() and not l.lstrip().startswith(("=== ", "--- "))]
    return " ".join(text)[-300:] or "(no message)"


def main(argv):
    if len(argv) >= 2 and argv[1] == "stream":
        stream()
        return 0
    if len(argv) >= 2 and argv[1] == "summary":
        args = argv[2:]
        no_skip = "--no-skip" in args
        allow = ""
        paths = []
        for a in args:
            if a == "--no-skip":
                continue
            if a.startswith("--allow-skip="):
                allow = a.split("=", 1)[1]
                continue
            paths.append(a)
        return summary(paths, no_skip, allow)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
