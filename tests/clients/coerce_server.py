"""A real Python SDK server (`mcp` 2.x `MCPServer`, FastMCP's successor) whose tools take typed
arguments, which the SDK coerces as pydantic's lax mode does ("95" → 95, true → 1), for the
one-reading tests' coercion rows.

  coerce_server.py STATE_FILE

set_volume(level: int) and delete_item(id: int) each append what they did to STATE_FILE.
"""

import sys

from mcp.server.mcpserver import MCPServer

state = sys.argv[1]
mcp = MCPServer("coerce")


def done(what: str) -> str:
    with open(state, "a", encoding="utf-8") as f:
        f.write(what + "\n")
    return what


@mcp.tool()
def set_volume(level: int) -> str:
    """Sets the volume."""
    return done(f"volume {level}")


@mcp.tool()
def delete_item(id: int) -> str:
    """Deletes an item."""
    return done(f"deleted {id}")


if __name__ == "__main__":
    mcp.run()
