"""What each slash command does. The list of commands is the session's `SlashRegistry` (`slash.py`).

Every command runs inside a turn (after its TurnBegin) and ends it with a `TurnResult`, or expands
into a prompt (`SlashPrompt`: /init, /skill:<name>) that the turn then sends to the model. Commands
work on the `SlashHost` protocol, not on `AgentCore`, so they can be read and tested apart.
"""

from __future__ import annotations

import asyncio
import datetime
import errno
import os
import re
import stat
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .. import sessions
from ..config import ConfigError, ResolvedModel, resolve_model
from ..errors import PermissionDenied
from ..llm.types import ChatProvider
from ..sandbox.policy import MODES
from ..sandbox.session import SessionSandbox, mode_text
from ..sessions import Session
from ..tools.base import ToolContext, ToolRejectedError
from ..util.fs import atomic_write_text
from ..util.regular_file import open_regular, special_kind
from ..wire.types import StatusUpdate, UserInput
from .approvals import Approvals
from .compaction import CompactionHost, compact, split_point
from .context import Context
from .messages import estimate_tokens, system_note, user_message
from .plan_file import clear_plan, plan_file_path, read_plan
from .slash import SlashCommand, SlashRegistry
from .titles import user_title
from .transcript import (
    MAX_IMPORT_BYTES,
    default_export_name,
    export_markdown,
    history_transcript,
    import_message,
    is_importable,
)
from .turn import TurnResult
from .undo import undo_command
from .usage import context_figures

DIR_LISTING_MAX = 50


@dataclass(frozen=True)
class SlashPrompt:
    """The command expands into a prompt: the turn goes on with this user message for the model."""

    user_input: UserInput


@dataclass(frozen=True)
class NestedTurn:
    """What `SlashHost.run_nested_turn` reports: how it ended and the model's last reply."""

    result: TurnResult
    final_text: str
    rejected: bool = False  # it ended on a tool call the user refused (a flow stops there)


class SlashHost(CompactionHost, Protocol):
    """What the commands use: the session's agent (AgentCore implements it)."""

    approvals: Approvals
    session: Session
    slash: SlashRegistry
    extra_dirs: list[Path]  # workspace dirs of this process only (ACP additionalDirectories, --add-dir)
    model_alias: str | None  # the session's own model choice (None: the config's default)
    thinking: bool | None  # the session's own thinking choice (None: the config's default)
    sandbox: SessionSandbox  # where Shell commands run (kimi_acp/sandbox)

    @property
    def plan_mode(self) -> bool: ...

    @property
    def max_context_size(self) -> int | None: ...

    @property
    def max_steps(self) -> int: ...

    def say(self, text: str) -> None: ...

    def set_yolo(self, on: bool, *, announce: bool = True) -> None: ...

    def set_afk(self, on: bool) -> None: ...

    def set_plan_mode(self, on: bool, *, announce: bool = True) -> None: ...

    def require_provider(self) -> ChatProvider: ...

    def resolved_model(self) -> ResolvedModel | None: ...

    async def set_model(self, alias: str, thinking: bool | None, *, announce: bool = False) -> None: ...

    async def set_thinking(self, on: bool | None, *, announce: bool = False) -> None: ...

    def rename(self, title: str) -> None: ...

    def set_sandbox(self, mode: str, *, announce: bool = False) -> None: ...

    def fresh_system_prompt(self) -> str: ...

    def workspace_dirs(self) -> list[Path]: ...

    def command_context(self, command: str) -> ToolContext:
        """What the command asks through: the tools' path checks, the card named after it."""
        ...

    async def run_nested_turn(self, user_input: UserInput) -> NestedTurn:
        """A turn inside this one (a flow node): TurnBegin, the model's steps, TurnEnd."""
        ...


INIT_PROMPT = """\
Analyze this codebase and write (or update) an `AGENTS.md` file at the root of the working directory.
It is read by coding agents before they work here, so make it short and useful: what the project is,
how it is laid out, how to build, run and test it (exact commands), the code style and conventions it
follows, and anything surprising a newcomer must know. Explore first (read the README, build files and
a few representative sources), then write the file with WriteFile."""
DONE = TurnResult("finished")


async def run_slash_command(core: SlashHost, name: str, args: str) -> TurnResult | SlashPrompt:
    """Run `/name args`: the turn's result, or the prompt the command expands into."""
    command = core.slash.find(name)
    if command is None:
        core.say(_unknown(core, name))
        return DONE
    if command.handler is not None:
        outcome: TurnResult | SlashPrompt = await command.handler(core, args)
        return outcome
    builtin = _BUILTINS.get(command.name)
    if builtin is None:  # declared without an implementation: never advertise what does not run
        core.say(_unknown(core, name))
        return DONE
    return await builtin(core, args)


