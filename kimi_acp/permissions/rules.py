"""`[permissions]`: rules the user writes once, in their own config.toml.

    [permissions]
    allow = ["Shell(git status:*)", "Shell(npm test)", "WriteFile(src/**)", "FetchURL(domain:docs.python.org)"]
    ask = ["Shell(git push:*)"]
    deny = ["Shell(rm:*)", "ReadFile(secrets/**)", "mcp:github:delete_repository"]

A rule is a tool name, alone (every call of it) or with a pattern:
- `Shell(git status:*)`: commands starting with those words; `Shell(npm test)`: that command.
  A command line is allowed only when it is a plain line (permissions/shell_parse.py) and each of
  its simple commands is; it is denied, or asked about, when any simple command anywhere in it
  matches (inside a subshell or a substitution too, and behind `sudo`, `xargs`, `bash -c '…'` and
  the other programs that run a command). With a deny rule for Shell, a command whose program the
  agent cannot read (`$CMD x`) asks, even in yolo mode.
- `ReadFile(...)`, `WriteFile(...)`, `StrReplaceFile(...)`, `Grep(...)`, `Glob(...)`,
  `ReadMediaFile(...)`: a glob (`*`, `**`, `?`, `{a,b}`) on the path, relative to the work dir,
  or from `~/` or `/`.
- `FetchURL(domain:docs.python.org)`, `SearchWeb(domain:...)`: that host (`*.example.com`: its subdomains).
- `mcp:<server>:<tool>` (`mcp:<server>:*` for all of a server), a plugin's tool by its name,
  `Agent`, `TaskStop`, ... by name.
Claude Code's names work too: `Bash` for Shell, `Read` (ReadFile, ReadMediaFile, Grep, Glob),
`Edit` and `Write` (WriteFile, StrReplaceFile), `WebFetch` for FetchURL, `WebSearch` for
SearchWeb, `mcp__server__tool`.

Deny wins over ask, ask over allow. A denied call is refused with the rule named; an ask rule asks
even in yolo mode or after "approve for this session"; an allow rule runs the call unasked. No rule
makes a sensitive file or a protected path run unasked (sensitive.py, protected.py).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..util.globs import glob_to_regex
from .paths import typed_and_real

if TYPE_CHECKING:
    from .scope import Scope
    from .shell_parse import SimpleCommand

Verdict = Literal["allow", "ask", "deny"]

ALIASES: dict[str, tuple[str, ...]] = {
    "Bash": ("Shell",),
    "Read": ("ReadFile", "ReadMediaFile", "Grep", "Glob"),
    "Edit": ("WriteFile", "StrReplaceFile"),
    "Write": ("WriteFile", "StrReplaceFile"),
    "MultiEdit": ("StrReplaceFile",),
    "WebFetch": ("FetchURL",),
    "WebSearch": ("SearchWeb",),
}
MAX_NESTED_LINES = 8  # `bash -c '…'` read inside `bash -c '…'`, at most this deep


@dataclass(frozen=True)
class Rule:
    text: str  # as the user wrote it, for messages
    verdict: Verdict
    tools: tuple[str, ...]  # tool names, or fnmatch patterns (mcp:server:*)
    pattern: str | None

    def names(self, tool: str) -> bool:
        return any(tool == name or fnmatch.fnmatchcase(tool, name) for name in self.tools)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    rule: Rule
    why: str = ""  # when the verdict is not the rule's own

    @property
    def reason(self) -> str:
        said = f"the rule `{self.rule.text}` in [permissions] ({self.rule.verdict})"
        return f"{said}: {self.why}" if self.why else said


class Rules:
    """The parsed `[permissions]` of one config."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules = list(rules)

    @classmethod
    def from_config(cls, config: object) -> Rules:
        table = getattr(config, "permissions", None)
        found: list[Rule] = []
        for verdict in ("deny", "ask", "allow"):
            for text in getattr(table, verdict, []) or []:
                found.append(parse_rule(text, verdict))
        return cls(found)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def decide(self, tool: str, scope: Scope | None, work_dir: Path) -> Decision | None:
        """The verdict of the rules on one call of `tool` about `scope`; None when no rule speaks."""
        mine = [rule for rule in self.rules if rule.names(tool)]
        if not mine:
            return None
        for verdict in ("deny", "ask"):
            for rule in mine:
                if rule.verdict == verdict and _touches(rule, scope, work_dir):
                    return Decision(verdict, rule)
        unreadable = _unreadable_program(scope)
        if unreadable is not None:
            denial = next((r for r in mine if r.verdict == "deny" and r.pattern is not None), None)
            if denial is not None:
                return Decision("ask", denial, f"`{unreadable}` may be a command the rule `{denial.text}` denies")
        allows = [rule for rule in mine if rule.verdict == "allow"]
        covering = _covering(allows, scope, work_dir)
        return Decision("allow", covering) if covering is not None else None


