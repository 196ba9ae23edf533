"""An MCP server of the Python SDK (`mcp` 2.x) that speaks only protocol 2026-07-28, for the tests.

  modern_server.py stdio        modern-only over stdio: `initialize` is refused, every request must
                                carry the per-request envelope (the SDK's modern serving loop)
  modern_server.py http PORT    the SDK's Streamable HTTP app on 127.0.0.1:PORT (both eras)

Tools:
  add(a, b)            read-only; the sum as text
  confirm(question)    asks the client with an input-required result (elicitation); answers with
                       what the person said, or "declined"
  regional(region, q)  `region` is mirrored into the Mcp-Param-Region header (x-mcp-header)
  broken(x)            its x-mcp-header annotation is invalid (on a number): clients must drop it
  greet()              its `name` comes from a resolver that elicits it (`Elicit`): the SDK
                       checks the client declared form elicitation first (-32021 if not)
"""

import sys
from typing import Annotated

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

server = MCPServer("modern-fixture")


@server.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@server.tool()
async def confirm(question: str, ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Asks the person a question through the client (multi round-trip request)."""
    answers = ctx.input_responses or {}
    answer = answers.get("answer")
    if answer is None:
        return types.InputRequiredResult(
            input_requests={
                "answer": types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=question,
                        requested_schema={
                            "type": "object",
                            "properties": {"reply": {"type": "string"}},
                            "required": ["reply"],
                        },
                    )
                )
            },
            request_state="asked:" + question,
        )
    if ctx.request_state != "asked:" + question:
        text = "state lost"
    elif getattr(answer, "action", None) == "accept":
        text = "the person said: " + str((answer.content or {}).get("reply"))
    else:
        text = "declined"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets the person, asking their name through the client."""
    return f"hello, {who.name}"


@server.tool()
def regional(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], q: str
) -> str:
    """Answers for a region (the region travels in a header too)."""
    return f"{region}: {q}"


@server.tool()
def broken(x: float) -> str:
    """Its header annotation is on a number, which the revision forbids."""
    return str(x)


# The SDK refuses to declare such a tool, as it should: the annotation is added afterwards, the
# way a careless server written by hand would send it.
server._tool_manager.get_tool("broken").parameters["properties"]["x"]["x-mcp-header"] = "X"


async def serve_modern_stdio() -> None:
    from mcp.server.runner import _serve_modern_stream  # the SDK's modern-only loop
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server
    async with stdio_server() as (read, write):
        async with low.lifespan(low) as state:
            await _serve_modern_stream(low, read, write, lifespan_state=state, raise_exceptions=False)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        anyio.run(serve_modern_stdio)
    elif sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        raise SystemExit(f"unknown mode {sys.argv[1]}")
