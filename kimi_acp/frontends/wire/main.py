"""Start-up of `kimi --wire`: parse the options, answer `initialize` early, open the session, serve.

Like `kimi acp` (see `startup/early.py`), the config, the session and the agent core are loaded in a
thread while the main thread waits for the client's first line; a plain `initialize` is answered
at once. Option errors (bad config, unknown model, missing work dir, no session to continue)
still end the process with a one-line error and exit code 2.

`parse_fast` understands the `kimi --wire` options so the common invocation skips click and its
imports (figures: docs/performance.md, Figures that used to live in the code); anything it does
not recognise falls back to the click CLI, which has the same options (a test keeps the two in
step).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ...sandbox import MODES

if TYPE_CHECKING:
    from collections.abc import Callable

STDIN_LIMIT = 100 * 1024 * 1024

_VALUE_OPTIONS = {
    "-w": "work_dir", "--work-dir": "work_dir",
    "-S": "session_id", "-r": "session_id", "--session": "session_id", "--resume": "session_id",
    "--config-file": "config_file", "--config": "config_text",
    "-m": "model", "--model": "model",
    "--max-steps-per-turn": "max_steps_per_turn", "--max-retries-per-step": "max_retries_per_step",
    "--agent-file": "agent_file", "--sandbox": "sandbox",
}  # fmt: skip
# Repeatable: each occurrence adds to a list.
_LIST_OPTIONS = {
    "--mcp-config-file": "mcp_config_files", "--mcp-config": "mcp_configs",
    "--skills-dir": "skills_dirs", "--add-dir": "add_dirs",
}  # fmt: skip
_INT_OPTIONS = ("max_steps_per_turn", "max_retries_per_step")  # each >= 1
_FLAGS = {
    "--wire": ("wire", True),
    "-C": ("continue_last", True), "--continue": ("continue_last", True),
    "-y": ("yolo", True), "--yolo": ("yolo", True), "--yes": ("yolo", True), "--auto-approve": ("yolo", True),
    "--thinking": ("thinking", True), "--no-thinking": ("thinking", False),
    "--plan": ("plan", True), "--afk": ("afk", True), "--always-ask": ("always_ask", True),
}  # fmt: skip


def default_options() -> dict[str, Any]:
    return {
        "work_dir": None, "session_id": None, "continue_last": False, "config_file": None, "config_text": None,
        "model": None, "thinking": None, "yolo": False, "max_steps_per_turn": None,
        "mcp_config_files": (), "mcp_configs": (),
        "plan": False, "afk": False, "max_retries_per_step": None, "agent_file": None,
        "skills_dirs": (), "add_dirs": (), "sandbox": None, "always_ask": False,
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
            key, flag_value = _FLAGS[name]
            if key == "wire":
                wire = True
            else:
                options[key] = flag_value
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
    for key in _INT_OPTIONS:
        value = options[key]
        if value is not None:
            if not (value.isdecimal() and int(value) >= 1):
                return None
            options[key] = int(value)
    if options["sandbox"] is not None and options["sandbox"] not in MODES:
        return None  # click says which modes there are
    return options if wire else None


class StartupError(ConfigError):
    """A one-line reason the server cannot start (exit code 2)."""


@dataclass
class _Prepared:
    core: Any
    server_class: Any


TERMINAL_HINT = (
    "kimi --wire speaks the Wire protocol (JSON-RPC 2.0) on stdin/stdout; drive it from a program "
    "(see `kimi help wire`). Press Ctrl-D to quit.\n"
)


def run_wire(**options: Any) -> int:
    from ...startup import early

    early.hint_if_terminal(TERMINAL_HINT)  # on a terminal it would otherwise look hung; stderr only
    _import_early_answers(options)  # now, before the preload competes for the GIL
    started = early.start(
        lambda: _preload(options),
        lambda m: _early_initialize(m, options),
        STDIN_LIMIT,
        more=lambda m, hold: _early_replay(m, options, hold),
    )
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


def _import_early_answers(options: dict[str, Any]) -> None:
    """What the early answers import, imported before the preload starts: they are computed with
    the preload paused (`early.start`), which allows no import, and an import shared with the
    preload's thread would cost several GIL hand-offs."""
    from ...core import hook_events, slash, slash_commands  # noqa: F401
    from ...skills import provider, sources  # noqa: F401  (the bundled skills are always listed)
    from . import handshake  # noqa: F401

    if options.get("session_id"):
        from . import early_replay  # noqa: F401


