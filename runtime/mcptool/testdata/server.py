"""An MCP server built on the official MCP Python SDK, for runtime/mcptool's tests.

Usage: server.py stdio | server.py http  (http binds 127.0.0.1:0, prints the port on stdout, serves /mcp).
Its tools cover the paths the client must handle: text, structured content, a tool error, a slow call, a crash,
and per-process state (to tell one server per agent from one per episode).
"""
import os
import socket
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("agentrt-test")
calls = 0


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Always fails with the given message.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Sleep for the given seconds, then answer.")
async def sleep(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "slept"


@server.tool(description="Kill the server process.")
def crash() -> str:
    os._exit(3)


@server.tool(description="Count the calls this server process has answered, and its pid.")
def counter() -> str:
    global calls
    calls += 1
    return f"{calls} {os.getpid()}"


def main():
    if sys.argv[1:] == ["http"]:
        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # connections queue from now on, so the port is usable once printed
        print(sock.getsockname()[1], flush=True)
        app = server.streamable_http_app()
        config = uvicorn.Config(app, log_level="warning")
        anyio.run(uvicorn.Server(config).serve, [sock])
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
