"""Whether a command line provably only reads: then it runs without a question.

A line runs unasked (unless the user chose "always ask", or a rule asks) when

- it is simple (shell_parse.py: plain words joined by `&&`, `||`, `;`, `|`, no substitution, no
  redirection but to /dev/null or from a file),
- every simple command in it is a form of the read-only table (command_table.py, read by
  command_forms.py), whose operands stay operands once bash expands them,
- every file it names (operands, file-valued options, `< file`, `git -C DIR`, relative to where a
  `cd` earlier in the line went) expands faithfully (shell_expand.py) and lies where the agent
  reads freely (the workspace, the temp dir: the same rule as ReadFile), and none holds
  credentials or is a protected path,
- a command that reads whole directories (`grep -r`, `rg`, `git grep`) finds no credentials file
  in them (and follows no symbolic link, when it follows links),
- its git commands can run with every program the repository's config names switched off
  (git_config.py): the verdict carries the variables that do it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .command_forms import match_form, operands_stay_operands
from .command_keys import MOVES, program
from .command_paths import moved_bases
from .git_config import safe_git_environment
from .protected import protected_reason
from .sensitive import sensitive_name, sensitive_reason
from .shell_expand import expand_word, line_environment
from .shell_parse import ParsedLine, Word

MAX_WALK_ENTRIES = 20_000  # a directory a recursive reader is given: larger ones ask


@dataclass(frozen=True)
class Verdict:
    """Whether a line only reads; why not; the environment its git commands need."""

    read_only: bool
    why_not: str = ""
    environment: dict[str, str] = field(default_factory=dict)


def judge(line: ParsedLine, work_dir: Path, env: Mapping[str, str], may_read: Callable[[Path], bool]) -> Verdict:
    """Whether `line`, run in `work_dir` with `env`, only reads (see the module docstring)."""
    if line.complex:
        return Verdict(False, "it is not a plain command line: " + "; ".join(line.reasons))
    env = line_environment(line, env)
    bases: list[Path] | None = [work_dir]
    environment: dict[str, str] = {}
    for command in line.commands:
        if bases is None:
            return Verdict(False, "a `cd` goes where the agent cannot tell")
        match = match_form(command)
        if match is None:
            return Verdict(False, f"`{program(command)}` with these arguments is not in the read-only table")
        for base in bases:
            if not operands_stay_operands(match, base, env):
                return Verdict(False, "an operand could expand to an option")
        runs_in = bases
        if match.directory is not None:  # git -C DIR
            places = _expanded_paths(match.directory, bases, env)
            if places is None:
                return Verdict(False, f"`{match.directory.source}` cannot be expanded")
            runs_in = places
        files = [*match.files, *command.inputs]
        if match.recursive and not match.operand_files:
            files.append(Word(".", ()))
        for word in files:
            why = _check_file(word, runs_in, env, may_read, match.recursive, match.follows_links)
            if why:
                return Verdict(False, why)
        if program(command) == "git":
            for place in runs_in:
                variables = safe_git_environment(place, env)
                if variables is None:
                    return Verdict(False, "the repository's git config names programs git may run")
                environment.update(variables)
        if program(command) in MOVES:
            bases = moved_bases(command, bases, env)
    return Verdict(True, environment=environment)


def _expanded_paths(word: Word, bases: list[Path], env: Mapping[str, str]) -> list[Path] | None:
    if not word.parts:  # the implicit `.` of a recursive reader
        return list(bases)
    paths: list[Path] = []
    for base in bases:
        texts = expand_word(word, env, base)
        if texts is None:
            return None
        paths += [Path(os.path.normpath(base / text)) for text in texts]
    return paths


def _check_file(
    word: Word, bases: list[Path], env: Mapping[str, str], may_read: Callable[[Path], bool], recursive: bool, follows: bool
) -> str:
    """Why reading `word` is not free ("" when it is)."""
    paths = _expanded_paths(word, bases, env)
    if paths is None:
        return f"`{word.source}` cannot be expanded"
    for path in paths:
        if not may_read(path):
            return f"`{path}` is outside the workspace"
        if sensitive_reason(path) is not None:
            return f"`{path}` holds credentials"
        if protected_reason(path) is not None:
            return f"`{path}` is protected"
        if recursive and path.is_dir():
            why = _walk(path, follows)
            if why:
                return why
    return ""


def _walk(root: Path, follows: bool) -> str:
    """Why reading every file below `root` is not free: a credentials file by its name, a
    directory of keys, a symbolic link the reader would follow, or too many entries."""
    count = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        if sensitive_reason(directory) is not None:
            return f"`{directory}` holds credentials"
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        count += len(entries)
        if count > MAX_WALK_ENTRIES:
            return f"`{root}` holds too many files to check"
        for entry in entries:
            if sensitive_name(entry.name):
                return f"`{entry.path}` holds credentials"
            try:
                if entry.is_symlink():
                    if follows:
                        return f"`{entry.path}` is a symbolic link the command would follow"
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
            except OSError:
                continue
    return ""
