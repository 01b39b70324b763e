"""The words a shell word becomes, as bash would expand it, or None where that cannot be known.

The tripwire (command_paths.py) and the read-only check (read_only.py) need the files a command
names. A word is expanded here only where the result is certain: a leading `~`, `$NAME` of a
variable the command inherits from the agent's environment (empty when it is not set there; in
the IDE's terminal, whose environment the agent does not know, only what the agent sets), brace
expansion, and globs matched against the disk. Anything else (`$(…)`, `${X%y}`, `$1`, a variable
bash sets itself or the IDE's terminal may hold, an unquoted variable whose value bash would split
or glob, a glob with too many matches) is **unexpandable**: the caller must assume the word names
anything.
"""

from __future__ import annotations

import glob as _glob
import itertools
import re
from collections.abc import Mapping
from pathlib import Path

from .shell_parse import ParsedLine, Part, Word, brace_expands, merged_parts

MAX_GLOB_MATCHES = 1024  # more matches than this: the word is taken as unexpandable
MAX_BRACE_WORDS = 256
# Variables bash sets or changes itself whatever the environment says (bash(1), "Shell
# Variables"): their value in the command is not the agent's.
_BASH_OWNED = frozenset(
    {
        "BASHOPTS", "SHELLOPTS", "BASHPID", "EUID", "UID", "GROUPS", "HOSTNAME", "HOSTTYPE", "MACHTYPE",
        "OSTYPE", "PPID", "PWD", "OLDPWD", "RANDOM", "SRANDOM", "SECONDS", "SHLVL", "IFS", "LINENO",
        "EPOCHREALTIME", "EPOCHSECONDS", "FUNCNAME", "HISTCMD", "DIRSTACK", "PIPESTATUS", "REPLY",
        "MAPFILE", "OPTARG", "OPTIND", "OPTERR", "COPROC", "CDPATH", "GLOBIGNORE", "ENV",
    }
)  # fmt: skip
_BASH_OWNED_PREFIXES = ("BASH", "COMP_", "READLINE_")
_SPLIT_OR_GLOB = re.compile(r"[ \t\n*?\[]")


class PartialEnvironment(dict[str, str]):
    """What is known of a command's environment: a variable in `unknown`, or (when not `complete`)
    one not in it, is unknown. A command run in the IDE's terminal gets the IDE's environment, which
    the agent does not know; a line that sets a variable itself makes that one unknown."""

    def __init__(self, values: Mapping[str, str] = {}, *, complete: bool = False, unknown: frozenset[str] = frozenset()) -> None:
        super().__init__(values)
        self.complete = complete
        self.unknown = unknown


def faithful_variable(name: str, env: Mapping[str, str]) -> str | None:
    """The value `$name` has in a command run with `env` (empty when it is not set there), or
    None when that is not known: bash sets it itself, or `env` (a PartialEnvironment) does not know it."""
    if name in _BASH_OWNED or name.startswith(_BASH_OWNED_PREFIXES):
        return None
    if isinstance(env, PartialEnvironment):
        if name in env.unknown:
            return None
        if name not in env:
            return "" if env.complete else None
    return env.get(name, "")


def line_environment(line: ParsedLine, env: Mapping[str, str]) -> Mapping[str, str]:
    """The variables known to a line's words: not those the line may set itself (`X=~/.kimi; cat
    $X`), and none (`~` included) when it may set any (`read X`, `printf -v X …`, `eval`)."""
    if line.sets_any_variable:
        return PartialEnvironment()
    if not line.sets_variables:
        return env
    complete = not isinstance(env, PartialEnvironment) or env.complete
    before = env.unknown if isinstance(env, PartialEnvironment) else frozenset()
    return PartialEnvironment(env, complete=complete, unknown=before | line.sets_variables)


def expand_word(word: Word, env: Mapping[str, str], cwd: Path | None) -> list[str] | None:
    """The words `word` becomes (empty unquoted results vanish, as in bash), or None when that
    cannot be known. Globs are matched below `cwd` (or taken as written when `cwd` is None)."""
    pieces = _brace_expanded(word.parts)
    if pieces is None:
        return None
    out: list[str] = []
    for parts in pieces:
        text: list[tuple[str, bool]] = []  # (characters, quoted)
        for index, part in enumerate(parts):
            if part.kind == "text":
                text.append((part.text, part.quoted))
            elif part.kind == "tilde" and index == 0:
                home = faithful_variable("HOME", env)
                if not home:
                    return None
                text.append((home, True))
            elif part.kind == "var":
                value = faithful_variable(part.text, env)
                if value is None or (not part.quoted and _SPLIT_OR_GLOB.search(value)):
                    return None
                text.append((value, part.quoted))  # unquoted, it holds no glob character (above)
            else:
                return None
        joined = "".join(chars for chars, _ in text)
        if not joined and not any(quoted for _, quoted in text):
            continue  # an unquoted empty expansion is no word at all
        globbing = any(not quoted and set(chars) & set("*?[") for chars, quoted in text)
        if globbing and cwd is not None:
            matches = _glob_matches(_glob_pattern(text), cwd)
            if matches is None:
                return None
            out.extend(matches or [joined])
        else:
            out.append(joined)
    return out


