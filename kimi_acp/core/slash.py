"""Slash commands: what a command is, parsing, and the one registry every list of commands is read from.

Wire `initialize.slash_commands`, ACP `available_commands_update` and `/help` all read a session's
`SlashRegistry`, so they list exactly the commands that run. A command is declared where it is
implemented, by one decorator (`CommandTable.command`): the built-ins in `slash_commands.py`;
feature modules (skills, flows) add theirs through a `CommandProvider` that a front end plugs in —
the core never imports them.

Standard library only: the early Wire `initialize` answer reads the built-in list before anything
heavy is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from .prompt import SkillSummary

# `/name` or `/name:sub` followed by whitespace or the end: `/usr/bin` is a path, not a command.
_SLASH_RE = re.compile(r"^/([A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*)(?=\s|$)")
COMMAND_NAME_RE = re.compile(r"[A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*")

# A command's handler: `await handler(host, args)` with the session's agent (a
# `slash_host.SlashHost`) and the text after the name. The command is the whole turn (it returns
# None, finished, or its `TurnResult`), or the turn goes on as a normal prompt with the user
# message of the `SlashPrompt` it returns.
Handler = Callable[[Any, str], Awaitable[Any]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    aliases: tuple[str, ...] = field(default_factory=tuple)
    hint: str | None = None  # shown by ACP clients as the input placeholder
    handler: Handler | None = field(default=None, compare=False)


class CommandTable:
    """Commands declared on their handlers, in the order they are declared:

        @table.command("clear", "Clear the context", aliases=("reset",))
        async def _clear(core, args): ...

    so a command cannot be listed without running, nor run without being listed."""

    def __init__(self) -> None:
        self._commands: list[SlashCommand] = []

    def command(self, name: str, description: str, *, aliases: tuple[str, ...] = (), hint: str | None = None) -> Callable[[H], H]:
        def declare(handler: H) -> H:
            if any(name == c.name or name in c.aliases for c in self._commands):
                raise ValueError(f"slash command /{name} is declared twice")
            self._commands.append(SlashCommand(name, description, aliases, hint, handler))
            return handler

        return declare

    def commands(self) -> tuple[SlashCommand, ...]:
        return tuple(self._commands)


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
    """The commands of one session: the built-ins first (`slash_commands.BUILTIN_COMMANDS`), then
    each provider's, names unique."""

    def __init__(self, builtins: Sequence[SlashCommand]) -> None:
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


def strip_quotes(text: str) -> str:
    """A command's argument without the quotes around it (`/rename "My title"`)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return text
