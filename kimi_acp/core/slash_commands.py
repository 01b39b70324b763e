"""The built-in slash commands, each declared on its handler (`BUILTINS.command`), in display order.

Every command runs inside a turn (after its TurnBegin) and is the whole turn (a built-in returns
nothing, a provider's command a `TurnResult`), or expands into a prompt (`SlashPrompt`: /init,
/skill:<name>) that the turn then sends to the model. Commands
work on the `SlashHost` protocol (slash_host.py), not on `AgentCore`, so they can be read and
tested apart; every setting they change goes through the session's controls
(core/session_controls.py), which check it and announce it.

Cheap to import, like `slash.py`: the early Wire `initialize` answer reads `BUILTIN_COMMANDS`
before anything heavy is loaded, so a command imports what it works with when it runs (the core
has loaded it by then); /export, /import and /undo do their work in modules of their own.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .slash import CommandTable, SlashCommand, strip_quotes

if TYPE_CHECKING:
    from .slash_host import SlashHost
    from .turn import SlashPrompt, TurnResult

INIT_PROMPT = """\
Analyze this codebase and write (or update) an `AGENTS.md` file at the root of the working directory.
It is read by coding agents before they work here, so make it short and useful: what the project is,
how it is laid out, how to build, run and test it (exact commands), the code style and conventions it
follows, and anything surprising a newcomer must know. Explore first (read the README, build files and
a few representative sources), then write the file with WriteFile."""

BUILTINS = CommandTable()


async def run_slash_command(core: SlashHost, name: str, args: str) -> TurnResult | SlashPrompt:
    """Run `/name args`: the turn's result, or the prompt the command expands into."""
    from .turn import TurnResult  # loaded with the core by now (not at import: see the module docstring)

    found = core.slash.find(name)
    if found is None or found.handler is None:  # never run (nor advertise) what has no handler
        core.say(_unknown(core, name))
        return TurnResult("finished")
    outcome: TurnResult | SlashPrompt | None = await found.handler(core, args)
    return TurnResult("finished") if outcome is None else outcome


def _unknown(core: SlashHost, name: str) -> str:
    text = f'Unknown slash command "/{name}".'
    for provider in core.slash.providers:
        explanation = provider.explain(name)
        if explanation:
            return f"{text} {explanation}"
    return text  # Kimi's exact words: clients may match them


# --------------------------------------------------------------------------- context (Kimi's order)


@BUILTINS.command("init", "Analyze the codebase and generate an `AGENTS.md` file")
async def _init(core: SlashHost, args: str) -> SlashPrompt:
    from .turn import SlashPrompt

    return SlashPrompt(INIT_PROMPT)


@BUILTINS.command(
    "compact",
    "Compact the context (optionally with a custom focus, e.g. /compact keep db discussions)",
    hint="optional focus for the summary",
)
async def _compact(core: SlashHost, args: str) -> None:
    from ..wire.types import StatusUpdate
    from .compaction import compact, split_point
    from .usage import context_figures

    history = core.context.history
    if not history:
        core.say("The context is empty.")
    elif split_point(history) == 0:
        # Too little to summarise: nothing is lost by keeping it as it is, and no model call is made.
        core.say("The context has been compacted. (It is already short: nothing needed summarising.)")
    else:
        await compact(core, core.require_provider(), focus=args)
        core.say("The context has been compacted.")
    tokens = core.context.token_count or core.context.estimated_tokens
    core.stream.send(StatusUpdate(**context_figures(tokens, core.max_context_size)))


@BUILTINS.command("clear", "Clear the context", aliases=("reset",))
async def _clear(core: SlashHost, args: str) -> None:
    from ..wire.types import StatusUpdate

    try:
        core.context.rotate(core.fresh_system_prompt())
    except OSError as exc:  # e.g. a full disk: the history is kept, on disk and in the session
        core.say(f"The context could not be cleared: {exc.strerror or exc}. The conversation is unchanged.")
        return
    core.say("The context has been cleared.")
    core.stream.send(StatusUpdate(context_usage=0.0, context_tokens=0, max_context_tokens=core.max_context_size))


# --------------------------------------------------------------------------- modes


@BUILTINS.command("yolo", "Toggle YOLO mode (auto-approve all actions)")
async def _yolo(core: SlashHost, args: str) -> None:
    core.controls.set_yolo(not core.approvals.yolo)
    if core.approvals.yolo:
        core.say("YOLO mode is on: every action is approved automatically.")
    elif core.approvals.afk:
        core.say("YOLO mode is off, but afk mode is still on, so actions are still approved automatically. Use /afk to turn it off.")
    else:
        core.say("YOLO mode is off: actions that change things will ask for approval again.")


@BUILTINS.command("afk", "Toggle afk mode (auto-dismiss AskUserQuestion, auto-approve tool calls)")
async def _afk(core: SlashHost, args: str) -> None:
    core.controls.set_afk(not core.approvals.afk)
    if core.approvals.afk:
        core.say("afk mode is on: tool calls are approved automatically and questions (AskUserQuestion) are dismissed.")
    elif core.approvals.yolo:
        core.say("afk mode is off: questions reach you again. YOLO mode is still on, so actions stay auto-approved.")
    else:
        core.say("afk mode is off: questions reach you again and actions that change things ask for approval.")


