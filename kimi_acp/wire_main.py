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

import json
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
        elif name in _VALUE_OPTIONS:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                return None
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


def run_wire(**options: Any) -> int:
    from .early import FirstLine, Preloader, ShutdownSignals, read_first_line, write_stdout

    signals = ShutdownSignals().install()
    preloader = Preloader(lambda: _prepare(**options)).start()
    first = read_first_line(STDIN_LIMIT, stop=lambda: preloader.failed() or signals.requested)
    if first is None and preloader.failed():  # start-up failed before the client said anything
        return _startup_failed(preloader)
    if first is None:  # a signal before the first message
        first = FirstLine(b"", b"", True)
    early: dict[str, Any] | None = None
    try:
        message = json.loads(first.line) if first.line.strip() else None
    except ValueError:
        message = None
    if isinstance(message, dict) and _is_plain_initialize(message):
        from .wire.protocol import initialize_result

        early = message["params"]
        response = {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result()}
        write_stdout((json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
    unread = first.leftover if early is not None else first.line + first.leftover
    try:
        prepared: _Prepared = preloader.result()
    except StartupError:
        return _startup_failed(preloader)
    import asyncio

    if (first.eof and not unread.strip()) or signals.requested:
        asyncio.run(prepared.core.close())
        return 0
    return asyncio.run(_serve(prepared, unread, early, signals))


def _startup_failed(preloader: Any) -> int:
    try:
        preloader.result()
    except StartupError as exc:
        print(f"kimi: error: {exc}", file=sys.stderr)
        return 2
    return 1


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
    return _Prepared(core, WireServer)


async def _serve(prepared: _Prepared, unread: bytes, early: dict[str, Any] | None, signals: Any) -> int:
    from .stdio import install_shutdown_signals, open_stdio

    reader, writer = await open_stdio(STDIN_LIMIT, prefix=unread)
    server = prepared.server_class(prepared.core, reader, writer, early_initialize=early)
    install_shutdown_signals(reader.feed_eof, already_requested=signals.requested)
    await server.serve()
    return 0


def _is_plain_initialize(message: dict[str, Any]) -> bool:
    """An `initialize` the early path can answer: no external tools to validate and register."""
    params = message.get("params")
    request_id = message.get("id")
    return (
        message.get("jsonrpc") == "2.0"
        and message.get("method") == "initialize"
        and isinstance(request_id, (str, int))
        and not isinstance(request_id, bool)
        and isinstance(params, dict)
        and isinstance(params.get("protocol_version"), str)
        and not params.get("external_tools")
    )
