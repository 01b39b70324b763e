"""Start-up of `kimi acp`: answer `initialize` at once, load everything else meanwhile.

An IDE waits on `initialize` before it shows the agent. Importing the ACP SDK is slow
(pydantic builds ~280 schema models and parses their docstrings) and the core and asyncio add
more (figures: docs/performance.md, Figures that used to live in the code), so the main thread
imports nothing heavy: it blocks on stdin, answers `initialize` from `handshake.py` (plain
dicts), while a thread imports the SDK (deferred model builds, see
`_compat/acp_sdk_import.py`), the core and asyncio. Then the SDK's `Connection` runs over our
`StdioTransport`, starting with the bytes that followed the first line, with the request guard
(guard.py) in front of the SDK's router.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

STDIN_LIMIT = 50 * 1024 * 1024
SHUTDOWN_GRACE_S = 2.0  # for handlers still answering when stdin closes
SCHEMA_INDEX_DELAY_S = 2.0  # after the warm-ups (warm_up.WARM_DELAY_S)


def terminal_hint(command: str) -> str:
    return (
        f"{command} speaks the Agent Client Protocol on stdin/stdout; start it from your editor "
        "(see `kimi help acp`). Press Ctrl-D to quit.\n"
    )


def run(sandbox: str | None = None) -> int:
    """Serve; `sandbox`: `--sandbox`, the mode of sessions that chose none themselves."""
    from ...startup import early

    command = "kimi-acp" if sys.argv and os.path.basename(sys.argv[0]) == "kimi-acp" else "kimi acp"
    early.hint_if_terminal(terminal_hint(command))
    started = early.start(_load_server_stack, _early_initialize, STDIN_LIMIT)
    server_module = started.preloader.result()  # re-raises an import failure
    if started.nothing_to_serve:
        return 0
    early.settle_heap()
    import asyncio

    return asyncio.run(_serve(server_module, started, sandbox))


def _default_model() -> Any:
    from ...config import load_config, resolve_model
    from ...errors import ConfigError

    try:
        return resolve_model(load_config().config)
    except (ConfigError, OSError):
        return None  # reported to the client when it opens a session


def _early_initialize(message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to a well-formed `initialize`; anything else goes to the full server."""
    from ...startup.early import request_params

    params = request_params(message, "initialize")
    if params is None:
        return None
    from .handshake import initialize_problem, initialize_result

    if initialize_problem(params) is not None:
        return None  # the server answers it with the error
    return initialize_result(params)


def _load_server_stack() -> Any:
    """Everything the server needs, imported off the main thread."""
    from ...startup.preload import prepare_imports

    prepare_imports()
    from ...startup.logs import setup_logging

    setup_logging("acp")
    from ...util.process_guard import keep_process_private

    keep_process_private()  # before any command can run: its children cannot read us (issue #30)
    from ..._compat.acp_sdk_import import import_sdk

    import_sdk()
    from ..._compat.pydantic_annotation_memo import remembered_annotations

    with remembered_annotations():
        from . import server

    return server  # the tool schemas and per-turn validators are warmed after the first session


def _cache_schema_index_later() -> None:
    """The first start after the SDK is installed: cache the index that later starts create the
    SDK's models from (_compat/acp_lazy_schema.py), in a worker thread after the warm-ups.
    Not a daemon: exiting while it writes waits for it (the write is atomic anyway)."""
    import asyncio
    import threading

    from ..._compat.acp_lazy_schema import is_lazy
    from ..._compat.acp_sdk_import import lazy_schema_applies

    if is_lazy() or not lazy_schema_applies():
        return

    def write() -> None:
        from ..._compat.acp_schema_index import write_index

        write_index()

    start = threading.Thread(target=write, name="kimi-schema-index", daemon=False).start
    asyncio.get_running_loop().call_later(SCHEMA_INDEX_DELAY_S, start)


async def _serve(server_module: Any, started: Any, sandbox: str | None = None) -> int:
    from ...startup.stdio import install_shutdown_signals, open_stdio

    reader, writer = await open_stdio(STDIN_LIMIT, prefix=started.unread)
    install_shutdown_signals(reader.feed_eof, already_requested=started.signals.requested)

    def warm_up() -> None:
        from ...startup.warm_up import warm_up_in_background

        warm_up_in_background(model=_default_model)
        _cache_schema_index_later()

    return await serve_streams(
        server_module.AcpServer, reader, writer, sandbox=sandbox, initialize_params=started.handshake, on_ready=warm_up
    )


async def serve_streams(
    server_class: Any,
    reader: Any,
    writer: Any,
    *,
    sandbox: str | None = None,
    initialize_params: dict[str, Any] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> int:
    """The ACP server over `reader` (a StreamReader) and `writer` (a `StdoutWriter`): stdio here,
    an in-memory pair in the tests (tests/support/inmemory.py). `initialize_params`: an
    `initialize` already answered early; `on_ready`: called once the connection is set up."""
    from acp.agent.router import build_agent_router
    from acp.connection import Connection

    from .client_calls import ClientCalls
    from .guard import RequestGuard
    from .transport import StdioTransport

    transport = StdioTransport(reader, writer)
    agent = server_class(transport, initialize_params=initialize_params)
    agent.sandbox_mode = sandbox
    router = build_agent_router(agent, use_unstable_protocol=True)
    connection = Connection(RequestGuard(router, agent), transport, listening=False)
    agent.on_connect(ClientCalls(connection))
    if on_ready is not None:
        on_ready()
    try:
        await connection.main_loop()
    finally:
        await agent.shutdown()
        await transport.answer_open_requests(SHUTDOWN_GRACE_S)
        await transport.close()
    return 0
