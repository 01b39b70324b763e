"""The files a command line names, so that an unsandboxed Shell command asks as a file tool would.

ReadFile asks before it returns `~/.ssh/id_rsa` and WriteFile before it touches
`.git/hooks/pre-commit`, with a warning that "approve for this session" and yolo never cover
(sensitive.py, protected.py). Without this, `cat ~/.ssh/id_rsa` would run unasked once the user
had allowed `cat src/app.py` for the session (the remembered prefix is `cat`), or in yolo mode, and
`cp payload .git/hooks/pre-commit` once `cp` was allowed.

The words are read as the shell would split them, with the insides of `$(…)` and backticks as
words too; `~`, `$HOME` and the other variables of the agent's environment are expanded, a
relative path is taken from the work dir, a glob is matched against the disk, and a word like
`--key=PATH` or `NAME=PATH` counts by what follows `=`. This is a tripwire for the paths a command
spells out, not a reading of every program's arguments: a command that builds a path at run time
is not caught. What contains such commands is the OS sandbox (kimi_acp/sandbox): it hides the
agent's files and the credential files under the home directory and keeps protected paths
read-only, so a sandboxed command is warned about only for a credentials file the sandbox leaves
readable, one matched by its name (a project's `.env`, a key in the work dir) (docs/security.md).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

from .protected import protected_reason
from .sensitive import sensitive_reason

MAX_WORDS = 256  # a longer line is judged by its first words
MAX_GLOB_MATCHES = 64  # per word: enough to meet a key among a directory's files
_SUBSTITUTION_MARKS = re.compile(r"\$\(|[`()]")
_GLOB_CHARS = re.compile(r"[*?\[]")


def command_warning(command: str, work_dir: Path, *, hidden: Callable[[Path], bool] | None = None) -> str | None:
    """The warning a run of `command` always asks with, or None. `hidden`: the command runs in an
    OS sandbox that hides what this says and keeps protected paths read-only, so only a
    credentials file it leaves readable counts."""
    for word, path in named_paths(command, work_dir):
        reason = sensitive_reason(path)
        if reason is not None and (hidden is None or not hidden(path)):
            return f"The command names `{word}`, which holds credentials ({reason}): approving lets it read them."
        reason = protected_reason(path) if hidden is None else None
        if reason is not None:
            return f"The command names `{word}`: {reason}."
    return None


def named_paths(command: str, work_dir: Path) -> Iterator[tuple[str, Path]]:
    """Each word of `command` that may name a file, with the absolute path it names (and, for a
    glob, each file it matches)."""
    for word in _words(command)[:MAX_WORDS]:
        for candidate in _candidates(word):
            expanded = _expand(candidate)
            if not expanded:
                continue
            path = Path(os.path.normpath(work_dir / expanded))  # an absolute `expanded` stays itself
            yield word, path
            if _GLOB_CHARS.search(expanded):
                for match in _glob(path):
                    yield word, match


def _words(command: str) -> list[str]:
    text = _SUBSTITUTION_MARKS.sub(" ", command)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return [token for token in lexer if not set(token) <= set(";&|<>")]
    except ValueError:  # a quote that does not close: the shell refuses it too; judge the rough words
        return text.split()


def _candidates(word: str) -> list[str]:
    """The word, and what follows its first `=` (`--output=PATH`, `NAME=PATH`). A quoted text with
    spaces counts only when it holds a `/` (`"my dir/.env"`, not `-m "drop the .env"`)."""
    if (word.startswith("-") and "=" not in word) or (any(c.isspace() for c in word) and "/" not in word):
        return []  # an option, or a message
    _, equals, value = word.partition("=")
    return [word, value] if equals and value else [word]


def _expand(word: str) -> str:
    if word == "~" or word.startswith("~/"):
        word = str(Path.home()) + word[1:]
    return os.path.expandvars(word)


def _glob(pattern: Path) -> list[Path]:
    matches: list[Path] = []
    try:
        for index, match in enumerate(glob.iglob(str(pattern), include_hidden=True)):
            if index >= MAX_GLOB_MATCHES:
                break
            matches.append(Path(match))
    except (OSError, ValueError):
        pass
    return matches
