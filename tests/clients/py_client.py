"""A real MCP client (Python SDK `mcp` 2.x) driven by the Rust integration tests.

Connects the way a user's client would, lists tools, calls a fixed set of tools and prints one
JSON object on stdout: {"tools": [...names], "results": {tool: result-as-dict}, ...}.

  py_client.py http   URL TOKEN CALLS_JSON       ClientSession over Streamable HTTP with a bearer token
  py_client.py auto   URL TOKEN CALLS_JSON       mcp.Client in auto mode (server/discover, then fallback)
  py_client.py modern URL TOKEN CALLS_JSON       mcp.Client pinned to 2026-07-28 (never sends initialize)
  py_client.py stdio  CALLS_JSON -- CMD ARGS...  ClientSession over stdio to CMD (the gateway or a peer)
  py_client.py stdio-auto / stdio-modern CALLS_JSON -- CMD ARGS...   mcp.Client over stdio, auto or pinned

  py_client.py elicit URL TOKEN CALLS_JSON REPLY   mcp.Client pinned to 2026-07-28 that answers every
                                                   elicitation by accepting {"reply": REPLY} and every
                                                   sampling request with the text REPLY
                                                   (REPLY "-" declares no elicitation capability)
  py_client.py http-elicit URL TOKEN CALLS_JSON REPLY  a 2025 ClientSession that answers elicitation/create
  py_client.py approve URL TOKEN CALLS_JSON DECISION   a 2025 ClientSession that answers Gatehouse's approval
                                                   question (approve_via: client): accepts with
                                                   {"decision": DECISION}, or declines ("decline");
                                                   prints the questions it saw under "asked"

  py_client.py listen URL TOKEN                    mcp.Client pinned to 2026-07-28 opens subscriptions/listen
                                                   for tool list changes, prints {"listening": true} once
                                                   acknowledged, then the first change and the tools after it
  py_client.py stdio-listen -- CMD ARGS...         the same over stdio
  py_client.py listen-resource URL TOKEN URI TOOL  a listen stream subscribed to URI; calls TOOL (unless
                                                   "-"), prints the first update of URI it hears
  py_client.py legacy-subscribe URL TOKEN URI TOOL a 2025 ClientSession: resources/subscribe URI, calls
                                                   TOOL, prints the first update it hears

mcp.Client modes also print "protocol" (the version the client ended up speaking). A call that
fails prints {"error": {"code", "message"}} as its result instead of stopping the script.

CALLS_JSON: [[tool, arguments], ...]; a call named "@read" reads the resource at its "uri" argument.

MCP_CLIENT_NAME (environment): the name the `http` mode's client gives itself (clientInfo.name);
the SDK's own otherwise.
"""

import asyncio
import json
import os
import sys

import anyio

