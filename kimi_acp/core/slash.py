"""Slash commands: parsing, and the one registry that every list of commands is read from.

Wire `initialize.slash_commands`, ACP `available_commands_update` and `/help` all read a session's
`SlashRegistry`, so they list exactly the commands that run. The built-in commands are declared here
(what they do is in `slash_commands.py`); feature modules (skills, flows) add theirs through a
`CommandProvider` that a front end plugs in — the core never imports them.

Standard library only: the early Wire `initialize` answer reads the built-in list before anything
heavy is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .prompt import SkillSummary

# `/name` or `/name:sub` followed by whitespace or the end: `/usr/bin` is a path, not a command.
_SLASH_RE = re.compile(r"^/([A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*)(?=\s|$)")
COMMAND_NAME_RE = re.compile(r"[A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*")

# A provider command's handler: `await handler(host, args)` with the session's agent (a
# `slash_commands.SlashHost`) and the text after the name. It returns what `run_slash_command`
# returns: a `TurnResult` (the command is the whole turn) or a `SlashPrompt` (the turn goes on as a
# normal prompt with that user message).
Handler = Callable[[Any, str], Awaitable[Any]]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    aliases: tuple[str, ...] = field(default_factory=tuple)
    hint: str | None = None  # shown by ACP clients as the input placeholder
    handler: Handler | None = field(default=None, compare=False)  # None: a built-in (slash_commands.py)


BUILTIN_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("init", "Analyze the codebase and generate an `AGENTS.md` file"),
    SlashCommand(
        "compact",
        "Compact the context (optionally with a custom focus, e.g. /compact keep db discussions)",
        hint="optional focus for the summary",
    ),
    SlashCommand("clear", "Clear the context", aliases=("reset",)),
    SlashCommand("yolo", "Toggle YOLO mode (auto-approve all actions)"),
    SlashCommand("afk", "Toggle afk mode (auto-dismiss AskUserQuestion, auto-approve tool calls)"),
    SlashCommand("plan", "Toggle plan mode. Usage: /plan [on|off|view|clear]", hint="on | off | view | clear"),
    SlashCommand(
        "add-dir",
        "Add a directory to the workspace. Usage: /add-dir <path>. Run without args to list added dirs",
        hint="directory to add (none: list them)",
    ),
    SlashCommand("export", "Export current session context to a markdown file", hint="optional output file"),
    SlashCommand("import", "Import context from a file or session ID", hint="file path or session id"),
    SlashCommand(
        "model",
        "Switch this session's model. Usage: /model [alias]. Run without args to list the models",
        hint="model alias (none: list them)",
    ),
    SlashCommand("thinking", "Turn the model's thinking on or off for this session. Usage: /thinking on|off", hint="on | off"),
    SlashCommand("rename", "Give this session a title. Usage: /rename <title>", hint="new title"),
    SlashCommand(
        "sandbox",
        "Run Shell commands in an OS sandbox, or not. Usage: /sandbox [off|workspace-write|read-only]. Run without args to see the mode",
        hint="off | workspace-write | read-only",
    ),
    SlashCommand(
        "undo",
        "Take back the last turn (or N): restore the files it changed and remove it from the conversation. "
        "Usage: /undo [N] [--force] [--dry-run]",
        hint="N turns (default 1), --force, --dry-run",
    ),
        SlashCommand("help", "List the slash commands and skills you can use"),
)
COMMANDS = BUILTIN_COMMANDS  # the name older callers import


class CommandProvider(Protocol):
    """A feature module's commands for one session (skills, flows), kept up to date by `refresh`."""

    def slash_commands(self) -> Sequence[SlashCommand]:
        """The provider's commands now (each with a `handler`)."""
        ...

    def skills(self) -> Sequence[SkillSummary]:
        """What the model is told about in its system prompt (may be empty)."""
        ...

    def refresh(self) -> bool:
        """Look at the sources again (cheaply); True when `slash_commands()` or `skills()` changed."""
        ...

    def notes(self) -> Sequence[str]:
        """Problems the user should see in `/help` (e.g. skill files that could not be read)."""
        ...

    def explain(self, name: str) -> str | None:
        """Why `/name` is not a command although it looks like one of the provider's (or None)."""
        ...


class SlashRegistry:
    """The commands of one session: the built-ins first, then each provider's, names unique."""

    def __init__(self, builtins: Sequence[SlashCommand] = BUILTIN_COMMANDS) -> None:
        self._builtins = tuple(builtins)
        self._providers: list[CommandProvider] = []

    def add_provider(self, provider: CommandProvider) -> None:
        self._providers.append(provider)

    @property
    def providers(self) -> tuple[CommandProvider, ...]:
        return tuple(self._providers)

    def commands(self) -> list[SlashCommand]:
        """Every command, in display order; a provider command whose name is taken is left out."""
        found = list(self._builtins)
        taken = {n for c in found for n in (c.name, *c.aliases)}
        for provider in self._providers:
            for command in provider.slash_commands():
                if command.name in taken:
                    _log().warning("slash command /%s skipped: the name is already taken", command.name)
                    continue
                taken.add(command.name)
                found.append(command)
        return found

    def find(self, name: str) -> SlashCommand | None:
        for command in self.commands():
            if name == command.name or name in command.aliases:
                return command
        return None

    def skills(self) -> list[SkillSummary]:
        return [s for p in self._providers for s in p.skills()]

    def notes(self) -> list[str]:
        return [n for p in self._providers for n in p.notes()]

    def refresh(self) -> bool:
        """Refresh every provider; True when any of them changed."""
        changed = False
        for provider in self._providers:
            try:
                changed = provider.refresh() or changed
            except Exception:
                _log().exception("refreshing %s failed", type(provider).__name__)
        return changed


def _log() -> Any:
    import logging  # not at import time: the early `initialize` answer imports this module

    return logging.getLogger(__name__)


def wire_entries(commands: Sequence[SlashCommand]) -> list[dict[str, Any]]:
    """`initialize.slash_commands` of the Wire protocol."""
    return [{"name": c.name, "description": c.description, "aliases": list(c.aliases)} for c in commands]


def acp_entries(commands: Sequence[SlashCommand]) -> list[dict[str, Any]]:
    """`availableCommands` of an ACP `available_commands_update`."""
    entries = []
    for command in commands:
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if command.hint:
            entry["input"] = {"hint": command.hint}
        entries.append(entry)
    return entries


def parse_slash(text: str) -> tuple[str, str] | None:
    """(command name, argument text) when the input is a slash command, else None."""
    match = _SLASH_RE.match(text)
    if not match:
        return None
    return match.group(1), text[match.end():].strip()


def find_command(name: str) -> SlashCommand | None:
    """A built-in command by name or alias."""
    for command in BUILTIN_COMMANDS:
        if name == command.name or name in command.aliases:
            return command
    return None
