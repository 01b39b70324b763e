"""`[permissions]`: rules the user writes once, in their own config.toml.

    [permissions]
    allow = ["Shell(git status:*)", "Shell(npm test)", "WriteFile(src/**)", "FetchURL(domain:docs.python.org)"]
    ask = ["Shell(git push:*)"]
    deny = ["Shell(rm:*)", "ReadFile(secrets/**)", "mcp:github:delete_repository"]

A rule is a tool name, alone (every call of it) or with a pattern:
- `Shell(git status:*)`: commands starting with those words; `Shell(npm test)`: that command.
  A command line is allowed only when each of its simple commands is (permissions/shell_words.py);
  it is denied, or asked about, when any of them matches.
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
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..util.globs import glob_to_regex
from .paths import typed_and_real
from .scope import Scope
from .command_keys import starts_with

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
_SPLIT_ROUGHLY = re.compile(r"&&|\|\||[;|&\n]|\$\(|`|\(|\)")


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

    @property
    def reason(self) -> str:
        return f"the rule `{self.rule.text}` in [permissions] ({self.rule.verdict})"


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
                found.append(parse_rule(text, verdict))  # type: ignore[arg-type]
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
        return any(_command_matches(rule.pattern, words) for words in _rough_commands(scope))
    return _single_matches(rule.pattern, scope, work_dir)


def _covering(allows: list[Rule], scope: Scope | None, work_dir: Path) -> Rule | None:
    """Allow: a rule (or, for a command line, rules together) covering all of the call."""
    for rule in allows:
        if rule.pattern is None:
            return rule
    if scope is None:
        return None
    if scope.kind == "command" and scope.line is not None:
        if scope.line.opaque or not scope.line.commands:
            return None
        used: list[Rule] = []
        for words in scope.line.commands:
            rule = next((r for r in allows if r.pattern is not None and _command_matches(r.pattern, words)), None)
            if rule is None:
                return None
            used.append(rule)
        return used[0]
    return next((r for r in allows if r.pattern is not None and _single_matches(r.pattern, scope, work_dir)), None)


def _command_matches(pattern: str, words: tuple[str, ...]) -> bool:
    prefix = pattern.endswith(":*")
    try:
        wanted = tuple(shlex.split(pattern[:-2] if prefix else pattern))
    except ValueError:
        return False
    return starts_with(words, wanted) if prefix else words == wanted


def _rough_commands(scope: Scope) -> list[tuple[str, ...]]:
    """For deny and ask: the words of every piece of the line, opaque parts included."""
    assert scope.line is not None
    pieces = list(scope.line.commands)
    if scope.line.opaque:
        raw = " ".join(" ".join(words) for words in scope.line.commands)
        pieces += [tuple(piece.split()) for piece in _SPLIT_ROUGHLY.split(raw) if piece.strip()]
    return pieces


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
