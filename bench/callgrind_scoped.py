#!/usr/bin/env python3
"""Instructions per W1 PUT with the admin token and with a scoped token, under callgrind (issue 36).

A fresh server per count (valgrind --tool=callgrind --instr-atstart=no, one worker thread) with
`--token`: 1,000 objects of class Item; then 2,000 PUTs of `name` round the objects, one connection,
one at a time, presenting the admin token or a scoped token of two scopes (bench/scoped.py's W1),
counted (`callgrind_control -i on/off` around them) and divided by 2,000. --keep leaves each
callgrind.out for callgrind_annotate.

  python3 bench/callgrind_scoped.py --binary .build/release/obs-server [--kinds admin,scoped]
"""
import http.client
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import callgrind  # noqa: E402  (its instrumentation switch, stop and count)
import scoped  # noqa: E402  (the same token and scopes as W1)

PORT = 18498
PUTS = 2000


def call(c, method, path, body, token):
    c.request(method, path, body=json.dumps(body),
              headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data) if data else {}


def count(binary, kind, keep):
    server, out, _, tmp = callgrind.start(binary, PORT, ["--token", scoped.ADMIN], prefix="obs-callgrind-scoped-")
    try:
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
        call(c, "PUT", "/v1/classes/Item", {"properties": {"name": {"type": "any"}}}, scoped.ADMIN)
        for i in range(1000):
            call(c, "POST", "/v1/objects", {"id": f"o{i}", "class": "Item", "values": {"name": None}}, scoped.ADMIN)
        token = scoped.ADMIN if kind == "admin" else call(
            c, "POST", "/v1/tokens", {"scopes": scoped.W1_SCOPES}, scoped.ADMIN)["token"]
        call(c, "PUT", "/v1/objects/o0/values/name", {"value": None}, token)
    except BaseException:
        callgrind.stop(server)
        raise
    return callgrind.counted_puts(server, out, tmp, keep, PUTS, lambda *request: call(c, *request, token))


def main():
    callgrind.per_kind(__doc__.splitlines()[0], "admin,scoped", count)


if __name__ == "__main__":
    main()
