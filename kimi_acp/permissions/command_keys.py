"""What "approve for this session" of one simple command remembers, and what that covers.

- A command of the read-only table (command_table.py) is remembered by its form: `cat …`,
  `git log …`. That covers later commands of the same form, with the options the form lists:
  `git log --output=x`, `git grep -O…`, `sed -n '1e …'` are not `git log …`, `git grep …`,
  `sed …` commands, so they ask.
- Anything else is remembered exactly, as the card showed it: approving `make test` covers
  `make test` and not `make test --eval=…`; approving `rm -rf build` covers no `rm -rf build ~`. An
  exact approval covers the command only where it was approved: not after a `cd` in the same line.
- Never remembered and never covered (asked each time), since it runs whatever its arguments
  say: `eval`, `source`, wrappers (`sudo`, `env`, `timeout`, `xargs`, …), programs that run other
  programs (`uv run`, `npx`, `docker exec`, `git submodule foreach`, …), inline code (`bash -c`,
  `python -c`, `node -e`, `awk`, …), `git -c`. The lists are in command_table.py.

The user's own `[permissions]` rules (rules.py) are not limited by this: they say what they say.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..util.visible_text import code_span
from .command_forms import match_form, operands_stay_operands
from .command_table import GIT_CODE_OPTIONS, INLINE_CODE, RUNNER_SUBCOMMANDS, RUNNERS, SHELLS
from .shell_parse import SimpleCommand

EXACT_MARK = "exactly="  # a remembered exact command, as opposed to a prefix
MOVES = frozenset({"cd", "pushd", "popd"})  # change where the rest of the line runs


@dataclass(frozen=True)
class CommandKey:
    """What approving one simple command for the session remembers."""

    words: tuple[str, ...]  # the form's words, or the exact command's words (`exact_words`)
    exact: bool
    shown: str  # the command as the card shows it

    @property
    def entry(self) -> str:
        """The value kept in `state.json` after the action (`run command:<entry>`)."""
        return (EXACT_MARK if self.exact else "") + " ".join(self.words)

    @property
    def label(self) -> str:
        return code_span(self.shown) if self.exact else code_span(f"{' '.join(self.words)} …")


def program(command: SimpleCommand) -> str:
    name = command.program or (command.words[0].source if command.words else "")
    return os.path.basename(name)


def runs_anything(command: SimpleCommand) -> bool:
    """Whether the command runs whatever its arguments say (see the module docstring)."""
    name = program(command)
    values = command.values
    if name in RUNNERS or command.program is None:
        return True
    if len(values) > 1 and (name, values[1]) in RUNNER_SUBCOMMANDS:
        return True
    options = _leading_options(values)
    if name in SHELLS:
        return _has_option(options, "c", ("--command",))
    interpreter = _interpreter(name)
    if interpreter is not None:
        letters, long_options = INLINE_CODE[interpreter]
        return interpreter == "awk" or _has_option(options, letters, long_options)
    if name == "find":
        return any(value in ("-exec", "-execdir", "-ok", "-okdir", "-delete") for value in values)
    if name == "git":
        return any(option.startswith(GIT_CODE_OPTIONS) for option in options)
    return False


def session_key(command: SimpleCommand) -> CommandKey:
    """What approving `command` for the session remembers (see the module docstring)."""
    match = match_form(command)
    if match is not None and not match.globals_used:
        return CommandKey(match.key, exact=False, shown=" ".join(match.key))
    return CommandKey(tuple(exact_words(command)), exact=True, shown=command.key_text)


def exact_words(command: SimpleCommand) -> list[str]:
    """The words an exact entry keeps, as shell text: a plain word quoted from its value (so `"a b"`,
    `'a b'` and `a\\ b` are the same command), a word bash expands as written (`$HOME`, `*.py`;
    never equal to the quoted `'$HOME'`)."""
    return [shlex.quote(word.value) if word.plain and word.value is not None else word.source for word in command.words]


def covered(
    command: SimpleCommand, entries: Iterable[str], *, cwd: Path, env: Mapping[str, str], moved: bool = False
) -> bool:
    """Whether the remembered `entries` (of one action) cover `command`: an exact entry equal to it
    (not after a `cd`: `moved`), or its form's entry when it is a form of the table whose operands
    stay operands (`sort *` with a file named `--compress-program=sh` is another command)."""
    if not command.words or runs_anything(command):
        return False
    match = match_form(command)
    mine = exact_words(command)
    for entry in entries:
        if entry.startswith(EXACT_MARK):
            if not moved and entry[len(EXACT_MARK) :] == " ".join(mine):
                return True
        elif match is not None and not match.globals_used and tuple(entry.split(" ")) == match.key:
            if not (moved and match.floating) and operands_stay_operands(match, cwd, env):
                return True
    return False


def _interpreter(name: str) -> str | None:
    """`python3.12` → `python`; `nodejs` → `node`; `gawk` → `awk`; None for anything else."""
    base = re.sub(r"[0-9.]+$", "", name)
    base = {"nodejs": "node", "pypy": "python", "luajit": "lua", "gawk": "awk", "mawk": "awk", "nawk": "awk"}.get(base, base)
    return base if base in INLINE_CODE else None


def _leading_options(words: tuple[str, ...]) -> list[str]:
    """The option words before the first operand (a script, a subcommand)."""
    options = []
    for word in words[1:]:
        if not word.startswith("-") or word == "-":
            break
        options.append(word)
    return options


def _has_option(options: list[str], letters: str, long_options: tuple[str, ...]) -> bool:
    for option in options:
        if option.startswith("--"):
            if option.split("=", 1)[0] in long_options:
                return True
        elif any(letter in option[1:] for letter in letters):
            return True
    return False