@BUILTINS.command("plan", "Toggle plan mode. Usage: /plan [on|off|view|clear]", hint="on | off | view | clear")
async def _plan(core: SlashHost, args: str) -> None:
    from .plan_file import read_plan

    arg = args.strip().lower()
    if arg == "view":
        plan = read_plan(core.session)
        core.say(plan if plan and plan.strip() else "No plan file found for this session.")
        return
    if arg == "clear":
        core.controls.clear_plan()
        core.say("Plan cleared.")
        return
    if arg not in ("", "on", "off"):
        core.say("Usage: /plan [on|off|view|clear]")
        return
    on = (not core.plan_mode) if arg == "" else arg == "on"
    core.controls.set_plan_mode(on)
    if on:
        core.say(
            "Plan mode is on: I will investigate and propose a plan without changing files. "
            f"Plan file: {core.controls.plan_file_path()}"
        )
    else:
        core.say("Plan mode is off: I can change files again.")


# --------------------------------------------------------------------------- workspace, export, import


@BUILTINS.command(
    "add-dir",
    "Add a directory to the workspace. Usage: /add-dir <path>. Run without args to list added dirs",
    hint="directory to add (none: list them)",
)
async def _add_dir(core: SlashHost, args: str) -> None:
    from .messages import system_note, user_message
    from .session_controls import SettingError

    raw = strip_quotes(args)
    if not raw:
        core.say(_describe_workspace(core))
        return
    path = Path(os.path.normpath(core.work_dir / Path(raw).expanduser()))
    try:
        listing = await core.controls.add_dir(path)
    except SettingError as exc:
        core.say(str(exc))
        return
    note = (
        f"The user has added a directory to the workspace: `{path}`\n\nIts top level:\n{listing}\n\n"
        "You can now read, write, search and glob files in it as if it were part of the working "
        "directory (use absolute paths)."
    )
    core.context.append([user_message([system_note(note)])])
    core.say(f"Added directory to workspace: {path}")


def _describe_workspace(core: SlashHost) -> str:
    saved = list(core.session.state.additional_dirs)
    runtime = [str(d) for d in core.controls.extra_dirs if str(d) not in saved]
    if not saved and not runtime:
        return "No additional directories. Usage: /add-dir <path>"
    lines = ["Additional directories:"]
    lines += [f"  - {d}" for d in saved]
    lines += [f"  - {d} (given by the client for this session)" for d in runtime]
    return "\n".join(lines)


@BUILTINS.command("export", "Export current session context to a markdown file", hint="optional output file")
async def _export(core: SlashHost, args: str) -> TurnResult:
    from .session_transfer import export_session

    return await export_session(core, strip_quotes(args))


@BUILTINS.command("import", "Import context from a file or session ID", hint="file path or session id")
async def _import(core: SlashHost, args: str) -> TurnResult:
    from .session_transfer import import_into_session

    return await import_into_session(core, strip_quotes(args))


# --------------------------------------------------------------------------- model, thinking, title, sandbox


@BUILTINS.command(
    "model",
    "Switch this session's model. Usage: /model [alias]. Run without args to list the models",
    hint="model alias (none: list them)",
)
async def _model(core: SlashHost, args: str) -> None:
    """`/model` lists the configured models; `/model <alias>` switches to one from the next request."""
    from .session_controls import SettingError

    choice = strip_quotes(args)
    models = core.config.models
    if not choice:
        if not models:
            core.say("No models are configured. Run `kimi login` in a terminal to add one.")
            return
        current = core.controls.current_model()
        lines = ["Models (`/model <alias>` switches this session's model):"]
        lines += [f"- `{name}`: {_model_label(core, name)}" + (" (current)" if name == current else "") for name in models]
        core.say("\n".join(lines))
        return
    try:
        alias = core.controls.set_model(choice)
    except SettingError as exc:
        core.say(str(exc))
        return
    core.say(f"This session now uses `{alias}` ({_model_label(core, alias)}) from the next request.")


def _model_label(core: SlashHost, alias: str) -> str:
    model = core.config.models[alias]
    return model.display_name or model.model or alias


@BUILTINS.command("thinking", "Turn the model's thinking on or off for this session. Usage: /thinking on|off", hint="on | off")
async def _thinking(core: SlashHost, args: str) -> None:
    """`/thinking on|off`: the model's thinking for this session, from the next request."""
    from .session_controls import NO_MODEL, SettingError

    arg = args.strip().lower()
    resolved = core.controls.resolved_model()
    if resolved is None:
        core.say(NO_MODEL)
        return
    if arg not in ("", "on", "off"):
        core.say("Usage: `/thinking on|off`")
        return
    if not arg:
        state = "on" if core.controls.thinking_on() else "off"
        core.say(f"Thinking is {state} for `{resolved.alias}`. Usage: `/thinking on|off`")
        return
    try:
        core.controls.set_thinking(arg == "on")
    except SettingError as exc:
        core.say(str(exc))
        return
    core.say(f"Thinking is {arg} for `{resolved.alias}` from the next request.")


