"""A real MCP server for the tests, built with the SDK's FastMCP.

    python server_app.py stdio                 serve on stdin/stdout
    python server_app.py http PORT             streamable HTTP on 127.0.0.1:PORT/mcp
    python server_app.py sse PORT              HTTP+SSE on 127.0.0.1:PORT/sse
    python server_app.py crash                 write to stderr and exit 3 before answering
    python server_app.py hang                  read stdin, never answer

With MCP_TEST_CRASH_IF_EXISTS=PATH in the environment, any mode crashes while PATH exists.
With MCP_TEST_CANCEL_LOG=PATH, the stdio mode appends one JSON line (the params) to PATH for each
`notifications/cancelled` it receives, before handling it.

The tool names carry a prefix (`--prefix P`) so that several servers in one session can offer
distinct tools, or (same prefix) clashing ones.
"""

import asyncio
import base64
import os
import subprocess
import sys
import time

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def build(prefix: str, port: int = 0):
    from mcp.server.fastmcp import Context, FastMCP, Image

    app = FastMCP(f"test-{prefix or 'server'}", host="127.0.0.1", port=port or 8000, log_level="WARNING")

    @app.tool(name=f"{prefix}echo", description="Echo the text back.")
    def echo(text: str) -> str:
        return f"echo: {text}"

    @app.tool(name=f"{prefix}boom", description="Always raises.")
    def boom() -> str:
        raise RuntimeError("kaboom from the server")

    @app.tool(name=f"{prefix}picture", description="Returns a tiny PNG and a caption.")
    def picture() -> list:
        return ["a red dot", Image(data=PNG, format="png")]

    @app.tool(name=f"{prefix}pid", description="The server's pid.")
    def pid() -> str:
        return str(os.getpid())

    @app.tool(name=f"{prefix}spawn", description="Start a long-lived child process; returns its pid.")
    def spawn() -> str:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        return str(child.pid)

    @app.tool(name=f"{prefix}slow", description="Sleep, then answer.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)  # the server stays responsive meanwhile
        return "done"

    @app.tool(name=f"{prefix}linger", description="Sleep; `marker`.started at once, `marker` if cancelled.")
    async def linger(seconds: float, marker: str) -> str:
        with open(marker + ".started", "w"):
            pass
        try:
            await asyncio.sleep(seconds)
        except BaseException as exc:  # the SDK cancels the handler on `notifications/cancelled`
            with open(marker, "a") as f:
                f.write(f"{type(exc).__name__}\n")
            raise
        return "lingered"

    @app.tool(name=f"{prefix}big", description="A long text.")
    def big(chars: int) -> str:
        return "x" * chars

    @app.tool(name=f"{prefix}grow", description="Add a tool, and tell the client its tools changed.")
    async def grow(ctx: Context) -> str:
        def extra() -> str:
            return "extra!"

        app.add_tool(extra, name=f"{prefix}extra", description="Added at run time.")
        await ctx.session.send_tool_list_changed()
        return "grown"

    return app


async def serve_stdio_logging_cancels(app, log_path: str) -> None:
    """FastMCP's stdio serving, with a tap on what the client sends."""
    import json

    import anyio
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        tapped_send, tapped_read = anyio.create_memory_object_stream(0)

        async def tap() -> None:
            async with tapped_send:
                async for item in read:
                    root = getattr(getattr(item, "message", None), "root", None)
                    if getattr(root, "method", None) == "notifications/cancelled":
                        with open(log_path, "a") as f:
                            f.write(json.dumps(root.params) + "\n")
                    await tapped_send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(tap)
            server = app._mcp_server
            await server.run(tapped_read, write, server.create_initialization_options())
            group.cancel_scope.cancel()


def main() -> None:
    args = sys.argv[1:]
    prefix = ""
    if "--prefix" in args:
        i = args.index("--prefix")
        prefix = args[i + 1]
        del args[i : i + 2]
    mode = args[0]
    marker = os.environ.get("MCP_TEST_CRASH_IF_EXISTS")  # lets a test make the *next* start fail
    if mode == "crash" or (marker and os.path.exists(marker)):
        sys.stderr.write("fatal: the test server refuses to start\n")
        sys.stderr.flush()
        sys.exit(3)
    if mode == "hang":
        for _ in sys.stdin:
            pass
        time.sleep(600)
        return
    if mode == "stdio" and os.environ.get("MCP_TEST_CANCEL_LOG"):
        import anyio

        anyio.run(serve_stdio_logging_cancels, build(prefix), os.environ["MCP_TEST_CANCEL_LOG"])
    elif mode == "stdio":
        build(prefix).run("stdio")
    elif mode == "http":
        build(prefix, int(args[1])).run("streamable-http")
    elif mode == "sse":
        build(prefix, int(args[1])).run("sse")
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
