"""Start-up of `kimi --wire`: check the options, open the session, serve until stdin closes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


def run_wire(
    *,
    work_dir: str | None,
    session_id: str | None,
    continue_last: bool,
    config_file: str | None,
    config_text: str | None,
    model: str | None,
    thinking: bool | None,
    yolo: bool,
    max_steps_per_turn: int | None,
) -> int:
    from . import sessions
    from .cli import fail
    from .config import ConfigError, load_config

    try:
        loaded = load_config(config_file, config_text)
    except ConfigError as exc:
        fail(str(exc))
    if model and model not in loaded.config.models:
        fail(f"model {model!r} is not defined in [models] of {loaded.path or '--config'}")
    directory = Path(work_dir).expanduser() if work_dir else Path.cwd()
    if not directory.is_dir():
        fail(f"work dir {directory} does not exist or is not a directory")
    try:
        session = sessions.select(directory, session_id, continue_last)
    except (sessions.SessionSelectionError, OSError) as exc:
        fail(str(exc))

    from .logs import setup_logging

    setup_logging("wire")
    return asyncio.run(_serve(session, loaded, model, thinking, yolo, max_steps_per_turn))


async def _serve(session, loaded, model, thinking, yolo, max_steps_per_turn) -> int:  # type: ignore[no-untyped-def]
    from .core.agent import AgentCore
    from .kaos.local import LocalKaos
    from .stdio import install_shutdown_signals, open_stdio
    from .wire_server import WireServer

    core = AgentCore(
        session=session,
        loaded_config=loaded,
        kaos=LocalKaos(),
        model_alias=model,
        thinking=thinking,
        max_steps_per_turn=max_steps_per_turn,
    )
    core.approvals.runtime_yolo = yolo or loaded.config.default_yolo
    reader, writer = await open_stdio()
    server = WireServer(core, reader, writer)
    install_shutdown_signals(reader.feed_eof)
    await server.serve()
    sys.stdout.flush()
    return 0
