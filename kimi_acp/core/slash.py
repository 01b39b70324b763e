"""Slash commands a Wire or ACP client can type: parsing and the list clients show."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# `/name` or `/name:sub` followed by whitespace or the end: `/usr/bin` is a path, not a command.
_SLASH_RE = re.compile(r"^/([A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*)(?=\s|$)")


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    aliases: tuple[str, ...] = field(default_factory=tuple)
    hint: str | None = None  # shown by ACP clients as the input placeholder


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("init", "Analyze the codebase and generate an `AGENTS.md` file"),
    SlashCommand(
        "compact",
        "Compact the context (optionally with a custom focus, e.g. /compact keep db discussions)",
        hint="optional focus for the summary",
    ),
    SlashCommand("clear", "Clear the context", aliases=("reset",)),
    SlashCommand("yolo", "Toggle YOLO mode (auto-approve all actions)"),
    SlashCommand("plan", "Toggle plan mode. Usage: /plan [on|off]", hint="on | off"),
)


def parse_slash(text: str) -> tuple[str, str] | None:
    """(command name, argument text) when the input is a slash command, else None."""
    match = _SLASH_RE.match(text)
    if not match:
        return None
    return match.group(1), text[match.end():].strip()


def find_command(name: str) -> SlashCommand | None:
    for command in COMMANDS:
        if name == command.name or name in command.aliases:
            return command
    return None
