"""WriteFile: create, overwrite or append to a text file, after the user approved the diff."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from pydantic import Field

from ..kaos.base import BinaryFileError
from ..util.regular_file import NotRegularFileError
from ..util.visible_text import code_span
from ..wire.types import DiffDisplayBlock, ToolReturnValue
from .base import Params, Tool, ToolContext, real_path, tool_error, tool_ok
from .diff import make_diff_blocks
from .permits import permit_edit
from .read import resolve_path

logger = logging.getLogger(__name__)


def edit_description(ctx: ToolContext, verb: str, path: Path) -> str:
    """What the user approves; an outside edit through a symlink names the file really changed."""
    real = real_path(path)
    if real == path or ctx.in_workspace(path):
        return f"{verb} {code_span(str(path))}"
    return f"{verb} {code_span(str(path))} (through a symbolic link: {code_span(str(real))})"


async def write_or_error(
    ctx: ToolContext, path: Path, text: str, *, append: bool = False
) -> int | ToolReturnValue:
    """Write through kaos; the new size in bytes, or a tool error."""
    if ctx.checkpoints is not None:  # what the file holds now, for /undo
        await ctx.checkpoints.before_edit(path)
    try:
        return await ctx.kaos.write_text(path, text, append=append)
    except PermissionError:
        return tool_error(f"Permission denied: cannot write `{path}`.")
    except IsADirectoryError:
        return tool_error(f"`{path}` is a directory, not a file.")
    except NotRegularFileError as exc:  # it became one since it was read
        return tool_error(str(exc), brief="Not a regular file")
    except OSError as exc:
        logger.debug("writing %s failed", path, exc_info=True)
        return tool_error(f"Failed to write `{path}`: {exc.strerror or exc}.")


class WriteFileParams(Params):
    path: str = Field(
        description="Absolute path of the file, or a path relative to the working directory (inside it)."
    )
    content: str = Field(description="The text to write.")
    mode: Literal["overwrite", "append"] = Field(
        default="overwrite",
        description="`overwrite` replaces the whole file (creating it if needed); `append` adds to its end.",
    )


class WriteFile(Tool[WriteFileParams]):
    name = "WriteFile"
    description = (
        "Write UTF-8 text to a file: `overwrite` (default) creates the file or replaces all of its content; "
        "`append` adds `content` to the end. The parent directory must already exist. Relative paths are "
        "resolved against the working directory and must stay inside it; use absolute paths elsewhere. "
        "The user approves each write after seeing the diff. To change part of an existing file, prefer "
        "StrReplaceFile; for large content, write in chunks (overwrite the first, then append)."
    )
    params = WriteFileParams

    async def run(self, params: WriteFileParams, ctx: ToolContext) -> ToolReturnValue:
        path = resolve_path(ctx, params.path)
        if isinstance(path, ToolReturnValue):
            return path
        parent = await ctx.kaos.stat(path.parent)
        if parent is None or not parent.is_dir:
            return tool_error(
                f"The parent directory `{path.parent}` does not exist. Create it first (e.g. `mkdir -p` in "
                "Shell), then write the file.",
                brief="Parent directory not found",
            )
        current = await ctx.kaos.stat(path)
        if current is not None and current.is_dir:
            return tool_error(f"`{path}` is a directory, not a file.")
        if current is not None and not current.is_file:  # a FIFO, a device, a socket
            return tool_error(str(NotRegularFileError(path, current.mode)), brief="Not a regular file")
        try:  # through the kaos even when not on disk: the editor may hold an unsaved buffer of it
            old_text = await ctx.kaos.read_text(path)
        except FileNotFoundError:
            old_text = ""
        except BinaryFileError:
            return tool_error(
                f"`{path}` is a binary file (or not UTF-8 text); WriteFile only edits text files."
            )
        except NotRegularFileError as exc:
            return tool_error(str(exc), brief="Not a regular file")
        except OSError as exc:
            return tool_error(f"Failed to read the current content of `{path}`: {exc.strerror or exc}.")

        append = params.mode == "append"
        new_text = old_text + params.content if append else params.content
        blocks: list[DiffDisplayBlock] = make_diff_blocks(str(path), old_text, new_text)
        description = edit_description(ctx, "Write file", path)
        await permit_edit(ctx, path, description, blocks)

        size = await write_or_error(ctx, path, params.content, append=append)
        if isinstance(size, ToolReturnValue):
            return size
        verb = "appended to" if append else "overwritten"
        return tool_ok(
            "",
            message=f"File successfully {verb}. Current size: {size} bytes.",
            display=blocks,
        )