import httpx2
import mcp
import mcp_types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def dump(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def exercise(session_like, calls, initialize=True):
    out = {}
    if initialize:
        init = await session_like.initialize()
        out["server"] = init.server_info.name
        out["protocol"] = init.protocol_version
    tools = await session_like.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    out["results"] = {}
    for name, args in calls:
        try:
            if name == "@read":
                out["results"][name] = dump(await session_like.read_resource(args["uri"]))
                continue
            out["results"][name] = dump(await session_like.call_tool(name, args))
        except mcp.MCPError as e:
            out["results"][name] = {"error": {"code": e.code, "message": e.message}}
    return out


async def listen(transport):
    """Opens subscriptions/listen for tool list changes; prints once acknowledged, returns the
    first change and the tools before and after it."""
    async with mcp.Client(transport, mode="2026-07-28") as c:
        before = sorted(t.name for t in (await c.list_tools()).tools)
        async with c.listen(tools_list_changed=True) as sub:
            honored = sub.honored.model_dump(by_alias=True, exclude_none=True)
            print(json.dumps({"listening": True, "honored": honored}), flush=True)
            with anyio.fail_after(30):
                async for event in sub:
                    after = sorted(t.name for t in (await c.list_tools()).tools)
                    return {"event": type(event).__name__, "before": before, "after": after}
    raise SystemExit("the listen stream ended without an event")


async def main():
    mode = sys.argv[1]
    if mode == "elicit":
        url, token, calls, reply = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]

        async def answer(context, params):
            return mcp_types.ElicitResult(action="accept", content={"reply": reply})

        async def sample(context, params):
            return mcp_types.CreateMessageResult(
                role="assistant", content=mcp_types.TextContent(type="text", text=reply), model="test"
            )

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http:
            transport = streamable_http_client(url, http_client=http)
            callback = None if reply == "-" else answer
            sampler = None if reply == "-" else sample
            async with mcp.Client(
                transport, mode="2026-07-28", elicitation_callback=callback, sampling_callback=sampler
            ) as c:
                out = await exercise(c, calls, initialize=False)
                out["protocol"] = c.protocol_version
                return out
    if mode == "listen":
        url, token = sys.argv[2], sys.argv[3]
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http:
            return await listen(streamable_http_client(url, http_client=http))
    if mode == "listen-resource":
        # Modern: a listen stream subscribed to URI; then TOOL (no arguments) is called, which
        # makes the server send updates. Prints the first resource update heard.
        url, token, uri, tool = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http:
            transport = streamable_http_client(url, http_client=http)
            async with mcp.Client(transport, mode="2026-07-28") as c:
                async with c.listen(resource_subscriptions=[uri]) as sub:
                    honored = sub.honored.model_dump(by_alias=True, exclude_none=True)
                    if tool != "-":
                        await c.call_tool(tool, {})
                    with anyio.fail_after(30):
                        async for event in sub:
                            if type(event).__name__ == "ResourceUpdated":
                                return {"honored": honored, "event": "ResourceUpdated", "uri": str(event.uri)}
        raise SystemExit("no resource update")
    if mode == "legacy-subscribe":
        # A 2025 ClientSession subscribes to URI, calls TOOL, prints the first update it hears.
        url, token, uri, tool = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
        heard = anyio.Event()
        got = {}

        async def on_message(message):
            root = getattr(message, "root", message)
            if getattr(root, "method", None) == "notifications/resources/updated":
                got["uri"] = str(root.params.uri)
                heard.set()

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http:
            async with streamable_http_client(url, http_client=http) as (r, w, *_):
                async with ClientSession(r, w, message_handler=on_message) as s:
                    await s.initialize()
                    await s.subscribe_resource(uri)
                    await s.call_tool(tool, {})
                    with anyio.fail_after(30):
                        await heard.wait()
                    return {"event": "ResourceUpdated", "uri": got["uri"]}
    if mode == "stdio-listen":
        cmd = sys.argv[sys.argv.index("--") + 1 :]
        return await listen(StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ)))
    if mode == "approve":
        url, token, calls, decision = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
        asked = []

        async def answer_approval(context, params):
            asked.append({"message": params.message, "schema": params.requested_schema})
            if decision == "decline":
                return mcp_types.ElicitResult(action="decline")
            return mcp_types.ElicitResult(action="accept", content={"decision": decision})

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http:
            async with streamable_http_client(url, http_client=http) as (r, w, *_):
                async with ClientSession(r, w, elicitation_callback=answer_approval) as s:
                    out = await exercise(s, calls)
                    out["asked"] = asked
                    return out
    if mode == "http-elicit":
        # A 2025-era ClientSession that answers elicitation requests (the old server→client way).
        url, token, calls, reply = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]

        async def answer_legacy(context, params):
            return mcp_types.ElicitResult(action="accept", content={"reply": reply})

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http:
            async with streamable_http_client(url, http_client=http) as (r, w, *_):
                async with ClientSession(r, w, elicitation_callback=answer_legacy) as s:
                    return await exercise(s, calls)
    if mode in ("http", "auto", "modern"):
        url, token, calls = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http:
            if mode == "http":
                name = os.environ.get("MCP_CLIENT_NAME")
                info = mcp_types.Implementation(name=name, version="1") if name else None
                async with streamable_http_client(url, http_client=http) as (r, w, *_):
                    async with ClientSession(r, w, client_info=info) as s:
                        return await exercise(s, calls)
            pin = "auto" if mode == "auto" else "2026-07-28"
            async with mcp.Client(streamable_http_client(url, http_client=http), mode=pin) as c:
                out = await exercise(c, calls, initialize=False)
                out["protocol"] = c.protocol_version
                return out
    if mode == "stdio":
        calls = json.loads(sys.argv[2])
        cmd = sys.argv[sys.argv.index("--") + 1 :]
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                return await exercise(s, calls)
    if mode in ("stdio-auto", "stdio-modern"):
        calls = json.loads(sys.argv[2])
        cmd = sys.argv[sys.argv.index("--") + 1 :]
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
        pin = "auto" if mode == "stdio-auto" else "2026-07-28"
        async with mcp.Client(params, mode=pin) as c:
            out = await exercise(c, calls, initialize=False)
            out["protocol"] = c.protocol_version
            return out
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
