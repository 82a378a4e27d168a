#!/usr/bin/env python3
"""Instructions per W1 PUT with queries registered, under callgrind (issue 35, W6's cost by function).

A fresh server per count (valgrind --tool=callgrind --instr-atstart=no, one worker thread): 1,000
objects of class Item {name, shard = i + 1, score = i} as in bench/queries.py's W6; then nothing,
10,000 distinct [["shard", "==", k]] or 10,000 distinct [["score", ">=", k]] limit 10 over 100
observers (no streams); then 2,000 PUTs of `name` (a key no query reads) round the objects, one
connection, one at a time, counted (`callgrind_control -i on/off` around them) and divided by 2,000.
No observation and no stream: the figures are lower than bench/callgrind.py's PUT, which delivers
every write to a stream. --keep leaves each callgrind.out for callgrind_annotate.

  python3 bench/callgrind_queries.py --binary .build/release/obs-server [--kinds none,equality,range]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import callgrind  # noqa: E402  (its instrumentation switch, stop and count)
import queries as q  # noqa: E402  (the same objects and queries as W6)

PORT = 18497
PUTS = 2000


def count(binary, kind, keep):
    server, out, _, tmp = callgrind.start(binary, PORT, prefix="obs-callgrind-queries-")
    q.PORT = PORT
    try:
        c = q.connect()
        q.seed_items(c, 1000)
        c.close()
        if kind == "equality":
            q.register([q.eq_query(k) for k in range(1, 10001)])
        elif kind == "range":
            q.register([q.range_query(k) for k in range(1, 10001)])
        c = q.connect()
        q.call(c, "GET", "/healthz")
    except BaseException:
        callgrind.stop(server)
        raise
    return callgrind.counted_puts(server, out, tmp, keep, PUTS, lambda *request: q.call(c, *request))


def main():
    callgrind.per_kind(__doc__.splitlines()[0], "none,equality,range", count)


if __name__ == "__main__":
    main()