def _early_initialize(message: dict[str, Any], options: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The answer to an `initialize` without external tools or hook subscriptions (those need the
    loaded session), unless the config may have `[[hooks]]` (their counts are in the answer)."""
    from ...startup.early import request_params

    params = request_params(message, "initialize")
    if params is None or not isinstance(params.get("protocol_version"), str) or params.get("external_tools"):
        return None
    if params.get("hooks") or _config_may_have_hooks(options or {}):
        return None
    commands = _early_commands(options or {})
    if commands is None:
        return None  # the config may name more skill directories: the loaded session answers
    from .handshake import initialize_result

    return initialize_result(commands)


def _early_replay(message: dict[str, Any], options: dict[str, Any], hold: Any) -> bytes | None:
    """A `replay` right after the early `initialize`, served from the session file (see
    `wire/early_replay.py`); None leaves it to the server."""
    if not options.get("session_id"):
        return None  # nothing to replay early (and early_replay is imported only with a session)
    from .early_replay import answer

    return answer(message, options, hold)


def _early_commands(options: dict[str, Any]) -> list[Any] | None:
    """The slash commands of the early answer: the built-ins, plus the skills found now (a few
    stat calls when there are none; parsing only when there are, PyYAML only for front matter
    beyond plain `key: value` lines). None when it cannot tell cheaply: the answer then waits for
    the loaded session."""
    settings = _early_skill_settings(options)
    if settings is None:
        return None
    extra_dirs, merge = settings
    from ...core.slash_commands import BUILTIN_COMMANDS
    from ...skills.sources import SkillSources, may_have_skills

    work_dir = Path(options["work_dir"]).expanduser() if options.get("work_dir") else Path.cwd()
    skills_dirs = tuple(Path(d).expanduser() for d in options.get("skills_dirs") or ())
    sources = SkillSources(work_dir, skills_dirs=skills_dirs, extra_dirs=extra_dirs, merge_brands=merge)
    if not may_have_skills(sources):
        return list(BUILTIN_COMMANDS)
    from ...core.slash import SlashRegistry
    from ...skills.provider import SkillProvider

    registry = SlashRegistry(BUILTIN_COMMANDS)  # the same composition as the session's registry
    registry.add_provider(SkillProvider(sources, log_problems=False))  # logging is not set up yet
    return registry.commands()


def _early_skill_settings(options: dict[str, Any]) -> tuple[tuple[str, ...], bool] | None:
    """`extra_skill_dirs` and `merge_all_available_skills` of the config, read without pydantic
    (the standard library only, and only when the text names them); None if unsure (the preload
    then validates the config and reports what is wrong)."""
    keys = ("extra_skill_dirs", "merge_all_available_skills")
    if not any(_config_mentions(options, key) for key in keys):
        return (), True
    text = options.get("config_text")
    as_json = text.strip().startswith("{") if text is not None else False
    if text is None:
        from ...util.share_dir import share_dir

        path = Path(options["config_file"]).expanduser() if options.get("config_file") else share_dir() / "config.toml"
        as_json = path.suffix.lower() == ".json"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    try:
        if as_json:
            import json

            data = json.loads(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except ValueError:  # tomllib.TOMLDecodeError is a ValueError
        return None
    extra = data.get("extra_skill_dirs", []) if isinstance(data, dict) else None
    merge = data.get("merge_all_available_skills", True) if isinstance(data, dict) else None
    if not (isinstance(extra, list) and all(isinstance(e, str) for e in extra) and isinstance(merge, bool)):
        return None
    return tuple(extra), merge


def _raw_config_text(options: dict[str, Any]) -> str:
    """The config's text, unparsed ("" when there is no file: a bad --config-file ends the
    process anyway, in the preload)."""
    text: str | None = options.get("config_text")  # --config's value when given
    if text is not None:
        return text
    from ...util.share_dir import share_dir

    path = Path(options["config_file"]).expanduser() if options.get("config_file") else share_dir() / "config.toml"
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _config_mentions(options: dict[str, Any], key: str) -> bool:
    return key in _raw_config_text(options)


def _config_may_have_hooks(options: dict[str, Any]) -> bool:
    """A cheap look at the config's text (no parsing): could it hold `[[hooks]]`? A false yes only
    costs the early answer; the server then answers with the exact counts."""
    text = _raw_config_text(options)
    import re

    pattern = r'^\s*\[\[\s*"?hooks"?\s*\]\]|^\s*"?hooks"?\s*=|"hooks"\s*:'
    return re.search(pattern, text, re.MULTILINE) is not None


def _preload(options: dict[str, Any]) -> _Prepared:
    """The preload thread: asyncio and pydantic's plugin discovery (startup/preload.py), then
    `_prepare`, evaluating each of the models' annotation texts once (_compat/pydantic_annotation_memo.py)."""
    from ..._compat.pydantic_annotation_memo import remembered_annotations
    from ...startup.preload import prepare_imports

    prepare_imports()
    with remembered_annotations():
        return _prepare(**options)


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
    plan: bool = False,
    afk: bool = False,
    max_retries_per_step: int | None = None,
    agent_file: str | None = None,
    skills_dirs: tuple[str, ...] = (),
    add_dirs: tuple[str, ...] = (),
    sandbox: str | None = None,
    always_ask: bool = False,
) -> _Prepared:
    """Validate the options and build the session's agent (runs in the preload thread)."""
    from ... import sessions
    from ...config import load_config

    try:
        loaded = load_config(config_file, config_text)
    except ConfigError as exc:
        raise StartupError(str(exc)) from None
    if model and model not in loaded.config.models:
        raise StartupError(f"model {model!r} is not defined in [models] of {loaded.path or '--config'}")
    if max_retries_per_step is not None:
        loaded.config.loop_control.max_retries_per_step = max_retries_per_step
    mcp_servers = _mcp_servers(mcp_config_files, mcp_configs)
    directory = Path(work_dir).expanduser() if work_dir else Path.cwd()
    if not directory.is_dir():
        raise StartupError(f"work dir {directory} does not exist or is not a directory")
    extra_dirs = _existing_dirs("--add-dir", add_dirs)
    skill_dirs = _existing_dirs("--skills-dir", skills_dirs)
    from ...errors import AgentFileError
    from ...root_core import build_root_core, load_root_agent

    try:  # before the session is selected: a bad file leaves no empty session behind
        agent = load_root_agent(loaded, agent_file or None)  # --agent-file, else the config's agent_file
    except AgentFileError as exc:
        raise StartupError(str(exc)) from None
    try:
        session = sessions.select(directory, session_id, continue_last)
    except (sessions.SessionSelectionError, OSError) as exc:
        raise StartupError(str(exc)) from None

    from ...startup.logs import setup_logging

    setup_logging("wire")
    from ...util.process_guard import keep_process_private

    keep_process_private()  # before any command can run: its children cannot read us (issue #30)
    from ...front_end import FrontEnd
    from ...kaos.local import LocalKaos
    from .server import WireServer

    # Questions and plan mode wait for the client's `initialize` (WireServer); the modes are the
    # options': --yolo (else the config's default_yolo), --afk, and for a session that made no
    # choice of its own --always-ask and --sandbox.
    front_end = FrontEnd(
        questions="none", plan_mode=False, afk=afk, sandbox=sandbox, yolo=yolo or None, always_ask=True if always_ask else None
    )
    # hooks are attached here too; WireServer takes the same engine for the client's subscriptions
    core = build_root_core(
        session,
        loaded,
        LocalKaos(),
        agent=agent,
        front_end=front_end,
        skills_dirs=skill_dirs,
        extra_dirs=extra_dirs,
        model_alias=model,
        thinking=thinking,
        max_steps_per_turn=max_steps_per_turn,
    )
    if plan and not core.plan_mode:
        core.controls.set_plan_mode(True)
    if mcp_servers is not None and (mcp_servers.servers or mcp_servers.problems):
        from ...mcp.config import McpConfigError
        from ...mcp.session import attach  # only with servers: nothing of MCP is loaded otherwise

        try:
            attach(core, mcp_servers)
        except McpConfigError as exc:  # a bad [mcp.client] in config.toml
            raise StartupError(str(exc)) from None
    return _Prepared(core, WireServer)


