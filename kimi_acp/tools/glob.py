"""Glob: find paths by pattern inside the workspace (local filesystem)."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from pydantic import Field

from ..wire.types import ToolReturnValue
from .base import Params, Tool, ToolContext, tool_error, tool_ok
from .permits import permit_read

logger = logging.getLogger(__name__)

MAX_MATCHES = 1000
MAX_LISTING = 200
SKIP_DIRS = frozenset({".git"})


class GlobParams(Params):
    pattern: str = Field(
        description="Glob pattern relative to `directory`, e.g. `*.py`, `src/**/*.ts`, `docs/*/index.md`."
    )
    directory: str | None = Field(
        default=None, description="Absolute directory to search in. Defaults to the working directory."
    )
    include_dirs: bool = Field(default=True, description="Also list matching directories, not only files.")


class Glob(Tool[GlobParams]):
    name = "Glob"
    description = (
        "Find files and directories whose path matches a glob pattern (`*` and `?` within one path "
        "component, `[abc]` character sets, `**` for any number of directories), relative to `directory` "
        "(absolute; default: the working directory; outside the workspace the user is asked). Returns matching paths "
        f"relative to `directory`, sorted, at most {MAX_MATCHES}; `.git` is skipped and hidden files are "
        "included. Patterns starting with `**` are rejected because they walk the whole tree: anchor them "
        "in a subdirectory (e.g. `src/**/*.py`) or use Grep with `glob`/`type` to search everything."
    )
    params = GlobParams

    async def run(self, params: GlobParams, ctx: ToolContext) -> ToolReturnValue:
        pattern = params.pattern.strip()
        if not pattern:
            return tool_error("The pattern is empty. Give a glob such as `*.py` or `src/**/*.ts`.")
        directory = ctx.resolve(params.directory) if params.directory else ctx.work_dir
        if not directory.is_dir():
            what = "is not a directory" if directory.exists() else "does not exist"
            return tool_error(f"`{directory}` {what}.")
        await permit_read(ctx, directory, what="List files in")
        if Path(pattern).is_absolute():
            return tool_error(
                "The pattern must be relative to `directory`; put the base path in `directory` instead."
            )
        if pattern.startswith("**"):
            listing = await asyncio.to_thread(_top_level, directory)
            return tool_error(
                f"Pattern `{pattern}` starts with `**`, which would walk the whole directory tree, so it "
                "is not allowed. Anchor it in a subdirectory (e.g. `src/**/*.py`) or use Grep to search file "
                f"contents. Top-level entries of `{directory}`:\n{listing}",
                brief="Pattern starts with **",
            )
        try:
            matches, capped = await asyncio.to_thread(_glob, directory, pattern, params.include_dirs)
        except (ValueError, NotImplementedError, OSError) as exc:
            return tool_error(f"Invalid glob pattern `{pattern}`: {exc}.")
        if not matches:
            return tool_ok("", message=f"No matches found for pattern `{pattern}`.", brief="No matches")
        message = f"Found {len(matches)} matches for pattern `{pattern}`."
        if capped:
            message = (
                f"Only the first {MAX_MATCHES} matches are shown for pattern `{pattern}`; there are more. "
                "Use a more specific pattern or directory."
            )
        return tool_ok("\n".join(matches), message=message, brief=f"{len(matches)} matches")


def _glob(directory: Path, pattern: str, include_dirs: bool) -> tuple[list[str], bool]:
    found: list[str] = []
    for path in directory.glob(pattern):
        rel = path.relative_to(directory)
        if any(part in SKIP_DIRS for part in rel.parts):
            continue
        if not include_dirs and path.is_dir():
            continue
        if len(found) == MAX_MATCHES:
            return sorted(found), True
        found.append(rel.as_posix() or ".")
    return sorted(found), False


def _top_level(directory: Path) -> str:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        return f"(cannot list: {exc.strerror or exc})"
    names = [e.name + ("/" if e.is_dir() else "") for e in entries if e.name not in SKIP_DIRS]
    if len(names) > MAX_LISTING:
        names = [*names[:MAX_LISTING], f"... and {len(names) - MAX_LISTING} more"]
    return "\n".join(names) if names else "(empty)"
