"""ReadFile: numbered text lines of a file, a window at a time; files holding credentials and files
outside the workspace only after the user approved (tools/permits.py); never non-text."""

from __future__ import annotations

import logging
from pathlib import Path, PurePath

from pydantic import Field, field_validator

from ..kaos.base import BinaryFileError, TextWindow
from ..util.regular_file import NotRegularFileError
from ..wire.types import ToolReturnValue
from .base import MAX_LINE_CHARS, TRUNCATED_MARK, Params, Tool, ToolContext, real_path, tool_error, tool_ok
from .permits import permit_read

logger = logging.getLogger(__name__)

MAX_LINES = 1000
MAX_TAIL_LINES = 1000
MAX_READ_BYTES = 100 * 1024

IMAGE_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff", ".ico", ".heic", ".heif", ".avif"}
)
VIDEO_SUFFIXES = frozenset(
    {".mp4", ".mov", ".avi", ".mkv", ".webm", ".m4v", ".flv", ".wmv", ".mpg", ".mpeg", ".3gp"}
)

def resolve_path(ctx: ToolContext, raw: str) -> Path | ToolReturnValue:
    """The absolute path a tool argument names, or a tool error.

    Relative paths are taken from the work dir and must stay inside the workspace, so that
    `../x` cannot silently leave it; absolute paths may point anywhere (approval rules apply).
    """
    if not raw.strip():
        return tool_error(
            "The path is empty. Give an absolute path or one relative to the working directory."
        )
    path = ctx.resolve(raw)
    if not Path(raw).expanduser().is_absolute() and not ctx.in_workspace(path):
        real = real_path(path)
        where = f"`{path}`" if real == path else f"`{path}`, a symbolic link to `{real}`"
        extra = " and the additional workspace directories" if ctx.additional_dirs else ""
        return tool_error(
            f"`{raw}` resolves to {where}, which is outside the working directory `{ctx.work_dir}`{extra}. "
            "Use an absolute path for files outside the working directory."
        )
    return path


def media_kind(path: PurePath) -> str | None:
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix in VIDEO_SUFFIXES:
        return "video"
    return None


