"""Grep: regex search over file contents, with ripgrep when installed and a pure-Python fallback.

Both backends print the same formats (`path:line:text`, `path-line-text` for context, `--` between
groups, `path:count`, a file list), sort by path, and show paths relative to the working directory.
The fallback (used when `rg` is not on PATH; nothing is ever downloaded) handles the common cases:
Python `re` instead of Rust regex syntax; only the `.gitignore` files of the working directory and
of the searched directory, with simplified rules (`*`, `?`, `**`, `[...]`, `!`, trailing `/`,
anchoring by `/`); hidden files and directories skipped like rg; files containing NUL bytes skipped;
files over 50 MB skipped.

Files holding credentials (permissions/sensitive.py) are left out of every output mode (a match
alone would tell the model what a key contains), and the model is told which; searching outside
the workspace asks first, like a read (tools/permits.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import threading
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from ..util.child_env import child_environment
from ..util.globs import glob_to_regex
from ..wire.types import ToolReturnValue
from .base import Params, Tool, ToolContext, cap_output, tool_error, tool_ok
from .permits import holds_credentials, permit_read
from .read import resolve_path, split_lines

logger = logging.getLogger(__name__)

TIMEOUT_S = 20.0
MAX_RG_OUTPUT_BYTES = 20 * 1024 * 1024
MAX_FALLBACK_FILE_BYTES = 50 * 1024 * 1024
DEFAULT_HEAD_LIMIT = 250

OutputMode = Literal["content", "files_with_matches", "count_matches"]

# `type` for the fallback: a small subset of ripgrep's type list.
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": ("*.c", "*.h"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"),
    "cs": ("*.cs",),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "go": ("*.go",),
    "html": ("*.html", "*.htm", "*.xhtml"),
    "java": ("*.java",),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"),
    "json": ("*.json", "*.jsonl"),
    "kotlin": ("*.kt", "*.kts"),
    "lua": ("*.lua",),
    "markdown": ("*.md", "*.markdown", "*.mdx"),
    "md": ("*.md", "*.markdown", "*.mdx"),
    "php": ("*.php",),
    "py": ("*.py", "*.pyi"),
    "rb": ("*.rb", "Gemfile", "Rakefile"),
    "ruby": ("*.rb", "Gemfile", "Rakefile"),
    "rust": ("*.rs",),
    "sh": ("*.sh", "*.bash", "*.zsh", ".bashrc", ".zshrc"),
    "sql": ("*.sql",),
    "swift": ("*.swift",),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "txt": ("*.txt",),
    "xml": ("*.xml", "*.xsd", "*.xsl"),
    "yaml": ("*.yaml", "*.yml"),
}


class GrepParams(Params):
    pattern: str = Field(description="Regular expression to search for in file contents.")
    path: str = Field(
        default=".",
        description=(
            "File or directory to search: absolute, or relative to the working directory (inside it)."
        ),
    )
    glob: str | None = Field(
        default=None,
        description=(
            "Only search files matching this glob, e.g. `*.js`, `*.{ts,tsx}`, `src/**/*.py`; "
            "a leading `!` excludes."
        ),
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description=(
            "`content`: matching lines as `path:line:text` (supports -A/-B/-C/-n); `files_with_matches`: "
            "paths of files with a match; `count_matches`: `path:count` with the number of matches per file."
        ),
    )
    before_context: int | None = Field(
        default=None, ge=0, alias="-B", description="Lines of context before each match (content mode)."
    )
    after_context: int | None = Field(
        default=None, ge=0, alias="-A", description="Lines of context after each match (content mode)."
    )
    context: int | None = Field(
        default=None,
        ge=0,
        alias="-C",
        description="Lines of context before and after each match (content mode).",
    )
    line_number: bool = Field(
        default=True, alias="-n", title="-n", description="Show line numbers (content mode)."
    )
    ignore_case: bool = Field(default=False, alias="-i", title="-i", description="Case-insensitive search.")
    type: str | None = Field(
        default=None,
        description="Only search files of this type (ripgrep type names: py, js, ts, rust, go, ...).",
    )
    head_limit: int = Field(
        default=DEFAULT_HEAD_LIMIT, ge=0, description="Return at most this many output lines (0 = no limit)."
    )
    offset: int = Field(default=0, ge=0, description="Skip this many output lines first (for paging).")
    multiline: bool = Field(default=False, description="Let patterns span lines; `.` also matches newlines.")
    include_ignored: bool = Field(
        default=False,
        description="Also search files ignored by .gitignore and hidden files (`.git` stays skipped).",
    )


class _Autodetect:
    def __repr__(self) -> str:
        return "AUTODETECT"


AUTODETECT = _Autodetect()


@dataclass
class _Outcome:
    lines: list[str] = field(default_factory=list)
    timed_out: bool = False
    note: str = ""  # something the model should know (e.g. errors on some files)
    withheld: list[str] = field(default_factory=list)  # files holding credentials, left out


MAX_WITHHELD_NAMED = 10


class Grep(Tool[GrepParams]):
    name = "Grep"
    description = (
        "Search file contents with a regular expression (ripgrep syntax), recursively from `path` (default: "
        "the working directory). Respects .gitignore and skips hidden and binary files unless "
        "`include_ignored` is true. Filter files with `glob` (e.g. `*.{ts,tsx}`) or `type` (e.g. `py`). "
        "`output_mode`: `files_with_matches` (default; file paths), `content` (matching lines as "
        "`path:line:text`, with -A/-B/-C context lines as `path-line-text` and `--` between groups), "
        "`count_matches` (`path:count`). Paths are relative to the working directory. Results are sorted "
        f"by path; `head_limit` (default {DEFAULT_HEAD_LIMIT}, 0 = no limit) and `offset` page through "
        "the output lines. Use `multiline` for patterns that span lines. Prefer this over `grep`/`rg` in "
        f"Shell. Searches stop after {int(TIMEOUT_S)} s with partial results."
    )
    params = GrepParams

    def __init__(self, ripgrep_path: str | _Autodetect | None = AUTODETECT) -> None:
        """`ripgrep_path`: the `rg` binary; None forces the Python fallback; default: `rg` on PATH."""
        self.ripgrep_path = shutil.which("rg") if isinstance(ripgrep_path, _Autodetect) else ripgrep_path

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolReturnValue:
        if not params.pattern:
            return tool_error("The pattern is empty. Give a regular expression to search for.")
        root = resolve_path(ctx, params.path)
        if isinstance(root, ToolReturnValue):
            return root
        if not root.exists():
            return tool_error(f"`{root}` does not exist.", brief="Path not found")
        await permit_read(ctx, root, what="Search")
        if self.ripgrep_path:
            outcome = await _run_ripgrep(self.ripgrep_path, params, root, ctx.work_dir)
        else:
            if params.type and params.type not in FILE_TYPES:
                return tool_error(
                    f"Unknown file type `{params.type}`. Known types: {', '.join(sorted(FILE_TYPES))}. "
                    "Use `glob` for other extensions."
                )
            try:
                regex = _compile(params)
            except re.error as exc:
                return tool_error(f"Invalid regex pattern `{params.pattern}`: {exc}.", brief="Invalid regex")
            outcome = await _run_fallback(params, regex, root, ctx.work_dir)
        if isinstance(outcome, ToolReturnValue):
            return outcome
        return _to_return_value(outcome, params)


def _to_return_value(outcome: _Outcome, params: GrepParams) -> ToolReturnValue:
    lines = outcome.lines
    total = len(lines)
    suffix = ""
    if outcome.timed_out:
        suffix += f" The search timed out after {int(TIMEOUT_S)} s; results are partial."
        suffix += " Narrow the path or pattern."
    if outcome.note:
        suffix += f" {outcome.note}"
    if outcome.withheld:
        names = ", ".join(f"`{name}`" for name in outcome.withheld[:MAX_WITHHELD_NAMED])
        more = f" and {len(outcome.withheld) - MAX_WITHHELD_NAMED} more" if len(outcome.withheld) > MAX_WITHHELD_NAMED else ""
        suffix += (
            f" {len(outcome.withheld)} file(s) holding credentials were left out of the results: {names}{more}. "
            "ReadFile asks the user before it reads one of them, if you really need it."
        )
    if total == 0:
        return tool_ok("", message="No matches found." + suffix, brief="No matches")
    if params.offset >= total:
        return tool_ok(
            "",
            message=f"No results at offset {params.offset}: there are only {total} result lines." + suffix,
        )
    end = total if params.head_limit == 0 else min(total, params.offset + params.head_limit)
    window = lines[params.offset : end]
    if params.output_mode == "files_with_matches":
        message = f"Found {total} file(s) with matches."
    elif params.output_mode == "count_matches":
        message = f"Found matches in {total} file(s)."
    else:
        message = f"Found {total} line(s) of output."
    if params.offset or end < total:
        message += f" Showing lines {params.offset + 1}-{end} of {total}."
    if end < total:
        message += f" Results truncated to {params.head_limit} lines; use offset={end} to see more."
    output, cut = cap_output("\n".join(window))
    if cut:
        message += " Output was truncated."
    brief = f"{total} file(s)" if params.output_mode != "content" else f"{total} line(s)"
    return tool_ok(output, message=message + suffix, brief=brief)


def _display_path(path: Path, work_dir: Path) -> str:
    try:
        rel = path.relative_to(work_dir)
    except ValueError:
        return str(path)
    return rel.as_posix() if rel.parts else "."


# --------------------------------------------------------------------------- ripgrep


def _rg_args(rg: str, params: GrepParams, target: str) -> list[str]:
    # --null: a NUL after every path, so each line's file is known for sure (see _parse_rg_output);
    # -n always: a line number tells a match (`:`) from a context line (`-`) even when not shown.
    args = [rg, "--color=never", "--sort=path", "--no-require-git", "--null"]
    if params.ignore_case:
        args.append("-i")
    if params.multiline:
        args += ["-U", "--multiline-dotall"]
    if params.output_mode == "content":
        args += ["--no-heading", "--with-filename", "-n"]
        if params.context is not None:
            args += ["-C", str(params.context)]
        if params.before_context is not None:
            args += ["-B", str(params.before_context)]
        if params.after_context is not None:
            args += ["-A", str(params.after_context)]
    elif params.output_mode == "files_with_matches":
        args.append("-l")
    else:
        args += ["--count-matches", "--with-filename"]
    if params.glob:
        args += ["-g", params.glob]
    if params.type:
        args += ["-t", params.type]
    if params.include_ignored:
        args += ["--no-ignore", "--hidden", "-g", "!.git"]
    args += ["-e", params.pattern, "--", target]
    return args


async def _run_ripgrep(rg: str, params: GrepParams, root: Path, work_dir: Path) -> _Outcome | ToolReturnValue:
    target = _display_path(root, work_dir)
    args = _rg_args(rg, params, target)
    try:
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=str(work_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_environment(),  # no process the agent starts holds its credentials
        )
    except OSError as exc:
        return tool_error(f"Failed to run ripgrep (`{rg}`): {exc}.")
    assert proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = bytearray()
    timed_out = False
    overflow = False

    async def pump(stream: asyncio.StreamReader, buf: bytearray, cap: int) -> bool:
        while chunk := await stream.read(65536):
            if len(buf) + len(chunk) > cap:
                buf.extend(chunk[: cap - len(buf)])
                return True
            buf.extend(chunk)
        return False

    try:
        async with asyncio.timeout(TIMEOUT_S):
            overflow, _ = await asyncio.gather(
                pump(proc.stdout, out, MAX_RG_OUTPUT_BYTES), pump(proc.stderr, err, 65536)
            )
            if overflow:
                proc.kill()
            await proc.wait()
    except TimeoutError:
        timed_out = True
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    text = out.decode("utf-8", errors="replace")
    if (timed_out or overflow) and not text.endswith("\n"):
        text = text.rsplit("\n", 1)[0] if "\n" in text else ""  # drop the cut-off last line
    lines, withheld = _parse_rg_output(text, params, work_dir, root)
    note = "Output exceeded 20 MB and was cut; narrow the search." if overflow else ""
    if proc.returncode == 2 and not timed_out and not overflow:
        message = err.decode("utf-8", errors="replace").strip()
        if not lines:
            return tool_error(f"ripgrep failed: {message or 'unknown error'}", brief="Grep failed")
        note = f"Some files could not be searched: {message[:500]}"
    return _Outcome(lines=lines, timed_out=timed_out, note=note, withheld=withheld)


_NUMBERED = re.compile(r"(\d+)([:-])")


def _parse_rg_output(text: str, params: GrepParams, work_dir: Path, approved: Path) -> tuple[list[str], list[str]]:
    """ripgrep's `--null` output as the lines the model sees (`path:line:text`, `path-line-text`,
    `--`, `path`, `path:count`), without the files that hold credentials (returned apart)."""
    if params.output_mode == "files_with_matches":  # each path ends with NUL, not a newline
        records: list[tuple[str | None, str]] = [(name, "") for name in text.replace("\n", "").split("\0") if name]
    else:
        records = [line.partition("\0")[::2] if "\0" in line else (None, line) for line in text.splitlines()]
    lines: list[str] = []
    withheld: list[str] = []
    for name, rest in records:
        if name is None:  # `--` between groups of context
            if lines and lines[-1] != "--":
                lines.append(rest)
            continue
        shown = name.removeprefix("./")
        if holds_credentials(work_dir / shown, approved):
            if shown not in withheld:
                withheld.append(shown)
            continue
        if params.output_mode == "files_with_matches":
            lines.append(shown)
        elif params.output_mode == "count_matches":
            lines.append(f"{shown}:{rest}")
        else:
            number = _NUMBERED.match(rest)
            if number is None:
                lines.append(f"{shown}:{rest}")
                continue
            body = rest[number.end() :]
            lines.append(f"{shown}{number.group(2)}{number.group(0) if params.line_number else ''}{body}")
    while lines and lines[-1] == "--":
        lines.pop()
    return lines, withheld


# --------------------------------------------------------------------------- fallback


def _compile(params: GrepParams) -> re.Pattern[str]:
    flags = re.IGNORECASE if params.ignore_case else 0
    if params.multiline:
        flags |= re.DOTALL | re.MULTILINE
    return re.compile(params.pattern, flags)


@dataclass(frozen=True)
class _Glob:
    regex: re.Pattern[str]
    anchored: bool  # contains a slash: matched against the relative path, else against the name

    @classmethod
    def parse(cls, pattern: str) -> _Glob:
        anchored = "/" in pattern
        return cls(re.compile(glob_to_regex(pattern.lstrip("/"))), anchored)

    def matches(self, rel: str, name: str) -> bool:
        return bool(self.regex.fullmatch(rel if self.anchored else name))


@dataclass(frozen=True)
class _IgnoreRule:
    glob: _Glob
    negated: bool
    dir_only: bool


class _GitIgnore:
    """The rules of one `.gitignore` (simplified: see the module docstring)."""

    def __init__(self, base: Path, text: str) -> None:
        self.base = base
        self.rules: list[_IgnoreRule] = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated:
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            if line.startswith("**/") and "/" not in line[3:]:
                line = line[3:]  # `**/name` is the same as `name`
            self.rules.append(_IgnoreRule(_Glob.parse(line), negated, dir_only))

    @classmethod
    def load(cls, base: Path) -> _GitIgnore | None:
        try:
            return cls(base, (base / ".gitignore").read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None

    def ignored(self, path: Path, is_dir: bool) -> bool:
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return False
        result = False
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.glob.matches(rel, path.name):
                result = not rule.negated
        return result


@dataclass
class _Filters:
    root: Path
    include_ignored: bool
    ignores: list[_GitIgnore]
    globs: list[_Glob]  # a file must match one of these (if any)
    excludes: list[_Glob]  # `!glob`: files and directories matching these are skipped
    types: list[_Glob]

    def skip_dir(self, path: Path) -> bool:
        if path.name == ".git":
            return True
        rel = path.relative_to(self.root).as_posix()
        if any(g.matches(rel, path.name) for g in self.excludes):
            return True
        if self.include_ignored:
            return False
        return path.name.startswith(".") or any(i.ignored(path, True) for i in self.ignores)

    def skip_file(self, path: Path, explicit: bool) -> bool:
        rel = path.relative_to(self.root).as_posix() if not explicit else path.name
        name = path.name
        if self.types and not any(t.matches(rel, name) for t in self.types):
            return True
        if explicit:
            return False  # like rg: a file named explicitly is searched regardless of globs/ignores
        if any(g.matches(rel, name) for g in self.excludes):
            return True
        if self.globs and not any(g.matches(rel, name) for g in self.globs):
            return True
        if self.include_ignored:
            return False
        return name.startswith(".") or any(i.ignored(path, False) for i in self.ignores)


def _make_filters(params: GrepParams, root: Path, work_dir: Path) -> _Filters:
    base = root if root.is_dir() else root.parent
    ignores: list[_GitIgnore] = []
    if not params.include_ignored:
        bases = [work_dir] if (base == work_dir or work_dir in base.parents) else []
        if base not in bases:
            bases.append(base)
        ignores = [g for g in (_GitIgnore.load(b) for b in bases) if g is not None]
    globs: list[_Glob] = []
    excludes: list[_Glob] = []
    if params.glob:
        if params.glob.startswith("!"):
            excludes.append(_Glob.parse(params.glob[1:]))
        else:
            globs.append(_Glob.parse(params.glob))
    types = [_Glob.parse(g) for g in FILE_TYPES.get(params.type or "", ())]
    return _Filters(base, params.include_ignored, ignores, globs, excludes, types)


def _candidate_files(root: Path, filters: _Filters, stop: threading.Event, deadline: float) -> list[Path]:
    if root.is_file():
        return [] if filters.skip_file(root, explicit=True) else [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if stop.is_set() or time.monotonic() > deadline:
            break
        current = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not filters.skip_dir(current / d)]
        found.extend(p for p in (current / f for f in filenames) if not filters.skip_file(p, explicit=False))
    found.sort(key=lambda p: p.relative_to(root).parts)
    return found


def _matching_lines(text: str, regex: re.Pattern[str], multiline: bool) -> tuple[list[str], list[int], int]:
    """(lines, sorted indexes of matching lines, number of matches)."""
    lines = split_lines(text)
    if not multiline:
        hits: list[int] = []
        count = 0
        for index, line in enumerate(lines):
            found = sum(1 for _ in regex.finditer(line))
            if found:
                hits.append(index)
                count += found
        return lines, hits, count
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    matched: set[int] = set()
    count = 0
    for m in regex.finditer(text):
        count += 1
        first = bisect_right(starts, m.start()) - 1
        last = bisect_right(starts, max(m.start(), m.end() - 1)) - 1
        matched.update(range(first, min(last, len(lines) - 1) + 1))
    return lines, sorted(matched), count


def _content_lines(
    shown: str, lines: list[str], hits: list[int], before: int, after: int, numbered: bool
) -> list[list[str]]:
    """Groups of output lines for one file; groups are separated by `--` when context is shown."""
    groups: list[list[str]] = []
    hit_set = set(hits)
    ranges: list[list[int]] = []
    for index in hits:
        lo, hi = max(0, index - before), min(len(lines) - 1, index + after)
        if ranges and lo <= ranges[-1][1] + 1:
            ranges[-1][1] = max(ranges[-1][1], hi)
        else:
            ranges.append([lo, hi])
    for lo, hi in ranges:
        group = []
        for index in range(lo, hi + 1):
            sep = ":" if index in hit_set else "-"
            number = f"{index + 1}{sep}" if numbered else ""
            group.append(f"{shown}{sep}{number}{lines[index]}")
        groups.append(group)
    return groups


def _search(
    params: GrepParams, regex: re.Pattern[str], root: Path, work_dir: Path, stop: threading.Event
) -> _Outcome:
    deadline = time.monotonic() + TIMEOUT_S
    filters = _make_filters(params, root, work_dir)
    outcome = _Outcome()
    with_context = params.output_mode == "content"
    before = after = 0
    if with_context:
        before = params.before_context if params.before_context is not None else (params.context or 0)
        after = params.after_context if params.after_context is not None else (params.context or 0)
    separate = with_context and (before or after)
    unreadable = 0
    for path in _candidate_files(root, filters, stop, deadline):
        if stop.is_set() or time.monotonic() > deadline:
            break
        if holds_credentials(path, root):
            outcome.withheld.append(_display_path(path, work_dir))
            continue
        try:
            if path.stat().st_size > MAX_FALLBACK_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            unreadable += 1
            continue
        if b"\x00" in data:
            continue  # binary
        lines, hits, count = _matching_lines(data.decode("utf-8", errors="replace"), regex, params.multiline)
        if not hits:
            continue
        shown = _display_path(path, work_dir)
        if params.output_mode == "files_with_matches":
            outcome.lines.append(shown)
        elif params.output_mode == "count_matches":
            outcome.lines.append(f"{shown}:{count}")
        else:
            for group in _content_lines(shown, lines, hits, before, after, params.line_number):
                if separate and outcome.lines:
                    outcome.lines.append("--")
                outcome.lines.extend(group)
    outcome.timed_out = time.monotonic() > deadline and not stop.is_set()
    if unreadable:
        outcome.note = f"{unreadable} file(s) could not be read."
    return outcome


async def _run_fallback(params: GrepParams, regex: re.Pattern[str], root: Path, work_dir: Path) -> _Outcome:
    stop = threading.Event()
    try:
        return await asyncio.to_thread(_search, params, regex, root, work_dir, stop)
    except asyncio.CancelledError:
        stop.set()  # the worker thread notices at the next file
        raise
