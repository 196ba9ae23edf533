"""A stdio MCP server that records how it reads each call's arguments, for the one-reading tests.

  recording_server.py RECORD_FILE

One tool, `act`. Each `tools/call` line is read twice, as servers in the wild read JSON: keeping
the first of a key given twice (cJSON, RapidJSON, simdjson) and keeping the last (Python, serde).
For each call it appends one JSON line to RECORD_FILE: whether both readings agree, and the path
each would act on (normalised as a file server would: `..`, `.` and `//` taken away, `~`
expanded). Numbers a double cannot hold and lone surrogates are read as Python reads them (exact
integers, infinity, the surrogate kept): whatever Gatehouse lets through, this server sees.
"""

import json
import os
import sys

record = sys.argv[1]


def first_wins(pairs):
    out = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def path_of(args):
    p = args.get("path") if isinstance(args, dict) else None
    if not isinstance(p, str):
        return None
    return os.path.normpath(os.path.expanduser(p))


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


TOOL = {
    "name": "act",
    "description": "Acts on a path.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "id": {"type": "integer"},
            "level": {"type": "number"},
            "pad": {},
            "opts": {"type": "object"},
            "n": {"type": "number"},
        },
    },
}

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "recording", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        first = json.loads(line, object_pairs_hook=first_wins)["params"].get("arguments")
        last = msg["params"].get("arguments")
        seen = {
            "same": repr(first) == repr(last),
            "first": path_of(first),
            "last": path_of(last),
            "raw": repr(last),
        }
        with open(record, "a", encoding="utf-8") as f:
            f.write(json.dumps(seen, ensure_ascii=True) + "\n")
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": "acted on " + repr(path_of(first))}]}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
