"""A real remote MCP server (Python SDK `mcp` 2.x) for the remote-upstream tests.

  remote_server.py PORT [--sse] [--token TOKEN]

Streamable HTTP on http://127.0.0.1:PORT/mcp, or with --sse the 2024-11-05 HTTP+SSE transport on
http://127.0.0.1:PORT/sse. With --token, every request must carry `Authorization: Bearer TOKEN`
(anything else gets 401), so a server that reaches `running` proves the header secret arrived.
Tools: echo(text), slow(ms), auth_seen() → the SHA-256 of the Authorization header it got.
"""

import asyncio
import hashlib
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.responses import PlainTextResponse

port = int(sys.argv[1])
sse = "--sse" in sys.argv
token = sys.argv[sys.argv.index("--token") + 1] if "--token" in sys.argv else None
last_auth = {"value": ""}

mcp = MCPServer("gatehouse-remote-test")


@mcp.tool()
def echo(text: str) -> str:
    """Returns the text it is given."""
    return text


@mcp.tool()
async def slow(ms: int) -> str:
    """Sleeps for ms milliseconds, then answers."""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


@mcp.tool()
def auth_seen() -> str:
    """The SHA-256 of the Authorization header of the last request."""
    return hashlib.sha256(last_auth["value"].encode()).hexdigest()


app = mcp.sse_app() if sse else mcp.streamable_http_app()


class CheckToken:
    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            auth = headers.get(b"authorization", b"").decode()
            last_auth["value"] = auth
            if token is not None and auth != f"Bearer {token}":
                await PlainTextResponse("bad token", status_code=401)(scope, receive, send)
                return
        await self.inner(scope, receive, send)


print(f"remote test server on {port} ({'sse' if sse else 'streamable-http'})", file=sys.stderr, flush=True)
uvicorn.run(CheckToken(app), host="127.0.0.1", port=port, log_level="warning")
