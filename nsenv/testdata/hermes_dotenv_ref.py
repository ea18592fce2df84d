"""Reference tokenizer for nsenv's differential test (tokenizer_python_test.go).

load_env_file and _strip_inline_comment are transcribed from hermes-agent's agent/secret_scope.py;
the latin-1 fallback and the value unquoting (_parse_env_value: strip one pair of matching quotes,
unescape only \\" and \\\\ inside double quotes) follow docs/hermes-contract.md. Running it under a real
Python gives Python's own str.strip, str.splitlines and re \\s semantics, which the Go code must match.

Usage: python3 hermes_dotenv_ref.py SEED COUNT  -> JSON list of {"in": [bytes], "out": [[key, value, line]]}
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
    if data.startswith(b'\xef\xbb\xbf'): data=data[3:]
    try: text=data.decode('utf-8')
    except UnicodeDecodeError: text=data.decode('latin-1')
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
    return res


def main():
    random.seed(int(sys.argv[1]))
    alphabet = [b'A', b'b', b'=', b'#', b' ', b'\t', b'"', b"'", b'\\', b'\n', b'\r', b'\x0b', b'\x0c', b'\x1c', b'\x1f', b'\x85',
                b'\xa0', b'\xc2\x85', b'\xc2\xa0', b'\xe2\x80\xa8', b'\xe3\x80\x80', b'\xef\xbb\xbf', b'export ', b'\xe9', b'\xc3\xa9', b'x', b'\x00']
    cases=[]
    for _ in range(int(sys.argv[2])):
        data=b''.join(random.choice(alphabet) for _ in range(random.randint(0,120)))
        cases.append({"in": list(data), "out": load(data)})
    json.dump(cases, sys.stdout)

if __name__ == '__main__':
    main()