def _unknown(core: SlashHost, name: str) -> str:
    text = f'Unknown slash command "/{name}".'
    for provider in core.slash.providers:
        explanation = provider.explain(name)
        if explanation:
            return f"{text} {explanation}"
    return text  # Kimi's exact words: clients may match them


# --------------------------------------------------------------------------- context


async def _init(core: SlashHost, args: str) -> TurnResult | SlashPrompt:
    return SlashPrompt(INIT_PROMPT)


async def _clear(core: SlashHost, args: str) -> TurnResult:
    try:
        core.context.rotate(core.fresh_system_prompt())
    except OSError as exc:  # e.g. a full disk: the history is kept, on disk and in the session
        core.say(f"The context could not be cleared: {exc.strerror or exc}. The conversation is unchanged.")
        return DONE
    core.say("The context has been cleared.")
    core.stream.send(StatusUpdate(context_usage=0.0, context_tokens=0, max_context_tokens=core.max_context_size))
    return DONE


async def _compact(core: SlashHost, args: str) -> TurnResult:
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
    return DONE


# --------------------------------------------------------------------------- modes


async def _yolo(core: SlashHost, args: str) -> TurnResult:
    core.set_yolo(not core.approvals.yolo)
    if core.approvals.yolo:
        core.say("YOLO mode is on: every action is approved automatically.")
    elif core.approvals.afk:
        core.say("YOLO mode is off, but afk mode is still on, so actions are still approved automatically. Use /afk to turn it off.")
    else:
        core.say("YOLO mode is off: actions that change things will ask for approval again.")
    return DONE


async def _afk(core: SlashHost, args: str) -> TurnResult:
    core.set_afk(not core.approvals.afk)
    if core.approvals.afk:
        core.say("afk mode is on: tool calls are approved automatically and questions (AskUserQuestion) are dismissed.")
    elif core.approvals.yolo:
        core.say("afk mode is off: questions reach you again. YOLO mode is still on, so actions stay auto-approved.")
    else:
        core.say("afk mode is off: questions reach you again and actions that change things ask for approval.")
    return DONE


async def _plan(core: SlashHost, args: str) -> TurnResult:
    arg = args.strip().lower()
    if arg == "view":
        plan = read_plan(core.session)
        core.say(plan if plan and plan.strip() else "No plan file found for this session.")
        return DONE
    if arg == "clear":
        clear_plan(core.session)
        core.say("Plan cleared.")
        return DONE
    if arg not in ("", "on", "off"):
        core.say("Usage: /plan [on|off|view|clear]")
        return DONE
    on = (not core.plan_mode) if arg == "" else arg == "on"
    core.set_plan_mode(on)
    if on:
        core.say(
            "Plan mode is on: I will investigate and propose a plan without changing files. "
            f"Plan file: {plan_file_path(core.session)}"
        )
    else:
        core.say("Plan mode is off: I can change files again.")
    return DONE


# --------------------------------------------------------------------------- model, thinking, title


async def _model(core: SlashHost, args: str) -> TurnResult:
    """`/model` lists the configured models; `/model <alias>` switches to one from the next request."""
    alias = _strip_quotes(args)
    models = core.config.models
    current = core.model_alias or core.config.default_model
    if not alias:
        if not models:
            core.say("No models are configured. Run `kimi login` in a terminal to add one.")
            return DONE
        lines = ["Models (`/model <alias>` switches this session's model):"]
        lines += [f"- `{name}`: {_model_label(core, name)}" + (" (current)" if name == current else "") for name in models]
        core.say("\n".join(lines))
        return DONE
    if alias not in models:
        names = ", ".join(f"`{n}`" for n in models) or "none"
        core.say(f"Unknown model `{alias}`. Configured models: {names}.")
        return DONE
    try:
        if not resolve_model(core.config, alias).usable:
            core.say(f"Model `{alias}` cannot be used: its provider needs a base_url and the model a name.")
            return DONE
        await core.set_model(alias, core.thinking, announce=True)
    except ConfigError as exc:
        core.say(f"Cannot switch to `{alias}`: {exc}")
        return DONE
    core.say(f"This session now uses `{alias}` ({_model_label(core, alias)}) from the next request.")
    return DONE


