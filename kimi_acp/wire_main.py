"""Start-up of `kimi --wire`: parse the options, answer `initialize` early, open the session, serve.

Like `kimi acp` (see `early.py`), the config, the session and the agent core are loaded in a
thread while the main thread waits for the client's first line; a plain `initialize` is answered
at once. Option errors (bad config, unknown model, missing work dir, no session to continue)
still end the process with a one-line error and exit code 2.

`parse_fast` understands the `kimi --wire` options so the common invocation skips click (~20 ms
of imports); anything it does not recognise falls back to the click CLI, which has the same
options (a test keeps the two in step).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STDIN_LIMIT = 100 * 1024 * 1024

_VALUE_OPTIONS = {
    "-w": "work_dir", "--work-dir": "work_dir",
    "-S": "session_id", "-r": "session_id", "--session": "session_id", "--resume": "session_id",
    "--config-file": "config_file", "--config": "config_text",
    "-m": "model", "--model": "model",
    "--max-steps-per-turn": "max_steps_per_turn",
}  # fmt: skip
# Repeatable: each occurrence adds to a list.
_LIST_OPTIONS = {"--mcp-config-file": "mcp_config_files", "--mcp-config": "mcp_configs"}
_FLAGS = {
    "--wire": ("wire", True),
    "-C": ("continue_last", True), "--continue": ("continue_last", True),
    "-y": ("yolo", True), "--yolo": ("yolo", True), "--yes": ("yolo", True), "--auto-approve": ("yolo", True),
    "--thinking": ("thinking", True), "--no-thinking": ("thinking", False),
}  # fmt: skip


def default_options() -> dict[str, Any]:
    return {
        "work_dir": None, "session_id": None, "continue_last": False, "config_file": None, "config_text": None,
        "model": None, "thinking": None, "yolo": False, "max_steps_per_turn": None,
        "mcp_config_files": (), "mcp_configs": (),
    }  # fmt: skip


def parse_fast(argv: list[str]) -> dict[str, Any] | None:
    """The options of `kimi --wire ...`, or None when click should parse (help, errors, oddities)."""
    options = default_options()
    wire = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _FLAGS and not eq:
            key, value = _FLAGS[name]
            if key == "wire":
                wire = True
            else:
                options[key] = value
        elif name in _VALUE_OPTIONS or name in _LIST_OPTIONS:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                return None
            if name in _LIST_OPTIONS:
                key = _LIST_OPTIONS[name]
                options[key] = (*options[key], value)
            else:
                options[_VALUE_OPTIONS[name]] = value
        else:
            return None
        i += 1
    steps = options["max_steps_per_turn"]
    if steps is not None:
        if not (steps.isdecimal() and int(steps) >= 1):
            return None
        options["max_steps_per_turn"] = int(steps)
    return options if wire else None


class StartupError(Exception):
    """A one-line reason the server cannot start (exit code 2)."""


@dataclass
class _Prepared:
    core: Any
    server_class: Any


TERMINAL_HINT = (
    "kimi --wire speaks the Wire protocol (JSON-RPC 2.0) on stdin/stdout; drive it from a program "
    "(see docs/wire.md). Press Ctrl-D to quit.\n"
)


def run_wire(**options: Any) -> int:
    from . import early

    early.hint_if_terminal(TERMINAL_HINT)  # on a terminal it would otherwise look hung; stderr only
    started = early.start(lambda: _prepare(**options), _early_initialize, STDIN_LIMIT)
    try:
        prepared: _Prepared = started.preloader.result()
    except StartupError as exc:
        print(f"kimi: error: {exc}", file=sys.stderr)
        return 2
    import asyncio

    if started.nothing_to_serve:
        asyncio.run(prepared.core.close())
        return 0
    early.settle_heap()
    return asyncio.run(_serve(prepared, started))


def _early_initialize(message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to an `initialize` without external tools (those need the loaded toolset)."""
    from .early import request_params

    params = request_params(message, "initialize")
    if params is None or not isinstance(params.get("protocol_version"), str) or params.get("external_tools"):
        return None
    from .wire.protocol import initialize_result

    return initialize_result()


def _prepare(
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
    mcp_config_files: tuple[str, ...] = (),
    mcp_configs: tuple[str, ...] = (),
) -> _Prepared:
    """Validate the options and build the session's agent (runs in the preload thread)."""
    import asyncio  # noqa: F401  (imported here, off the main thread)

    from . import sessions
    from .config import ConfigError, load_config

    try:
        loaded = load_config(config_file, config_text)
    except ConfigError as exc:
        raise StartupError(str(exc)) from None
    if model and model not in loaded.config.models:
        raise StartupError(f"model {model!r} is not defined in [models] of {loaded.path or '--config'}")
    from .mcp.config import McpConfigError, load_flag_servers, resolve_servers

    try:  # strict: a bad --mcp-config-file is an option error, like a bad --config-file
        mcp_servers = resolve_servers(flags=load_flag_servers(mcp_config_files, mcp_configs))
    except McpConfigError as exc:
        raise StartupError(str(exc)) from None
    directory = Path(work_dir).expanduser() if work_dir else Path.cwd()
    if not directory.is_dir():
        raise StartupError(f"work dir {directory} does not exist or is not a directory")
    try:
        session = sessions.select(directory, session_id, continue_last)
    except (sessions.SessionSelectionError, OSError) as exc:
        raise StartupError(str(exc)) from None

    from .logs import setup_logging

    setup_logging("wire")
    from .core.agent import AgentCore
    from .kaos.local import LocalKaos
    from .early import warm_up_core
    from .wire_server import WireServer

    warm_up_core()
    core = AgentCore(
        session=session,
        loaded_config=loaded,
        kaos=LocalKaos(),
        model_alias=model,
        thinking=thinking,
        max_steps_per_turn=max_steps_per_turn,
    )
    core.approvals.runtime_yolo = yolo or loaded.config.default_yolo
    if mcp_servers.servers or mcp_servers.problems:
        from .mcp.session import attach  # only with servers: nothing of MCP is loaded otherwise

        try:
            attach(core, mcp_servers)
        except McpConfigError as exc:  # a bad [mcp.client] in config.toml
            raise StartupError(str(exc)) from None
    return _Prepared(core, WireServer)


async def _serve(prepared: _Prepared, started: Any) -> int:
    from .stdio import install_shutdown_signals, open_stdio

    reader, writer = await open_stdio(STDIN_LIMIT, prefix=started.unread)
    server = prepared.server_class(prepared.core, reader, writer, early_initialize=started.handshake)
    install_shutdown_signals(server.request_stop, already_requested=started.signals.requested)
    from .early import warm_up_model_in_background

    warm_up_model_in_background(prepared.core.resolved_model())
    for service in prepared.core.services:
        start = getattr(service, "start", None)
        if start is not None:
            start()  # MCP servers connect while the client gets ready; the first turn waits
    await server.serve()
    return 0
