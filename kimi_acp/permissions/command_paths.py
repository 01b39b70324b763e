"""The files a command line names, so that a Shell command asks as a file tool would.

ReadFile asks before it returns `~/.ssh/id_rsa` and WriteFile before it touches
`.git/hooks/pre-commit`, with a warning that "approve for this session" and yolo never cover
(sensitive.py, protected.py). Without this, `cat ~/.ssh/id_rsa` would run unasked once the user
had allowed `cat src/app.py` for the session, or in yolo mode, and `cp payload .git/hooks/pre-commit`
once `cp` was allowed.

It reads the same parse as every other decision (shell_parse.py): every word of every simple
command, inside substitutions and subshells too, expanded as bash would (shell_expand.py: `~`,
the variables the command inherits, brace expansion, globs matched against the disk), relative
paths taken from the work dir or from where a `cd` earlier in the line went, and a word like
`--key=PATH`, `-oPATH`, `NAME=PATH`, `@PATH` or `REV:PATH` counted by its path part too. A word it
cannot expand faithfully (`$(…)`, `${HOME%/}`, a variable the command would not inherit, a glob
with too many matches) counts as naming every credentials file and protected path: the command
asks. This is a tripwire for the paths a command spells out, not a reading of every program's
arguments: a command that builds a path at run time (a script that opens the file itself) is not
caught. What contains such commands is the OS sandbox (kimi_acp/sandbox): it hides the agent's
files and the credential files under the home directory and keeps protected paths read-only, so a
sandboxed command is warned about only for a credentials file the sandbox leaves readable, one
matched by its name (a project's `.env`, a key in the work dir) (docs/security.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from .command_forms import match_form
from .command_keys import MOVES, program
from .protected import protected_reason
from .sensitive import sensitive_reason
from .shell_expand import expand_word, line_environment
from .shell_parse import ParsedLine, SimpleCommand, Word

MAX_WORDS = 512  # a longer line: its later words are taken as naming anything


@dataclass(frozen=True)
class NamedPath:
    """A word of the line and a file it names; `path` None: the word could name anything.
    `read`: named by a command of the read-only table as a file it reads (a protected path, which
    only a write could harm, is no reason to ask then)."""

    word: str
    path: Path | None
    read: bool = False


def command_warning(
    line: ParsedLine,
    work_dir: Path,
    env: Mapping[str, str],
    *,
    hidden: Callable[[Path], bool] | None = None,
    writable: Callable[[Path], bool] | None = None,
) -> str | None:
    """The warning a run of `line` always asks with, or None. `hidden`: the command runs in an
    OS sandbox that hides what this says, so only a credentials file it leaves readable counts;
    `writable`: what that sandbox lets a command write, so only a protected path it leaves
    writable counts (a `.git` the command makes inside the workspace, `sub/.git/config`)."""
    for named in named_paths(line, work_dir, env):
        if named.path is None:
            return (
                f"The command holds `{_short(named.word)}`, which the agent cannot expand before it runs: it may "
                "name a file that holds credentials or a protected path."
            )
        reason = sensitive_reason(named.path)
        if reason is not None and (hidden is None or not hidden(named.path)):
            return f"The command names `{named.word}`, which holds credentials ({reason}): approving lets it read them."
        exposed = hidden is None or (writable is not None and writable(named.path))
        reason = protected_reason(named.path) if exposed and not named.read else None
        if reason is not None:
            return f"The command names `{named.word}`: {reason}."
    return None


def named_paths(line: ParsedLine, work_dir: Path, env: Mapping[str, str]) -> Iterator[NamedPath]:
    """Each file a word of `line` may name (see the module docstring), in order."""
    env = line_environment(line, env)
    bases: list[Path] | None = [work_dir]
    count = 0
    for command in line.commands:
        match = match_form(command)
        # a command of the read-only table names exactly the files it reads (not its patterns, nor
        # the text `echo` prints); any other, every word that may be a file
        words = [*match.files, *command.inputs] if match is not None else list(_path_words(command))
        for word in words:
            count += 1
            if count > MAX_WORDS:
                yield NamedPath(word.source, None)
                return
            for named in _word_paths(word, bases, env):
                yield NamedPath(named.word, named.path, read=match is not None)
        if match is None and program(command) == "git":
            yield from _git_config_writes(command, bases, env)
        if program(command) in MOVES:
            bases = moved_bases(command, bases, env)
    for word in line.file_words:  # `KEY=~/.ssh/id_rsa ./deploy`: the value may be a file
        yield from _word_paths(word, bases, env)


def moved_bases(command: SimpleCommand, bases: list[Path] | None, env: Mapping[str, str]) -> list[Path] | None:
    """Where relative paths may be taken from after `cd DIR` (as well as before it: it may fail);
    None when that cannot be known (`cd -`, `popd`, a word that cannot be expanded)."""
    if bases is None or program(command) == "popd":
        return None
    operands = [w for w in command.words[1:] if not (w.value or "").startswith("-") or w.value == "-"]
    if not operands:
        home = env.get("HOME")
        return [*bases, Path(home)] if home else None
    if len(operands) > 1 or operands[0].value == "-":
        return None
    expanded = expand_word(operands[0], env, bases[0])
    if expanded is None or len(expanded) != 1:
        return None
    return list(dict.fromkeys([*bases, *(Path(os.path.normpath(base / expanded[0])) for base in bases)]))


def _path_words(command: SimpleCommand) -> Iterator[Word]:
    words = command.words
    name = words[0] if words else None
    if name is not None and (name.value is None or "/" in name.value):
        yield name  # a program given by its path runs (reads) that file
    yield from words[1:]
    yield from command.inputs


def _word_paths(word: Word, bases: list[Path] | None, env: Mapping[str, str]) -> Iterator[NamedPath]:
    expansions: dict[str, None] = {}
    for base in bases or [None]:  # type: ignore[list-item]
        texts = expand_word(word, env, base)
        if texts is None:
            yield NamedPath(word.source, None)
            return
        expansions.update(dict.fromkeys(texts))
    for text in expansions:
        for candidate in candidates(text):
            if bases is None and not candidate.startswith("/"):
                yield NamedPath(word.source, None)  # relative to a directory that cannot be known
                return
            for base in bases or [Path("/")]:
                yield NamedPath(word.source, Path(os.path.normpath(base / candidate)))


# `git config` options that only read (git-config(1)); with anything else it may write.
_GIT_CONFIG_READS = frozenset(
    {
        "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list",
        "--show-origin", "--show-scope", "--name-only", "-z", "--null", "--includes", "--no-includes",
        "--bool", "--int", "--path", "--expiry-date", "--bool-or-int", "get", "list",
    }
)  # fmt: skip


def _git_config_writes(command: SimpleCommand, bases: list[Path] | None, env: Mapping[str, str]) -> Iterator[NamedPath]:
    """The config file a `git config` that may write names without spelling it: the repository's
    `.git/config` (or `--worktree`'s), `~/.gitconfig` with `--global`, `/etc/gitconfig` with
    `--system`; `--file F` names F, which the words already give."""
    values = [w.value for w in command.words[1:]]
    try:
        at = values.index("config")
    except ValueError:
        return
    options = [v for v in values[at + 1 :] if v is not None]
    if (options and options[0] in _GIT_CONFIG_READS) or any(v in ("--get", "--get-all", "-l", "--list") for v in options):
        return
    if any(v in ("-f", "--file", "--blob") or (v or "").startswith(("--file=", "--blob=")) for v in options):
        return  # the file is one of the words, already named
    word = " ".join(w.source for w in command.words)
    if "--global" in options:
        home = env.get("HOME")
        targets = [Path(home) / ".gitconfig"] if home else []
        if not targets:
            yield NamedPath(word, None)
            return
    elif "--system" in options:
        targets = [Path("/etc/gitconfig")]
    else:
        name = "config.worktree" if "--worktree" in options else "config"
        targets = [base / ".git" / name for base in bases or []]
        if not targets:
            yield NamedPath(word, None)
            return
    for target in targets:
        yield NamedPath(str(target), target)  # "The command names `…/.git/config`": what `git config` writes


def candidates(text: str) -> list[str]:
    """The paths a word may name: itself, and what follows `=` (`--output=PATH`, `NAME=PATH`), an
    option letter (`-oPATH`), `@` (`curl -d @.env`) or `:` (`git show HEAD:.env`). A text with
    spaces counts only when it holds a `/` (`"my dir/.env"`, not `-m "drop the .env"`)."""
    if any(c.isspace() for c in text) and "/" not in text:
        return []
    found: list[str] = []
    if text.startswith("-"):
        _, equals, value = text.partition("=")
        if equals:
            found.append(value)
        elif not text.startswith("--") and len(text) > 2:
            found.append(text[2:])
    else:
        found.append(text)
        _, equals, value = text.partition("=")
        if equals:
            found.append(value)
    for item in list(found):
        if item.startswith("@"):
            found.append(item[1:])
        if ":" in item and not item.startswith("/"):
            found.append(item.split(":", 1)[1])
    return [item for item in dict.fromkeys(found) if item]


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