def _model_label(core: SlashHost, alias: str) -> str:
    model = core.config.models[alias]
    return model.display_name or model.model or alias


async def _thinking(core: SlashHost, args: str) -> TurnResult:
    """`/thinking on|off`: the model's thinking for this session, from the next request."""
    arg = args.strip().lower()
    resolved = core.resolved_model()
    if resolved is None:
        core.say("No model is configured. Run `kimi login` in a terminal to add one.")
        return DONE
    wanted = core.thinking if core.thinking is not None else core.config.default_thinking
    on = resolved.always_thinking or (bool(wanted) and resolved.supports_thinking)
    if arg not in ("", "on", "off"):
        core.say("Usage: `/thinking on|off`")
        return DONE
    if not arg:
        core.say(f"Thinking is {'on' if on else 'off'} for `{resolved.alias}`. Usage: `/thinking on|off`")
    elif not resolved.supports_thinking:
        core.say(f"`{resolved.alias}` has no thinking mode (its capabilities have no `thinking`).")
    elif resolved.always_thinking and arg == "off":
        core.say(f"`{resolved.alias}` always thinks: its thinking cannot be turned off.")
    else:
        await core.set_thinking(arg == "on", announce=True)
        core.say(f"Thinking is {arg} for `{resolved.alias}` from the next request.")
    return DONE


async def _sandbox(core: SlashHost, args: str) -> TurnResult:
    """`/sandbox` says the mode in force; `/sandbox <mode>` sets this session's (persisted)."""
    arg = args.strip().lower()
    sandbox = core.sandbox
    usage = f"Modes: {', '.join(f'`{m}` ({mode_text(m)})' for m in MODES)}. Usage: `/sandbox off|workspace-write|read-only`"
    if not arg:
        core.say(f"Sandbox: {sandbox.describe()}.\n\n{usage}")
        return DONE
    if arg not in MODES:
        core.say(f"Unknown sandbox mode `{arg}`. {usage}")
        return DONE
    core.set_sandbox(arg, announce=True)
    if arg == "off":
        core.say("Sandbox off: each command asks for approval again.")
        return DONE
    await asyncio.to_thread(sandbox.detect)  # found once per process, off the event loop
    reason = sandbox.unavailable_reason()
    if reason is not None:
        sandbox.mark_told()
        core.say(f"The {arg} sandbox cannot be used here: {reason}. Commands and edits ask for approval as before.")
    else:
        core.say(f"Sandbox: {sandbox.describe()}; {mode_text(arg)}.")
    return DONE


async def _rename(core: SlashHost, args: str) -> TurnResult:
    """`/rename <title>`: the session's title, as the IDE's history shows it; never replaced later."""
    title = user_title(_strip_quotes(args))
    if not title:
        core.say("Usage: `/rename <title>`")
        return DONE
    core.rename(title)
    core.say(f"Session renamed to: {title}")
    return DONE


# --------------------------------------------------------------------------- workspace


async def _add_dir(core: SlashHost, args: str) -> TurnResult:
    raw = _strip_quotes(args)
    if not raw:
        core.say(_describe_workspace(core))
        return DONE
    path = Path(os.path.normpath(core.work_dir / Path(raw).expanduser()))
    if not path.exists():
        core.say(f"Directory does not exist: {path}")
        return DONE
    if not path.is_dir():
        core.say(f"Not a directory: {path}")
        return DONE
    real = Path(os.path.realpath(path))
    if _within(real, core.work_dir):
        core.say(f"Directory is already within the working directory: {path}")
        return DONE
    for existing in core.workspace_dirs():
        if _within(real, existing):
            what = "in the workspace" if real == Path(os.path.realpath(existing)) else f"within an added directory `{existing}`"
            core.say(f"Directory is already {what}: {path}")
            return DONE
    try:
        listing = await asyncio.to_thread(_list_dir, path)
    except OSError as exc:
        core.say(f"Cannot read directory: {path} ({exc.strerror or exc})")
        return DONE
    core.session.state.additional_dirs.append(str(path))
    core.session.save_state()
    core.context.append(
        [
            user_message(
                [
                    system_note(
                        f"The user has added a directory to the workspace: `{path}`\n\nIts top level:\n{listing}\n\n"
                        "You can now read, write, search and glob files in it as if it were part of the working "
                        "directory (use absolute paths)."
                    )
                ]
            )
        ]
    )
    core.say(f"Added directory to workspace: {path}")
    return DONE


