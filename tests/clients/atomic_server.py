"""A stdio MCP server that saves as careful programs do: into a temporary file beside its target
(`FILE.tmp-PID`), then renamed over it — so it needs the folder, not only the file.

  atomic_server.py              (its target: the file the SAVE_FILE variable names)
  atomic_server.py ROOT NAME    (its target: NAME under the folder ROOT, as servers given `/` do)

One tool, `save {text}`: writes the text, answers "saved", or the error it met.
"""

import json
import os
import sys

target = os.path.join(sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else os.environ["SAVE_FILE"]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "atomic", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{
            "name": "save", "description": "Saves a text", "annotations": {"readOnlyHint": True},
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}})
    elif method == "tools/call":
        tmp = "%s.tmp-%d" % (target, os.getpid())
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(msg["params"]["arguments"]["text"])
            os.replace(tmp, target)
            result = {"content": [{"type": "text", "text": "saved"}]}
        except OSError as e:
            sys.stderr.write("save failed: %s\n" % e)
            sys.stderr.flush()
            result = {"content": [{"type": "text", "text": str(e)}], "isError": True}
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no such method"}})
