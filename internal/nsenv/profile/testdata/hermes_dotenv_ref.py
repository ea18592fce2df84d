"""Reference tokenizer for nsenv's differential test (tokenizer_python_test.go).

load_env_file and _strip_inline_comment are transcribed from hermes-agent's agent/secret_scope.py;
the decoding (utf-8-sig, no fallback: a file that is not UTF-8 is reported with the byte offset of the
first bad byte, counted in the file, where hermes would return an empty map and hlaunch refuses it) and
the value unquoting (_parse_env_value: strip one pair of matching quotes,
unescape only \\" and \\\\ inside double quotes) follow docs/hermes-contract.md. Running it under a real
Python gives Python's own str.strip, str.splitlines and re \\s semantics, which the Go code must match.

Usage: python3 hermes_dotenv_ref.py SEED COUNT
  -> JSON list of {"in": [bytes], "out": [[key, value, line]], "bad": offset or null}
"""
import json
import random
import re
import sys


def _strip_inline_comment(value):
    value = value.strip()
    if not value:
        return value
    quote = value[0]
    if quote in ("'", '"'):
        i = 1
        while i < len(value):
            ch = value[i]
            if quote == '"' and ch == "\\":
                i += 2
                continue
            if ch == quote:
                remainder = value[i + 1:].lstrip()
                if remainder.startswith("#"):
                    return value[: i + 1]
                return value
            i += 1
        return value
    return re.split(r"\s+#", value, maxsplit=1)[0].strip()
def _parse_env_value(v):
    if len(v) >= 2 and v[0] == v[-1] and v[0] in ('"', "'"):
        inner = v[1:-1]
        if v[0] == '"':
            out=[];i=0
            while i < len(inner):
                c=inner[i]
                if c=='\\' and i+1<len(inner) and inner[i+1] in '"\\':
                    i+=1; c=inner[i]
                out.append(c); i+=1
            inner=''.join(out)
        return inner
    return v
def load(data):
    """Returns (entries, None), or (None, offset of the first byte that is not UTF-8)."""
    bom = 3 if data.startswith(b'\xef\xbb\xbf') else 0
    try: text=data[bom:].decode('utf-8')
    except UnicodeDecodeError as e: return None, bom + e.start
    res=[]
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"): continue
        if line.startswith("export "): line = line[len("export "):].lstrip()
        if "=" not in line: continue
        key, _, value = line.partition("=")
        key = key.strip()
        if not key: continue
        res.append([key, _parse_env_value(_strip_inline_comment(value)), n])
    return res, None


def main():
    random.seed(int(sys.argv[1]))
    alphabet = [b'A', b'b', b'=', b'#', b' ', b'\t', b'"', b"'", b'\\', b'\n', b'\r', b'\x0b', b'\x0c', b'\x1c', b'\x1f', b'\x85',
                b'\xa0', b'\xc2\x85', b'\xc2\xa0', b'\xe2\x80\xa8', b'\xe3\x80\x80', b'\xef\xbb\xbf', b'export ', b'\xe9', b'\xc3\xa9', b'x', b'\x00']
    cases=[]
    for _ in range(int(sys.argv[2])):
        data=b''.join(random.choice(alphabet) for _ in range(random.randint(0,120)))
        out, bad = load(data)
        cases.append({"in": list(data), "out": out or [], "bad": bad})
    json.dump(cases, sys.stdout)

if __name__ == '__main__':
    main()