def _glob_pattern(text: list[tuple[str, bool]]) -> str:
    """A pattern for `glob` in which the quoted characters are literal."""
    return "".join(_glob.escape(chars) if quoted else chars for chars, quoted in text)


def _glob_matches(pattern: str, cwd: Path) -> list[str] | None:
    """Hidden files included (a superset of what bash matches without `dotglob`)."""
    matches: list[str] = []
    try:
        for match in _glob.iglob(pattern, root_dir=cwd, include_hidden=True):
            if len(matches) >= MAX_GLOB_MATCHES:
                return None
            matches.append(match)
    except (OSError, ValueError):
        return None
    return sorted(matches)


# ---------------------------------------------------------------------------- brace expansion


def _brace_expanded(parts: tuple[Part, ...]) -> list[tuple[Part, ...]] | None:
    """The part lists a word's brace expansions give (one, without a brace expansion), or None.

    Only a word of text parts (and a leading `~`) is expanded; a brace expansion next to a
    variable, a `~` inside it or a `${` is taken as unexpandable."""
    chars = [(c, p.quoted) for p in parts if p.kind == "text" for c in p.text]
    unquoted = "".join(c if not quoted else "\0" for c, quoted in chars)
    if not brace_expands(unquoted):
        return [parts]
    text = "".join(c for c, _ in chars)
    if any(p.kind not in ("text", "tilde") for p in parts[1:]) or parts[0].kind not in ("text", "tilde"):
        return None
    if "${" in text or any(c == "~" and not quoted for c, quoted in chars):
        return None
    lead = [parts[0]] if parts[0].kind == "tilde" else []
    results = _expand_braces(chars)
    if results is None or len(results) > MAX_BRACE_WORDS:
        return None
    return [merged_parts([*lead, *(Part("text", c, q) for c, q in result)]) for result in results]


Chars = list[tuple[str, bool]]


def _expand_braces(chars: Chars) -> list[Chars] | None:
    """bash's brace expansion of a word given as (character, quoted) pairs."""
    start = _find_open(chars, 0)
    while start is not None:
        end, items = _split_braces(chars, start)
        if end is not None and items is not None:
            prefix, suffix = chars[:start], chars[end + 1 :]
            tails = _expand_braces(suffix)
            if tails is None:
                return None
            out: list[Chars] = []
            for item in items:
                inner = _expand_braces(item)
                if inner is None:
                    return None
                for middle in inner:
                    for tail in tails:
                        out.append(prefix + middle + tail)
                        if len(out) > MAX_BRACE_WORDS:
                            return None
            return out
        start = _find_open(chars, start + 1)
    return [chars]


def _find_open(chars: Chars, start: int) -> int | None:
    for index in range(start, len(chars)):
        char, quoted = chars[index]
        if char == "{" and not quoted and not (index and chars[index - 1] == ("$", False)):
            return index
    return None


def _split_braces(chars: Chars, start: int) -> tuple[int | None, list[Chars] | None]:
    """From the `{` at `start`: (its matching `}`, the alternatives), or (None, None) when it does
    not expand (no matching `}`, or neither a top-level `,` nor a `..` sequence)."""
    depth = 0
    commas: list[int] = []
    for index in range(start, len(chars)):
        char, quoted = chars[index]
        if quoted:
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                body = chars[start + 1 : index]
                if commas:
                    bounds = [start, *commas, index]
                    return index, [chars[a + 1 : b] for a, b in itertools.pairwise(bounds)]
                sequence = _sequence("".join(c for c, _ in body)) if not any(q for _, q in body) else None
                if sequence is None:
                    return None, None
                return index, [[(c, False) for c in item] for item in sequence]
        elif char == "," and depth == 1:
            commas.append(index)
    return None, None


_SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


def _sequence(body: str) -> list[str] | None:
    match = _SEQUENCE.fullmatch(body)
    if match is None:
        return None
    first, last, step_text = match.groups()
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if first.lstrip("-").isdigit() != last.lstrip("-").isdigit():
        return None
    if first.lstrip("-").isdigit():
        a, b = int(first), int(last)
        width = max(len(first), len(last)) if (first.lstrip("-").startswith("0") or last.lstrip("-").startswith("0")) else 0
        values = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        if len(values) > MAX_BRACE_WORDS:
            return None
        return [str(v).zfill(width) if width else str(v) for v in values]
    a, b = ord(first), ord(last)
    codes = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
    return [chr(c) for c in codes]


def child_variables(*, known: bool = True) -> dict[str, str]:
    """The environment a Shell command inherits: the agent's without its credentials, or, when it
    runs in the IDE's terminal (`known` False), only what the agent adds and the home directory."""
    from ..kaos.local import NONINTERACTIVE_ENV
    from ..util.child_env import child_environment

    if not known:
        return PartialEnvironment({**NONINTERACTIVE_ENV, "HOME": str(Path.home())})
    return child_environment(dict(NONINTERACTIVE_ENV))
