#!/usr/bin/env python3
"""Build the Python client's wheel with the standard library only: scripts/py_wheel.py OUTDIR.

The client is one pure-Python directory without dependencies, so its wheel is a zip of that directory
and its metadata (PEP 427): no setuptools, wheel or index is needed, and any Python 3.9+ builds it (pip
wheel --no-build-isolation needs setuptools' bdist_wheel, which pyenv's Pythons lack). Prints the path.
"""

import base64
import hashlib
import os
import re
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "clients", "python")
PKG = "hlaunch_client"


def version():
    with open(os.path.join(SRC, PKG, "_version.py")) as f:
        m = re.search(r'__version__\s*=\s*"([^"]+)"', f.read())
    if not m:
        sys.exit("py_wheel: no __version__ in %s/_version.py" % PKG)
    return m.group(1)


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: py_wheel.py OUTDIR")
    out_dir = sys.argv[1]
    ver = version()
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    info = "hlaunch_client-%s.dist-info" % ver
    files = []
    for name in sorted(os.listdir(os.path.join(SRC, PKG))):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(SRC, PKG, name), "rb") as f:
                files.append(("%s/%s" % (PKG, name), f.read()))
    metadata = "\n".join([
        "Metadata-Version: 2.1",
        "Name: hlaunch-client",
        "Version: " + ver,
        "Summary: Client for the hlaunch sidecar: spawn, wait for and stream events of sandboxed hermes workers",
        "License: Apache-2.0",
        "Requires-Python: >=3.9",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Typing :: Typed",
        "Classifier: Framework :: AsyncIO",
        "Description-Content-Type: text/markdown",
        "", readme])
    wheel = "Wheel-Version: 1.0\nGenerator: hlaunch scripts/py_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files += [(info + "/METADATA", metadata.encode("utf-8")), (info + "/WHEEL", wheel.encode()),
              (info + "/top_level.txt", (PKG + "\n").encode())]
    record = "".join("%s,%s,%d\n" % (n, digest(d), len(d)) for n, d in files) + info + "/RECORD,,\n"
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "hlaunch_client-%s-py3-none-any.whl" % ver)
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files + [(info + "/RECORD", record.encode())]:
            zi = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))  # reproducible
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    os.replace(path + ".tmp", path)
    print(path)


if __name__ == "__main__":
    main()
