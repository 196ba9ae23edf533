#!/usr/bin/env python3
"""A stand-in for the person's browser in the sign-in tests (`GATEHOUSE_BROWSER`): follows the
authorization URL it is given, redirects included, back to Gatehouse's loopback listener, as a
browser whose user clicks "Allow" would. Standard library only."""

import sys
import urllib.error
import urllib.request

try:
    with urllib.request.urlopen(sys.argv[1], timeout=30) as resp:
        sys.stderr.write(f"browser: {resp.status} {resp.url}\n")
except urllib.error.HTTPError as e:
    sys.stderr.write(f"browser: HTTP {e.code} {e.url}\n")
except Exception as e:  # noqa: BLE001 - a browser shows whatever went wrong
    sys.stderr.write(f"browser: {e}\n")
