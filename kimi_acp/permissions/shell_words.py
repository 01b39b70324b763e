"""A shell command as the simple commands it runs, for approval scopes and `Shell(...)` rules.

`git status && rm -rf y` is two commands: an approval of `git status` must not cover it. So a
command line is split at `&&`, `||`, `;`, `|`, `&` and newlines into simple commands, each a
list of words. What cannot be judged word by word makes the whole line `opaque`: command or
process substitution (`$(...)`, backticks, `<(...)`), subshells and groups, writing redirections
to anything but /dev/null or another descriptor, variable assignments before a command
(`LD_PRELOAD=... ls`), quotes that do not close. An opaque line is never covered by a session
approval or an allow rule; it is asked about each time.

This is a conservative reading of POSIX shell syntax, not a shell parser: anything it does not
understand is opaque, never split differently from how the shell would split it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;"})
_HARMLESS_TARGETS = ("/dev/null", "&1", "&2", "&-")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")


@dataclass(frozen=True)
class CommandLine:
    """The simple commands of one line; `opaque` when some part cannot be judged by its words."""

    commands: tuple[tuple[str, ...], ...]
    opaque: bool

    @property
    def text(self) -> str:
        return " ; ".join(" ".join(c) for c in self.commands)


def split_command(line: str) -> CommandLine:
    """The simple commands `line` runs (see the module docstring)."""
    if _SUBSTITUTION.search(line):
        return CommandLine(_rough_words(line), True)
    lexer = shlex.shlex(line.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # a quote that does not close
        return CommandLine(_rough_words(line), True)
    commands: list[tuple[str, ...]] = []
    current: list[str] = []
    opaque = False
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in _SEPARATORS:
            if current:
                commands.append(tuple(current))
            current = []
        elif token in ("(", ")"):
            opaque = True
        elif _is_redirection(token):
            target = tokens[index + 1] if index + 1 < len(tokens) else ""
            duplicates = token.endswith("&") and (target.isdigit() or target == "-")  # 2>&1
            if ">" in token and not (duplicates or target.startswith("&") or target in _HARMLESS_TARGETS):
                opaque = True  # writes a file
            index += 1  # the target is not a word of the command
        elif token.isdigit() and index + 1 < len(tokens) and _is_redirection(tokens[index + 1]):
            pass  # the descriptor of `2>...`: not a word of the command
        else:
            if not current and _ASSIGNMENT.match(token):
                opaque = True
            current.append(token)
        index += 1
    if current:
        commands.append(tuple(current))
    return CommandLine(tuple(commands), opaque or not commands)


def _is_redirection(token: str) -> bool:
    return set(token) <= set("<>&") and any(ch in token for ch in "<>")


def _rough_words(line: str) -> tuple[tuple[str, ...], ...]:
    """Words for showing an opaque line; never used to decide anything."""
    return (tuple(line.split()),)