def _describe_workspace(core: SlashHost) -> str:
    saved = list(core.session.state.additional_dirs)
    runtime = [str(d) for d in core.extra_dirs if str(d) not in saved]
    if not saved and not runtime:
        return "No additional directories. Usage: /add-dir <path>"
    lines = ["Additional directories:"]
    lines += [f"  - {d}" for d in saved]
    lines += [f"  - {d} (given by the client for this session)" for d in runtime]
    return "\n".join(lines)


def _list_dir(path: Path) -> str:
    names = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(path) if e.name != ".git")
    more = len(names) - DIR_LISTING_MAX
    text = "\n".join(f"- {n}" for n in names[:DIR_LISTING_MAX]) or "(empty)"
    return text + (f"\n- ... and {more} more" if more > 0 else "")


def _within(real: Path, root: Path) -> bool:
    root_real = Path(os.path.realpath(root))
    return real == root_real or root_real in real.parents


def _strip_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return text


# --------------------------------------------------------------------------- export / import


async def _export(core: SlashHost, args: str) -> TurnResult:
    """`/export [path]`: the transcript as Markdown, asked about as WriteFile's edit of that path
    would be (a protected path always asks); written atomically, 0600: it may hold secrets."""
    from ..tools.permits import permit_edit  # with the first /export, not at start-up

    history = core.context.history
    if not history:
        core.say("No messages to export.")
        return DONE
    now = datetime.datetime.now().astimezone()
    name = default_export_name(core.session.id, now)
    raw = _strip_quotes(args)
    output = _typed_path(core, raw) if raw else core.work_dir / name
    if output.is_dir():
        output = output / name
    description = f"Export this session ({len(history)} messages) to `{output}`"
    refused = await _refusal(permit_edit(core.command_context("/export"), output, description, []))
    if refused is not None:
        core.say(f"Not exported: {refused}")
        return DONE
    text = export_markdown(
        session_id=core.session.id, work_dir=core.work_dir, history=history, token_count=core.context.token_count, now=now
    )
    try:
        await asyncio.to_thread(atomic_write_text, output, text)
    except OSError as exc:
        core.say(f"Failed to write the export file {output}: {exc.strerror or exc}")
        return DONE
    core.say(
        f"Exported {len(history)} messages to {output}\n"
        "Note: the exported file may contain sensitive information; be careful when sharing it."
    )
    return DONE


async def _import(core: SlashHost, args: str) -> TurnResult:
    """`/import <file or session id>`: a file is asked about as ReadFile's read of it would be (a
    file holding credentials always asks); only a regular file is read."""
    target = _strip_quotes(args)
    if not target:
        core.say("Usage: /import <file path or session id>")
        return DONE
    path = _typed_path(core, target)
    try:
        st = await asyncio.to_thread(_stat, path)
    except OSError as exc:
        core.say(f"Failed to read {path}: {exc.strerror or exc}")
        return DONE
    if st is None:  # no such file: perhaps a session id
        found = await asyncio.to_thread(_session_import, core, target)
    else:
        found = _file_problem(path, st) or await _import_file(core, path)
    if isinstance(found, str):
        core.say(found)
        return DONE
    content, source, warning = found
    message = import_message(content, source)
    max_size = core.max_context_size
    if max_size and core.context.estimated_tokens + estimate_tokens([message]) >= max_size:
        core.say(f"Cannot import {source}: it would not fit in the model's context ({max_size:,} tokens).")
        return DONE
    core.context.append([message])
    core.say(f"Imported context from {source} ({len(content):,} chars)." + (f"\n{warning}" if warning else ""))
    return DONE


def _typed_path(core: SlashHost, typed: str) -> Path:
    """The path a command's argument names: `~` expanded, relative to the work dir, normalized."""
    return Path(os.path.normpath(core.work_dir / Path(typed).expanduser()))


async def _refusal(asking: Awaitable[None]) -> str | None:
    """Why the approval (a tools/permits.py check) did not let the command go on; None when it did."""
    try:
        await asking
    except ToolRejectedError as exc:
        return f"you declined it{f' ({exc.feedback})' if exc.feedback else ''}."
    except PermissionDenied as exc:
        return str(exc)
    return None


def _stat(path: Path) -> os.stat_result | None:
    """What is at `path` (symlinks followed), None when nothing is; other OSErrors are raised."""
    try:
        return path.stat()
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            return None
        raise


