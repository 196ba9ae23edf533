"""A client saving its own JSON config in a tight loop (a save every 20–100 ms), the way clients and editors save: read
the file, change it, write a temporary file beside it and rename it over the original.

Each save adds one key (`saves["sN"] = N`) and puts back the client's own server `helper` with
its plain-text key (as a person re-adding it would). After each save completes, `N` is printed:
every printed key must be in the file at the end, whatever else edited it meanwhile.

usage: busy_writer.py FILE SECRET STOP_FILE
"""

import json
import os
import random
import time
import sys


def main():
    path, secret, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    tmp = path + ".client-tmp"
    n = 0
    while not os.path.exists(stop):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        data.setdefault("saves", {})[f"s{n}"] = n
        data.setdefault("mcpServers", {})["helper"] = {
            "command": "helper-mcp",
            "env": {"HELPER_API_KEY": secret},
        }
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, path)
        print(n, flush=True)
        n += 1
        # A client saving on every change: a save every few tens of milliseconds.
        time.sleep(random.uniform(0.02, 0.1))


if __name__ == "__main__":
    main()
