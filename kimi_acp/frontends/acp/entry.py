"""Start-up of `kimi acp`: answer `initialize` at once, load everything else meanwhile.

An IDE waits on `initialize` before it shows the agent. Importing the ACP SDK costs ~0.5 s
(pydantic builds ~280 schema models and parses their docstrings) and the core and asyncio add
more, so the main thread imports nothing heavy: it blocks on stdin, answers `initialize` from
`handshake.py` (plain dicts), while a thread imports the SDK (deferred model builds, see
`sdk_import.py`), the core and asyncio. Then the SDK's `AgentSideConnection` runs over our
`StdioTransport`, starting with the bytes that followed the first line.
"""

from __future__ import annotations

import os
import sys
from typing import Any

STDIN_LIMIT = 50 * 1024 * 1024
SHUTDOWN_GRACE_S = 2.0  # for handlers still answering when stdin closes
SCHEMA_INDEX_DELAY_S = 2.0  # after the warm-ups (warm_up.WARM_DELAY_S)


def terminal_hint(command: str) -> str:
    return (
        f"{command} speaks the Agent Client Protocol on stdin/stdout; start it from your editor "
        "(see docs/acp.md). Press Ctrl-D to quit.\n"
    )


def run() -> int:
    from ...startup import early

    command = "kimi-acp" if sys.argv and os.path.basename(sys.argv[0]) == "kimi-acp" else "kimi acp"
    early.hint_if_terminal(terminal_hint(command))
    started = early.start(_load_server_stack, _early_initialize, STDIN_LIMIT)
    server_module = started.preloader.result()  # re-raises an import failure
    if started.nothing_to_serve:
        return 0
    early.settle_heap()
    import asyncio

    return asyncio.run(_serve(server_module, started))


def _default_model() -> Any:
    from ...config import ConfigError, load_config, resolve_model

    try:
        return resolve_model(load_config().config)
    except (ConfigError, OSError):
        return None  # reported to the client when it opens a session


def _early_initialize(message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to a well-formed `initialize`; anything else goes to the full server."""
    from ...startup.early import request_params

    params = request_params(message, "initialize")
    if params is None or not isinstance(params.get("protocolVersion"), int):
        return None
    from .handshake import initialize_result

    return initialize_result(params)


def _load_server_stack() -> Any:
    """Everything the server needs, imported off the main thread."""
    from ..._compat.asyncio_without_ssl import import_asyncio_without_ssl

    import_asyncio_without_ssl()
    from ..._compat import pydantic_plugin_loader as pydantic_plugins

    pydantic_plugins.install()  # no importlib.metadata when no distribution has pydantic plugins
    from ...startup.logs import setup_logging

    setup_logging("acp")
    from ..._compat.acp_sdk_import import import_sdk

    import_sdk()
    from ..._compat.pydantic_annotation_memo import remembered_annotations

    with remembered_annotations():
        from . import server

    return server  # the tool schemas and per-turn validators are warmed after the first session


def _cache_schema_index_later() -> None:
    """The first start after the SDK is installed: cache the index that later starts create the
    SDK's models from (acp/lazy_schema.py), in a worker thread after the warm-ups (~150 ms).
    Not a daemon: exiting while it writes waits for it (the write is atomic anyway)."""
    import asyncio
    import threading

    from ..._compat.acp_lazy_schema import is_lazy
    from ..._compat.acp_sdk_import import lazy_schema_wanted

    if is_lazy() or not lazy_schema_wanted():
        return

    def write() -> None:
        from ..._compat.acp_schema_index import write_index

        write_index()

    start = threading.Thread(target=write, name="kimi-schema-index", daemon=False).start
    asyncio.get_running_loop().call_later(SCHEMA_INDEX_DELAY_S, start)


async def _serve(server_module: Any, started: Any) -> int:
    from acp.core import AgentSideConnection

    from ...startup.stdio import install_shutdown_signals, open_stdio
    from .guard import install_guard
    from .transport import StdioTransport

    reader, writer = await open_stdio(STDIN_LIMIT, prefix=started.unread)
    transport = StdioTransport(reader, writer)
    install_shutdown_signals(reader.feed_eof, already_requested=started.signals.requested)
    agent = server_module.AcpServer(transport, initialize_params=started.handshake)
    connection = AgentSideConnection(agent, transport, listening=False, use_unstable_protocol=True)
    install_guard(connection, agent)
    from ...startup.warm_up import warm_up_in_background

    warm_up_in_background(model=_default_model)
    _cache_schema_index_later()
    try:
        await connection.listen()
    finally:
        await agent.shutdown()
        await transport.answer_open_requests(SHUTDOWN_GRACE_S)
        await transport.close()
    return 0