def parse_rule(text: str, verdict: Verdict) -> Rule:
    text = text.strip()
    name, _, rest = text.partition("(")
    pattern = rest[:-1].strip() if rest.endswith(")") else None
    name = name.strip()
    if name.startswith("mcp__"):
        name = "mcp:" + name[len("mcp__") :].replace("__", ":", 1)
    return Rule(text, verdict, ALIASES.get(name, (name,)), pattern or None)


def _touches(rule: Rule, scope: Scope | None, work_dir: Path) -> bool:
    """Deny / ask: the rule speaks of any part of the call."""
    if rule.pattern is None:
        return True
    if scope is None:
        return False
    if scope.kind == "command" and scope.line is not None:
        return any(_command_matches(rule.pattern, words) for words in _every_command(scope.line.commands))
    return _single_matches(rule.pattern, scope, work_dir)


def _covering(allows: list[Rule], scope: Scope | None, work_dir: Path) -> Rule | None:
    """Allow: a rule (or, for a command line, rules together) covering all of the call."""
    for rule in allows:
        if rule.pattern is None:
            return rule
    if scope is None:
        return None
    if scope.kind == "command" and scope.line is not None:
        if scope.line.complex or not scope.line.commands:
            return None
        used: list[Rule] = []
        for command in scope.line.commands:
            if not all(word.plain for word in command.words[:1]):
                return None
            words = _plain_prefix(command)
            covering = next((r for r in allows if r.pattern is not None and _command_matches(r.pattern, words)), None)
            if covering is None:
                return None
            used.append(covering)
        return used[0]
    return next((r for r in allows if r.pattern is not None and _single_matches(r.pattern, scope, work_dir)), None)


def _command_matches(pattern: str, words: tuple[str, ...]) -> bool:
    import shlex

    prefix = pattern.endswith(":*")
    try:
        wanted = tuple(shlex.split(pattern[:-2] if prefix else pattern))
    except ValueError:
        return False
    return (bool(wanted) and words[: len(wanted)] == wanted) if prefix else words == wanted


def _plain_prefix(command: SimpleCommand) -> tuple[str, ...]:
    """An allow rule matches the words up to the first one bash expands (`ls $X` is `ls` and
    something unknown: `Shell(ls:*)` allows it, `Shell(ls x)` does not)."""
    words: list[str] = []
    for word in command.words:
        if not word.plain or word.value is None:
            words.append("\0")  # matches no word of a rule
            break
        words.append(word.value)
    return tuple(words)


def _every_command(commands: Iterable[SimpleCommand], depth: int = 0) -> Iterator[tuple[str, ...]]:
    """For deny and ask: the words of every simple command, and of the commands the programs that
    run a command would run (`sudo rm …` is also `rm …`; `bash -c 'rm …'` is also `rm …`)."""
    from .command_keys import program
    from .command_table import RUNNERS, SHELLS
    from .shell_parse import parse_line

    for command in commands:
        values = command.values
        yield values
        name = program(command)
        if name in RUNNERS or name in SHELLS:
            for start in range(1, len(values)):  # each tail: the wrapped command starts somewhere
                yield values[start:]
        if (name in SHELLS or name == "eval") and depth < MAX_NESTED_LINES:
            for value in values[1:]:
                if not value.startswith("-"):
                    yield from _every_command(parse_line(value).commands, depth + 1)


def _unreadable_program(scope: Scope | None) -> str | None:
    """The first command of a Shell call whose program is not plain text (`$CMD`, `"$(which rm)"`)."""
    if scope is None or scope.kind != "command" or scope.line is None:
        return None
    for command in scope.line.commands:
        if command.program is None:
            return command.words[0].source if command.words else scope.line.source
    return None


def _single_matches(pattern: str, scope: Scope, work_dir: Path) -> bool:
    if scope.kind == "host":
        if not pattern.startswith("domain:") or not scope.values:
            return False
        host = scope.values[0].split(":")[0].lower()
        wanted = pattern[len("domain:") :].strip().lower()
        return host == wanted or (wanted.startswith("*.") and host.endswith(wanted[1:]))
    if scope.path is None:
        return False
    regex = re.compile(glob_to_regex(_anchor(pattern, work_dir)))
    return any(regex.fullmatch(candidate.as_posix()) for candidate in typed_and_real(scope.path))


def _anchor(pattern: str, work_dir: Path) -> str:
    """The pattern as an absolute glob: `~/x` and `/x` as written, anything else below the work dir."""
    if pattern.startswith("~/"):
        return Path(os.path.expanduser("~")).as_posix() + pattern[1:]
    if pattern.startswith("/"):
        return pattern
    return Path(os.path.abspath(work_dir)).as_posix().rstrip("/") + "/" + pattern.removeprefix("./")