def split_lines(text: str) -> list[str]:
    """Lines as `cat -n` and grep count them (only "\\n" ends a line), without line endings."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


async def read_text_or_error(ctx: ToolContext, path: Path, *, what: str = "read") -> str | ToolReturnValue:
    """Read through kaos, turning the expected failures into errors the model can act on."""
    try:
        return await ctx.kaos.read_text(path)
    except (OSError, BinaryFileError) as exc:
        return read_error(path, exc, what)


async def read_window_or_error(
    ctx: ToolContext, path: Path, line_offset: int, n_lines: int
) -> TextWindow | ToolReturnValue:
    """The lines ReadFile shows, read through kaos without loading the whole file."""
    try:
        return await ctx.kaos.read_lines(
            path, line_offset, n_lines, max_line_chars=MAX_LINE_CHARS, max_chars=MAX_READ_BYTES
        )
    except (OSError, BinaryFileError) as exc:
        return read_error(path, exc, "read")


def read_error(path: Path, exc: OSError | BinaryFileError, what: str = "read") -> ToolReturnValue:
    """An expected read failure as an error the model can act on."""
    if isinstance(exc, FileNotFoundError):
        return tool_error(f"`{path}` does not exist.", brief="File not found")
    if isinstance(exc, IsADirectoryError):
        return tool_error(f"`{path}` is a directory, not a file. Use Glob to list its contents.")
    if isinstance(exc, NotADirectoryError):
        return tool_error(
            f"`{path}` does not exist (a parent of it is not a directory).", brief="File not found"
        )
    if isinstance(exc, BinaryFileError):
        return tool_error(f"`{path}` is a binary file (or not UTF-8 text) and cannot be {what} as text.")
    if isinstance(exc, NotRegularFileError):
        return tool_error(str(exc), brief="Not a regular file")
    if isinstance(exc, PermissionError):
        return tool_error(f"Permission denied: cannot read `{path}`.")
    logger.debug("reading %s failed", path, exc_info=exc)
    return tool_error(f"Failed to read `{path}`: {getattr(exc, 'strerror', None) or exc}.")


class ReadFileParams(Params):
    path: str = Field(
        description="Absolute path of the file, or a path relative to the working directory (inside it)."
    )
    line_offset: int = Field(
        default=1,
        ge=-MAX_TAIL_LINES,
        description=(
            "1-based line to start reading at. A negative value reads the last N lines "
            f"(e.g. -50 for the last 50, at most -{MAX_TAIL_LINES}). 0 is invalid."
        ),
    )
    n_lines: int = Field(
        default=MAX_LINES, ge=1, le=MAX_LINES, description=f"How many lines to read (1-{MAX_LINES})."
    )

    @field_validator("line_offset")
    @classmethod
    def _not_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError(
                "line_offset must not be 0: use 1 for the first line or a negative value for the tail"
            )
        return value


class ReadFile(Tool[ReadFileParams]):
    name = "ReadFile"
    description = (
        "Read a UTF-8 text file. Output is numbered like `cat -n` (6-wide line number, a tab, the line). "
        f"Reads up to {MAX_LINES} lines per call starting at `line_offset` (1-based; negative = the last N "
        f"lines); lines longer than {MAX_LINE_CHARS} characters are cut and marked `{TRUNCATED_MARK}`, and "
        f"one read returns at most {MAX_READ_BYTES // 1024} KiB. The result message gives the total line "
        "count and the `line_offset` to continue with. Relative paths are resolved against the working "
        "directory and must stay inside it; use absolute paths for other files. Directories, images, videos, "
        "binary files are refused; files holding credentials (.env, private keys, credential files) and files "
        "outside the working directory are read only if the user approves. Prefer this over "
        "`cat`, `head` or `tail` in Shell; read several files in parallel when you need them."
    )
    params = ReadFileParams

    async def run(self, params: ReadFileParams, ctx: ToolContext) -> ToolReturnValue:
        path = resolve_path(ctx, params.path)
        if isinstance(path, ToolReturnValue):
            return path
        kind = media_kind(path)
        if kind is not None:
            return tool_error(
                f"`{path}` is {'an' if kind == 'image' else 'a'} {kind} file and cannot be read as text. "
                "Use other appropriate tools to view it.",
                brief=f"{kind.capitalize()} file",
            )
        await permit_read(ctx, path, what="Read file")
        window = await read_window_or_error(ctx, path, params.line_offset, params.n_lines)
        if isinstance(window, ToolReturnValue):
            return window
        return _render(window, params.n_lines)


def _render(window: TextWindow, n_lines: int) -> ToolReturnValue:
    """Number the window's lines like `cat -n`, within the byte cap, and say where to go on."""
    total = window.total
    if total == 0:
        return tool_ok("", message="The file is empty.", brief="Empty file")
    if not window.lines:
        extent = "" if total is None else f", which has {total} lines"
        return tool_error(
            f"line_offset {window.start} is past the end of the file{extent}.",
            brief="Offset past end of file",
        )
    out: list[str] = []
    size = 0
    long_lines = 0
    hit_byte_cap = False
    for index, line in enumerate(window.lines[:n_lines]):
        was_cut = index in window.cut
        if was_cut:
            line += TRUNCATED_MARK
        rendered = f"{window.start + index:6d}\t{line}\n"
        cost = len(rendered.encode("utf-8"))
        if out and size + cost > MAX_READ_BYTES:
            hit_byte_cap = True
            break
        out.append(rendered)
        size += cost
        long_lines += was_cut
    count = len(out)
    first, last = window.start, window.start + count - 1
    of_total = "" if total is None else f" of {total}"
    message = f"Read {count} line{'s' if count != 1 else ''} ({first}-{last}){of_total}."
    if long_lines:
        message += f" {long_lines} line(s) longer than {MAX_LINE_CHARS} characters were truncated."
    if total is not None and last >= total:
        message += " End of file reached."
    elif hit_byte_cap or count < n_lines:  # the kaos stops early only at the byte cap
        message += (
            f" Output was truncated at {MAX_READ_BYTES // 1024} KiB. Use line_offset={last + 1} to continue."
        )
    else:
        message += f" Use line_offset={last + 1} to continue."
    return tool_ok("".join(out), message=message, brief=f"Read {count} lines")
