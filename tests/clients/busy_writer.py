"""A client saving its own JSON config in a tight loop (a save every 20–100 ms), the way clients and editors save: read
the file, change it, write a temporary file beside it and rename it over the original.

Each save adds one key (`saves["sN"] = N`) and puts back the client's own server `helper` with
its plain-text key (as a person re-adding it would). After each save completes, `N` is printed:
every printed key must be in the file at the end, whatever else edited it meanwhile.

usage: busy_writer.py FILE SECRET STOP_FILE [PERIOD_MS [inplace]]

With PERIOD_MS, a save starts every PERIOD_MS milliseconds (a client saving on a timer, as
Cursor saves its state), instead of a random 20–100 ms after the last one ended; with
`inplace`, each save rewrites the file where it is (truncated, then written in pieces) rather
than renaming a new file over it.
"""

import json
import os
import random
import time
import sys


def main():
    path, secret, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    period = float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else None
    inplace = len(sys.argv) > 5 and sys.argv[5] == "inplace"
    started = time.monotonic()
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
        if inplace:
            # Written where it is, in 64 KiB pieces with a breath between them: the file is
            # in flux for a good part of each period, as a big state file saved by a busy
            # program is.
            text = json.dumps(data)
            with open(path, "w", encoding="utf-8") as f:
                for at in range(0, len(text), 65536):
                    f.write(text[at:at + 65536])
                    f.flush()
                    time.sleep(0.002)
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
            os.replace(tmp, path)
        print(n, flush=True)
        n += 1
        if period is None:
            # A client saving on every change: a save every few tens of milliseconds.
            time.sleep(random.uniform(0.02, 0.1))
        else:
            time.sleep(max(0.0, started + n * period - time.monotonic()))


if __name__ == "__main__":
    main()
