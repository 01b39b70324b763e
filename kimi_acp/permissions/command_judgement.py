"""One Shell command line judged once: the parse every decision reads, in one place.

tools/shell.py asks this before a command runs and gets: the scope "approve for this session"
would remember and whether a remembered one covers it (scope.py, command_keys.py), the warning it
always asks with (command_paths.py), whether it holds a secret the agent knows (its words as
bash reads them: no quoting or escaping hides a key), whether it provably only reads
(read_only.py), and the variables its git commands run with (git_config.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..util import secrets
from .command_keys import program
from .command_paths import command_warning
from .git_config import safe_git_environment
from .read_only import judge
from .scope import Scope, command_scope
from .shell_expand import child_variables
from .shell_parse import ParsedLine, parse_line


@dataclass(frozen=True)
class Judgement:
    line: ParsedLine
    scope: Scope
    warning: str | None  # asks whatever was approved, even in yolo mode
    holds_secret: bool  # a word of it is (or holds) a secret the agent knows
    read_only: bool  # runs unasked unless the session asks always
    why_asked: str  # when it is not read-only: why (for the logs and the tests)
    environment: dict[str, str]  # added to the command's environment


def judge_command(
    command: str,
    work_dir: Path,
    may_read: Callable[[Path], bool],
    *,
    action: str,
    hidden: Callable[[Path], bool] | None = None,
    writable: Callable[[Path], bool] | None = None,
    git_unguarded: bool = False,
    environment_known: bool = True,
) -> Judgement:
    """Judge `command`, run in `work_dir`; `may_read` says where reading needs no approval;
    `hidden` and `writable`: what the OS sandbox it runs in hides and lets it write
    (command_paths.command_warning); `git_unguarded`: it runs in a sandbox that cannot keep `.git`
    read-only (Landlock), so a git command that may change it asks; `environment_known` False: it
    runs in the IDE's terminal, with the IDE's environment."""
    from ..kaos.local import runs_bash, user_shell

    env = child_variables(known=environment_known)
    line = parse_line(command)
    if not runs_bash():  # read as bash would, but not trusted to be what the shell does
        line = dataclasses.replace(line, complex=True, reasons=(*line.reasons, f"commands run with `{user_shell()}`"))
    warning = command_warning(line, work_dir, env, hidden=hidden, writable=writable)
    verdict = judge(line, work_dir, env, may_read)
    if warning is None and git_unguarded and _changes_git(line):
        warning = (
            "This sandbox (Landlock) cannot keep a repository's `.git` read-only, and a git command may change "
            "its config or hooks, which run later outside the sandbox."
        )
    scope = command_scope(action, command, work_dir, env)
    environment = verdict.environment
    if not verdict.read_only and any(program(c) == "git" for c in line.commands):
        # a remembered `git log …` runs unasked too: only where the repository's programs can be
        # switched off; where they cannot, it asks
        found = safe_git_environment(work_dir, env)
        if found is None:
            scope = dataclasses.replace(scope, coverable=False)
        environment = found or {}
    return Judgement(line, scope, warning, _holds_secret(line), verdict.read_only, verdict.why_not, environment)


def _changes_git(line: ParsedLine) -> bool:
    """Whether the line runs git other than as a form of the read-only table (`git config …`,
    `git init`, anything git could write its metadata with)."""
    from .command_forms import match_form

    return any(program(c) == "git" and match_form(c) is None for c in line.commands) or (
        line.complex and any(program(c) == "git" for c in line.commands)
    )


def _holds_secret(line: ParsedLine) -> bool:
    """Whether a word of the line, as bash reads it (quotes removed, escapes resolved, `$'\\x73k'`
    decoded), holds a secret the agent knows."""
    if not secrets.any_registered():
        return False
    for command in line.commands:
        for word in command.words:
            text = "".join(part.text for part in word.parts if part.kind == "text")
            if secrets.holds_secret(text) or secrets.holds_secret(word.source):
                return True
    return secrets.holds_secret(line.source)
