"""Start-up of `kimi acp`: answer `initialize` at once, load everything else meanwhile.

An IDE waits on `initialize` before it shows the agent. Importing the ACP SDK costs ~0.5 s
(pydantic builds ~280 schema models and parses their docstrings) and the core and asyncio add
more, so the main thread imports nothing heavy: it blocks on stdin, answers `initialize` from
`handshake.py` (plain dicts), while a thread imports the SDK (deferred model builds, see
`sdk_import.py`), the core and asyncio. Then the SDK's `AgentSideConnection` runs over our
`StdioTransport`, starting with the bytes that followed the first line.
"""

from __future__ import annotations

import json
from typing import Any

STDIN_LIMIT = 50 * 1024 * 1024


def run() -> int:
    from ..early import FirstLine, Preloader, ShutdownSignals, read_first_line, write_stdout

    signals = ShutdownSignals().install()
    preloader = Preloader(_load_server_stack).start()
    first = read_first_line(STDIN_LIMIT, stop=lambda: preloader.failed() or signals.requested)
    if first is None:
        preloader.result()  # re-raises an import failure; otherwise a signal asked us to stop
        first = FirstLine(b"", b"", True)
    early_init: dict[str, Any] | None = None
    try:
        message = json.loads(first.line) if first.line.strip() else None
    except ValueError:
        message = None
    if isinstance(message, dict) and _is_initialize(message):
        from .handshake import initialize_result

        early_init = message["params"]
        response = {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(early_init)}
        write_stdout((json.dumps(response, separators=(",", ":")) + "\n").encode())
    # Anything but a well-formed initialize goes to the full server, errors included.
    unread = first.leftover if early_init is not None else first.line + first.leftover
    server_module = preloader.result()
    if (first.eof and not unread.strip()) or signals.requested:
        return 0
    import asyncio

    return asyncio.run(_serve(server_module, unread, early_init, signals))


def _load_server_stack() -> Any:
    """Everything the server needs, imported off the main thread."""
    import asyncio  # noqa: F401

    from ..logs import setup_logging

    setup_logging("acp")
    from .sdk_import import import_sdk

    import_sdk()
    from . import server

    return server


async def _serve(server_module: Any, unread: bytes, early_init: dict[str, Any] | None, signals: Any) -> int:
    from acp.core import AgentSideConnection

    from ..stdio import install_shutdown_signals, open_stdio
    from .transport import StdioTransport

    reader, writer = await open_stdio(STDIN_LIMIT, prefix=unread)
    transport = StdioTransport(reader, writer)
    install_shutdown_signals(reader.feed_eof, already_requested=signals.requested)
    agent = server_module.AcpServer(transport, initialize_params=early_init)
    connection = AgentSideConnection(agent, transport, listening=False, use_unstable_protocol=True)
    try:
        await connection.listen()
    finally:
        await agent.shutdown()
        await transport.close()
    return 0


def _is_initialize(message: dict[str, Any]) -> bool:
    params = message.get("params")
    request_id = message.get("id")
    return (
        message.get("jsonrpc") == "2.0"
        and message.get("method") == "initialize"
        and isinstance(request_id, (str, int))
        and not isinstance(request_id, bool)
        and isinstance(params, dict)
        and isinstance(params.get("protocolVersion"), int)
    )
