"""Glob: find paths by pattern inside the workspace (local filesystem).

A match is decided on its real path, as ReadFile and Grep decide: one that holds credentials or
the agent's own files (a `vendor -> ~/.kimi` link would list every session) or that leads out
of the workspace through a symbolic link is left out, and the model is told how many and why.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from ..wire.types import ToolReturnValue
from .base import Params, Tool, ToolContext, tool_error, tool_ok
from .permits import holds_credentials, leads_outside, permit_read

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
        "(absolute; default: the working directory; outside the workspace the user is asked). Returns "
        f"matching paths relative to `directory`, sorted, at most {MAX_MATCHES}; `.git` is skipped and "
        "hidden files are included; matches holding credentials or leading out of the workspace through a "
        "symbolic link are left out (the result says how many). Patterns starting with `**` are rejected "
        "because they walk the whole tree: anchor them in a subdirectory (e.g. `src/**/*.py`) or use Grep "
        "with `glob`/`type` to search everything."
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

        def left_out(path: Path) -> str | None:
            if holds_credentials(path, directory):
                return CREDENTIALS
            return OUTSIDE if leads_outside(ctx, path, directory) else None

        try:
            found = await asyncio.to_thread(_glob, directory, pattern, params.include_dirs, left_out)
        except (ValueError, NotImplementedError, OSError) as exc:
            return tool_error(f"Invalid glob pattern `{pattern}`: {exc}.")
        matches = found.matches
        suffix = "".join(f" {count} {LEFT_OUT[why]}" for why, count in sorted(found.left_out.items()))
        if not matches:
            message = f"No matches found for pattern `{pattern}`.{suffix}"
            return tool_ok("", message=message, brief="No matches")
        message = f"Found {len(matches)} matches for pattern `{pattern}`."
        if found.capped:
            message = (
                f"Only the first {MAX_MATCHES} matches are shown for pattern `{pattern}`; there are more. "
                "Use a more specific pattern or directory."
            )
        return tool_ok("\n".join(matches), message=message + suffix, brief=f"{len(matches)} matches")


CREDENTIALS, OUTSIDE = "credentials", "outside"
LEFT_OUT = {
    CREDENTIALS: "match(es) holding credentials or the agent's own files ($KIMI_SHARE_DIR) were left out "
    "(not even their names are listed).",
    OUTSIDE: "match(es) leading out of the workspace through a symbolic link were left out; ReadFile, or "
    "Glob with the linked directory as `directory`, asks the user first.",
}


@dataclass
class _Found:
    matches: list[str] = field(default_factory=list)
    capped: bool = False
    left_out: dict[str, int] = field(default_factory=dict)  # why -> how many


def _glob(
    directory: Path, pattern: str, include_dirs: bool, left_out: Callable[[Path], str | None]
) -> _Found:
    found = _Found()
    for path in directory.glob(pattern):
        rel = path.relative_to(directory)
        if any(part in SKIP_DIRS for part in rel.parts):
            continue
        if not include_dirs and path.is_dir():
            continue
        why = left_out(path)
        if why is not None:
            found.left_out[why] = found.left_out.get(why, 0) + 1
            continue
        if len(found.matches) == MAX_MATCHES:
            found.capped = True
            break
        found.matches.append(rel.as_posix() or ".")
    found.matches.sort()
    return found


def _top_level(directory: Path) -> str:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        return f"(cannot list: {exc.strerror or exc})"
    names = [e.name + ("/" if e.is_dir() else "") for e in entries if e.name not in SKIP_DIRS]
    if len(names) > MAX_LISTING:
        names = [*names[:MAX_LISTING], f"... and {len(names) - MAX_LISTING} more"]
    return "\n".join(names) if names else "(empty)"