def _file_problem(path: Path, st: os.stat_result) -> str | None:
    """Why the file at `path` cannot be imported, None when it can be (once approved)."""
    if stat.S_ISDIR(st.st_mode):
        return "The path is a directory; give a file to import."
    kind = special_kind(st.st_mode)
    if kind is not None:
        return f"Cannot import {path}: it is {kind}, not a regular file."
    if not is_importable(path):
        return f"Unsupported file type '{path.suffix}': /import takes text files (.md, .txt, .json, .py, .log, ...)."
    if st.st_size > MAX_IMPORT_BYTES:
        return f"The file is too large: at most {MAX_IMPORT_BYTES // (1024 * 1024)} MB can be imported."
    return None


async def _import_file(core: SlashHost, path: Path) -> tuple[str, str, str] | str:
    """The file's content once the user let it be read (asked as ReadFile asks), or why not."""
    from ..tools.permits import permit_read  # with the first /import, not at start-up

    refused = await _refusal(permit_read(core.command_context("/import"), path, what="Import"))
    if refused is not None:
        return f"Not imported: {refused}"
    return await asyncio.to_thread(_read_import, path)


def _read_import(path: Path) -> tuple[str, str, str] | str:
    """(content, source description, warning) of an approved file, or why it cannot be imported."""
    try:
        with open_regular(path) as file:  # a FIFO or a device swapped in since the look is refused
            data = file.read(MAX_IMPORT_BYTES + 1)
    except OSError as exc:
        return f"Cannot import {path}: {exc.strerror or exc}."
    if len(data) > MAX_IMPORT_BYTES:
        return f"The file is too large: at most {MAX_IMPORT_BYTES // (1024 * 1024)} MB can be imported."
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"Cannot import '{path.name}': it is not UTF-8 text."
    if not content.strip():
        return "The file is empty: nothing to import."
    from ..permissions.sensitive import sensitive_reason

    warning = (
        "Warning: this file may hold secrets (API keys, tokens, credentials); they are now part of the session context."
        if sensitive_reason(path) is not None
        else ""
    )
    return content, f"file '{path.name}'", warning


def _session_import(core: SlashHost, target: str) -> tuple[str, str, str] | str:
    """(transcript, source description, "") of another session of the user's, or why not."""
    if target == core.session.id:
        return "Cannot import the current session into itself."
    source = sessions.find(core.work_dir, target) or sessions.find_by_id(target)
    if source is None:
        return f"'{target}' is neither a file nor a session id."
    history = Context.load(source.context_file).history
    if not history:
        return "That session has no messages."
    content = history_transcript(history)
    if len(content.encode("utf-8")) > MAX_IMPORT_BYTES:
        return f"That session is too large to import (over {MAX_IMPORT_BYTES // (1024 * 1024)} MB of text)."
    return content, f"session '{target}'", ""


# --------------------------------------------------------------------------- help


async def _help(core: SlashHost, args: str) -> TurnResult:
    core.say(help_text(core.slash.commands(), core.slash.notes()))
    return DONE


def help_text(commands: Sequence[SlashCommand], notes: Sequence[str] = ()) -> str:
    builtin = [c for c in commands if c.handler is None]
    extra = [c for c in commands if c.handler is not None]
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


# A command with its arguments (`/add-dir <path>`, `/plan [on|off]`, `/thinking on|off`), and a bare `<placeholder>`.
_COMMAND_USE = re.compile(r"(?<![\w/`])/[a-z][\w:-]*(?: (?:<[^<>`]*>|\[[^\]`]*\]|\w+(?:\|\w+)+))+")
_PLACEHOLDER = re.compile(r"<[^<>`]*>")


def code_spans(text: str) -> str:
    """Commands and placeholders put in backticks, so clients that render Markdown keep `<path>`
    (as HTML it would vanish); text already in backticks is left as it is."""
    for pattern in (_COMMAND_USE, _PLACEHOLDER):
        pieces = text.split("`")
        pieces[::2] = [pattern.sub(lambda m: f"`{m.group(0)}`", piece) for piece in pieces[::2]]
        text = "`".join(pieces)
    return text


_BUILTINS: dict[str, Any] = {
    "init": _init,
    "compact": _compact,
    "clear": _clear,
    "yolo": _yolo,
    "afk": _afk,
    "plan": _plan,
    "add-dir": _add_dir,
    "export": _export,
    "import": _import,
    "model": _model,
    "thinking": _thinking,
    "rename": _rename,
    "sandbox": _sandbox,
    "undo": undo_command,  # core/undo.py
    "help": _help,
}
