"""Start-up of `kimi acp`: answer `initialize` at once, load everything else meanwhile.

Importing the ACP SDK costs ~0.5 s (pydantic builds ~280 schema models and parses their
docstrings), and the agent core adds more. An IDE waits on `initialize` before it shows the
agent, so this module imports nothing heavy: it reads the first message, answers `initialize` from
`handshake.py`, and lets a thread import the SDK (with deferred model building, see
`sdk_import.py`) and the core in parallel. Later messages wait for that import, then flow through
the SDK's `AgentSideConnection` over our `StdioTransport`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

log = logging.getLogger(__name__)
STDIN_LIMIT = 50 * 1024 * 1024


def run() -> int:
    from ..logs import setup_logging

    setup_logging("acp")
    try:
        return asyncio.run(_main())
    except KeyboardInterrupt:
        return 0


class _Preloader:
    """Imports the server stack in a background thread and reports to the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.done: asyncio.Future[Any] = loop.create_future()
        self._thread = threading.Thread(target=self._run, name="kimi-acp-preload", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            from .sdk_import import import_sdk

            import_sdk()
            from . import server

            result: Any = server
            error: BaseException | None = None
        except BaseException as exc:  # reported to the loop, never lost in the thread
            result, error = None, exc
        self._loop.call_soon_threadsafe(self._settle, result, error)

    def _settle(self, result: Any, error: BaseException | None) -> None:
        if self.done.done():
            return
        if error is not None:
            self.done.set_exception(error)
        else:
            self.done.set_result(result)


async def _main() -> int:
    from ..stdio import install_shutdown_signals, open_stdio
    from .handshake import initialize_result
    from .transport import StdioTransport

    loop = asyncio.get_running_loop()
    preloader = _Preloader(loop)
    preloader.start()
    reader, writer = await open_stdio(STDIN_LIMIT)
    transport = StdioTransport(reader, writer)
    install_shutdown_signals(reader.feed_eof)

    first = await transport.receive()
    if first is None:
        return 0
    early_init: dict[str, Any] | None = None
    if _is_initialize(first):
        early_init = first["params"]
        transport.write({"jsonrpc": "2.0", "id": first["id"], "result": initialize_result(early_init)})
    else:
        transport.push_back(first)

    server_module = await preloader.done
    from acp.core import AgentSideConnection

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
    return (
        message.get("method") == "initialize"
        and isinstance(message.get("id"), (str, int))
        and isinstance(params, dict)
        and isinstance(params.get("protocolVersion"), int)
    )