def _existing_dirs(option: str, values: tuple[str, ...]) -> list[Path]:
    """The directories of a repeatable option, absolute; one that does not exist is an option error."""
    found = []
    for value in values:
        path = Path(value).expanduser().absolute()
        if not path.is_dir():
            raise StartupError(f"{option} {value}: not an existing directory")
        found.append(path)
    return found


def _mcp_servers(files: tuple[str, ...], texts: tuple[str, ...]) -> Any:
    """The flags' servers over mcp.json's, or None when there are none anywhere (the MCP layer
    is then never imported). A bad flag is an option error, like a bad --config-file."""
    from ...util.share_dir import mcp_file_may_list_servers

    if not files and not texts and not mcp_file_may_list_servers():
        return None
    from ...mcp.config import McpConfigError, load_flag_servers, resolve_servers

    try:
        return resolve_servers(flags=load_flag_servers(files, texts))
    except McpConfigError as exc:
        raise StartupError(str(exc)) from None


async def _serve(prepared: _Prepared, started: Any) -> int:
    from ...startup.stdio import install_shutdown_signals, open_stdio

    reader, writer = await open_stdio(STDIN_LIMIT, prefix=started.unread)

    def on_server(server: Any) -> None:
        install_shutdown_signals(server.request_stop, already_requested=started.signals.requested)
        from ...startup.warm_up import warm_up_in_background

        # the tool schemas and per-turn validators (and the HTTP stack) once the server is up: a
        # first prompt builds what it needs itself, a first `replay` or other request never waits
        warm_up_in_background(prepared.core.resolved_model())

    return await serve_streams(prepared, reader, writer, early_initialize=started.handshake, on_server=on_server)


async def serve_streams(
    prepared: _Prepared,
    reader: Any,
    writer: Any,
    *,
    early_initialize: dict[str, Any] | None = None,
    on_server: Callable[[Any], None] | None = None,
    batch_input: bool | None = None,
) -> int:
    """Serve the prepared session over `reader` (a StreamReader) and `writer` (a `StdoutWriter`):
    stdio here, an in-memory pair in the tests (tests/support/inmemory.py). `on_server` gets the
    server before it reads; `batch_input`: see `WireServer`."""
    server = prepared.server_class(prepared.core, reader, writer, early_initialize=early_initialize, batch_input=batch_input)
    if on_server is not None:
        on_server(server)
    for service in prepared.core.services:
        start = getattr(service, "start", None)
        if start is not None:
            start()  # MCP servers connect while the client gets ready; the first turn waits
    await server.serve()
    return 0