@BUILTINS.command("rename", "Give this session a title. Usage: /rename <title>", hint="new title")
async def _rename(core: SlashHost, args: str) -> None:
    """`/rename <title>`: the session's title, as the IDE's history shows it; never replaced later."""
    from .session_controls import SettingError

    try:
        title = core.controls.rename(strip_quotes(args))
    except SettingError:  # nothing left of it
        core.say("Usage: `/rename <title>`")
        return
    core.say(f"Session renamed to: {title}")


@BUILTINS.command(
    "sandbox",
    "Run Shell commands in an OS sandbox, or not. Usage: /sandbox [off|workspace-write|read-only]. Run without args to see the mode",
    hint="off | workspace-write | read-only",
)
async def _sandbox(core: SlashHost, args: str) -> None:
    """`/sandbox` says the mode in force; `/sandbox <mode>` sets this session's (persisted)."""
    import asyncio

    from ..sandbox import MODES
    from ..sandbox.session import mode_text
    from .session_controls import SettingError

    arg = args.strip().lower()
    sandbox = core.controls.sandbox
    usage = "Usage: `/sandbox off|workspace-write|read-only`"
    if not arg:
        modes = ", ".join(f"`{m}` ({mode_text(m)})" for m in MODES)
        core.say(f"Sandbox: {sandbox.describe()}.\n\nModes: {modes}. {usage}")
        return
    try:
        core.controls.set_sandbox(arg)
    except SettingError as exc:
        core.say(f"{exc} {usage}")
        return
    if arg == "off":
        core.say("Sandbox off: each command asks for approval again.")
        return
    await asyncio.to_thread(sandbox.detect)  # found once per process, off the event loop
    reason = sandbox.unavailable_reason()
    if reason is not None:
        sandbox.mark_told()
        core.say(f"The {arg} sandbox cannot be used here: {reason}. Commands and edits ask for approval as before.")
    else:
        core.say(f"Sandbox: {sandbox.describe()}; {mode_text(arg)}.")


# --------------------------------------------------------------------------- undo, help


@BUILTINS.command(
    "undo",
    "Take back the last turn (or N): restore the files it changed and remove it from the conversation. "
    "Usage: /undo [N] [--force] [--dry-run]",
    hint="N turns (default 1), --force, --dry-run",
)
async def _undo(core: SlashHost, args: str) -> TurnResult:
    from .undo import undo_command

    return await undo_command(core, args)


@BUILTINS.command("help", "List the slash commands and skills you can use")
async def _help(core: SlashHost, args: str) -> None:
    core.say(help_text(core.slash.commands(), core.slash.notes()))


BUILTIN_COMMANDS: tuple[SlashCommand, ...] = BUILTINS.commands()
COMMANDS = BUILTIN_COMMANDS  # the name older callers import


def find_command(name: str) -> SlashCommand | None:
    """A built-in command by name or alias."""
    for builtin in BUILTIN_COMMANDS:
        if name == builtin.name or name in builtin.aliases:
            return builtin
    return None


def help_text(commands: Sequence[SlashCommand], notes: Sequence[str] = ()) -> str:
    builtin = [c for c in commands if c in BUILTIN_COMMANDS]
    extra = [c for c in commands if c not in BUILTIN_COMMANDS]
    lines = ["Slash commands:"]
    lines += [_help_line(c) for c in builtin]
    if extra:
        lines += ["", "Skills and flows:"]
        lines += [_help_line(c) for c in extra]
    if notes:
        lines += ["", "Not loaded:"]
        lines += [f"- {note}" for note in notes]
    return "\n".join(lines)


def _help_line(command: SlashCommand) -> str:
    aliases = f" (also {', '.join(f'`/{a}`' for a in command.aliases)})" if command.aliases else ""
    return f"- `/{command.name}`{aliases}: {code_spans(command.description)}"


@functools.cache
def _code_patterns() -> tuple[re.Pattern[str], ...]:
    """A command with its arguments (`/add-dir <path>`, `/plan [on|off]`, `/thinking on|off`), and a
    bare `<placeholder>`; compiled at the first use, not at import (the early answer)."""
    command_use = re.compile(r"(?<![\w/`])/[a-z][\w:-]*(?: (?:<[^<>`]*>|\[[^\]`]*\]|\w+(?:\|\w+)+))+")
    return command_use, re.compile(r"<[^<>`]*>")


def code_spans(text: str) -> str:
    """Commands and placeholders put in backticks, so clients that render Markdown keep `<path>`
    (as HTML it would vanish); text already in backticks is left as it is."""
    for pattern in _code_patterns():
        pieces = text.split("`")
        pieces[::2] = [pattern.sub(lambda m: f"`{m.group(0)}`", piece) for piece in pieces[::2]]
        text = "`".join(pieces)
    return text
