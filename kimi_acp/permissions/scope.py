"""What "approve for this session" covers: exactly what the card showed, nothing more.

- a command line: each of its simple commands by its form when it is one of the read-only table
  (`cat …`, `git log …`), else exactly (`make test`, `rm -rf build`); a command that runs whatever
  its arguments say (`bash -c`, `sudo`, `uv run`) not at all (command_keys.py); a later line is
  covered when it is a plain line (shell_parse.py) and every one of its commands is;
- a directory (edits or reads outside the workspace): the directory of the file on the card and
  what is below it, never a sibling; a file directly in the home directory or `/` covers only
  itself (approving `~/notes.txt` must not approve `~/.bashrc`'s siblings);
- a host (FetchURL, SearchWeb): that host and port;
- a whole action (in-workspace edits, one MCP or plugin tool, stopping tasks).

A scope is remembered in `state.json` (`approval.auto_approve_actions`, Kimi Code CLI's list) as
`"<action>:<value>"`; the bare actions earlier versions stored for commands and outside edits
("run command") cover nothing any more, so such a session asks again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .paths import relative_within, typed_and_real

if TYPE_CHECKING:
    from .shell_parse import ParsedLine

Kind = Literal["command", "directory", "file", "host", "action"]


@dataclass(frozen=True)
class Scope:
    """What one approval is about (`subject`), and what approving it for the session would cover."""

    action: str
    kind: Kind
    values: tuple[str, ...]  # command prefixes (space-joined), a directory, a file, a host, or ()
    label: str  # for "Always allow {label} in this session"
    line: ParsedLine | None = None  # the command line, for kind == "command"
    path: Path | None = None  # the file the call is about (for the rules too)
    rule_name: str | None = None  # the name `[permissions]` rules know the tool by, when not its own
    work_dir: Path | None = None  # where the command line runs
    env: Mapping[str, str] = field(default_factory=dict, compare=False)  # and with what environment
    coverable: bool = True  # False: nothing remembered covers it (its git commands cannot be made safe)

    @property
    def remembers(self) -> bool:
        """Whether "approve for this session" can remember anything: an opaque command line, or
        one with a command that runs whatever its arguments say (command_keys.py), cannot."""
        if self.line is None:
            return True
        from .command_keys import runs_anything

        return not (self.line.complex or any(runs_anything(command) for command in self.line.commands))

    def keys(self) -> list[str]:
        """The entries `state.json` keeps when this is approved for the session."""
        if self.kind == "action":
            return [self.action]
        return [f"{self.action}:{value}" for value in self.values]

    def covered_by(self, approved: Iterable[str]) -> bool:
        """Whether what was approved for the session covers this request."""
        mine = [entry[len(self.action) + 1 :] for entry in approved if entry.startswith(self.action + ":")]
        if self.kind == "action":
            return self.action in approved
        if self.kind == "command":
            return self._command_covered(mine)
        if self.kind == "host":
            return bool(self.values) and self.values[0] in mine
        if self.path is None:
            return False
        for candidate in typed_and_real(self.path):
            for entry in mine:
                if entry.startswith(FILE_MARK):
                    if entry[len(FILE_MARK) :] == str(candidate):
                        return True
                elif relative_within(candidate, Path(entry)) is not None:
                    return True
        return False


    def _command_covered(self, mine: list[str]) -> bool:
        """Every simple command of a plain line covered; an exact approval not after a `cd`."""
        if self.line is None or self.line.complex or self.work_dir is None or not self.coverable:
            return False
        from .command_keys import MOVES, covered, program
        from .shell_expand import line_environment

        env = line_environment(self.line, self.env)
        moved = False
        for command in self.line.commands:
            if not covered(command, mine, cwd=self.work_dir, env=env, moved=moved):
                return False
            moved = moved or program(command) in MOVES
        return True


FILE_MARK = "file="  # a remembered single file, as opposed to a directory


def code_span(text: str) -> str:
    """util/visible_text.code_span, imported when a card is first made (not at start-up)."""
    from ..util.visible_text import code_span as span

    return span(text)


def command_scope(action: str, command: str, work_dir: Path, env: Mapping[str, str]) -> Scope:
    """A Shell command line run in `work_dir` with `env` (the parse is loaded with the first call)."""
    from .command_keys import session_key
    from .shell_parse import parse_line  # with the first Shell call, not at start-up

    line = parse_line(command)
    keys = list(dict.fromkeys(session_key(c) for c in line.commands)) if line.simple else []
    label = " and ".join(key.label for key in keys) if keys else code_span(command)
    return Scope(action, "command", tuple(key.entry for key in keys), label, line=line, work_dir=work_dir, env=env)


def path_scope(action: str, path: Path, what: str = "files", *, directory: bool = False) -> Scope:
    """The directory of the file `path` (or `path` itself, a `directory`) and what is below it; a
    single file where that would be the home directory or `/`."""
    folder = Path(os.path.abspath(path))
    if not directory:
        folder = folder.parent
    if folder in (Path(os.path.abspath(Path.home())), Path(folder.anchor)) and not directory:
        return Scope(action, "file", (f"{FILE_MARK}{os.path.abspath(path)}",), code_span(str(path)), path=path)
    return Scope(action, "directory", (str(folder),), f"{what} in {code_span(str(folder))}", path=path)


def host_scope(action: str, host: str) -> Scope:
    return Scope(action, "host", (host,), code_span(host))


def action_scope(action: str, label: str | None = None, path: Path | None = None, rule_name: str | None = None) -> Scope:
    """The whole action; `path`, when the call is about a file, for the rules to match."""
    return Scope(action, "action", (), label or f"`{action}`", path=path, rule_name=rule_name)
