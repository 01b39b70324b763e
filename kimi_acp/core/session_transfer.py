"""`/export` and `/import`: the conversation to a Markdown file, and a file or another session into it.

Both ask as the tools would: `/export` as WriteFile's edit of that path (a protected path always
asks), `/import` as ReadFile's read of the file (a file holding credentials always asks); only a
regular file is read, and the export is written atomically, 0600 (it may hold secrets). The
commands are declared in `slash_commands.py`; their work is here, loaded with the first use.
"""

from __future__ import annotations

import asyncio
import datetime
import errno
import os
import stat
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import sessions
from ..errors import PermissionDenied
from ..tools.base import ToolRejectedError
from ..util.fs import atomic_write_text
from ..util.regular_file import open_regular, special_kind
from .context import Context
from .messages import estimate_tokens
from .transcript import (
    MAX_IMPORT_BYTES,
    default_export_name,
    export_markdown,
    history_transcript,
    import_message,
    is_importable,
)
from .turn import TurnResult

if TYPE_CHECKING:
    from .slash_host import SlashHost

DONE = TurnResult("finished")


async def export_session(core: SlashHost, raw: str) -> TurnResult:
    """`/export [path]` (`raw`: the path as typed, "" for the default name): the transcript as
    Markdown, asked about as WriteFile's edit of that path would be (a protected path always asks);
    written atomically, 0600: it may hold secrets."""
    from ..tools.permits import permit_edit  # with the first /export, not at start-up

    history = core.context.history
    if not history:
        core.say("No messages to export.")
        return DONE
    now = datetime.datetime.now().astimezone()
    name = default_export_name(core.session.id, now)
    output = _typed_path(core, raw) if raw else core.work_dir / name
    if output.is_dir():
        output = output / name
    description = f"Export this session ({len(history)} messages) to `{output}`"
    refused = await _refusal(permit_edit(core.command_context("/export"), output, description, []))
    if refused is not None:
        core.say(f"Not exported: {refused}")
        return DONE
    text = export_markdown(
        session_id=core.session.id, work_dir=core.work_dir, history=history, token_count=core.context.token_count, now=now
    )
    try:
        await asyncio.to_thread(atomic_write_text, output, text)
    except OSError as exc:
        core.say(f"Failed to write the export file {output}: {exc.strerror or exc}")
        return DONE
    core.say(
        f"Exported {len(history)} messages to {output}\n"
        "Note: the exported file may contain sensitive information; be careful when sharing it."
    )
    return DONE


async def import_into_session(core: SlashHost, target: str) -> TurnResult:
    """`/import <file or session id>` (`target` as typed): a file is asked about as ReadFile's read
    of it would be (a file holding credentials always asks); only a regular file is read."""
    if not target:
        core.say("Usage: /import <file path or session id>")
        return DONE
    path = _typed_path(core, target)
    try:
        st = await asyncio.to_thread(_stat, path)
    except OSError as exc:
        core.say(f"Failed to read {path}: {exc.strerror or exc}")
        return DONE
    if st is None:  # no such file: perhaps a session id
        found = await asyncio.to_thread(_session_import, core, target)
    else:
        found = _file_problem(path, st) or await _import_file(core, path)
    if isinstance(found, str):
        core.say(found)
        return DONE
    content, source, warning = found
    message = import_message(content, source)
    max_size = core.max_context_size
    if max_size and core.context.estimated_tokens + estimate_tokens([message]) >= max_size:
        core.say(f"Cannot import {source}: it would not fit in the model's context ({max_size:,} tokens).")
        return DONE
    core.context.append([message])
    core.say(f"Imported context from {source} ({len(content):,} chars)." + (f"\n{warning}" if warning else ""))
    return DONE


def _typed_path(core: SlashHost, typed: str) -> Path:
    """The path a command's argument names: `~` expanded, relative to the work dir, normalized."""
    return Path(os.path.normpath(core.work_dir / Path(typed).expanduser()))


async def _refusal(asking: Awaitable[None]) -> str | None:
    """Why the approval (a tools/permits.py check) did not let the command go on; None when it did."""
    try:
        await asking
    except ToolRejectedError as exc:
        return f"you declined it{f' ({exc.feedback})' if exc.feedback else ''}."
    except PermissionDenied as exc:
        return str(exc)
    return None


def _stat(path: Path) -> os.stat_result | None:
    """What is at `path` (symlinks followed), None when nothing is; other OSErrors are raised."""
    try:
        return path.stat()
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            return None
        raise


def _file_problem(path: Path, st: os.stat_result) -> str | None:
    """Why the file at `path` cannot be imported, None when it can be (once approved)."""
    if stat.S_ISDIR(st.st_mode):
        return "The path is a directory; give a file to import."
    kind = special_kind(st.st_mode)
    if kind is not None:
        return f"Cannot import {path}: it is {kind}, not a regular file."
    if not is_importable(path):
        return f"Unsupported file type '{path.suffix}': /import takes text files (.md, .txt, .json, .py, .log, ...)."
    if st.st_size > MAX_IMPORT_BYTES:
        return f"The file is too large: at most {MAX_IMPORT_BYTES // (1024 * 1024)} MB can be imported."
    return None


async def _import_file(core: SlashHost, path: Path) -> tuple[str, str, str] | str:
    """The file's content once the user let it be read (asked as ReadFile asks), or why not."""
    from ..tools.permits import permit_read  # with the first /import, not at start-up

    refused = await _refusal(permit_read(core.command_context("/import"), path, what="Import"))
    if refused is not None:
        return f"Not imported: {refused}"
    return await asyncio.to_thread(_read_import, path)


def _read_import(path: Path) -> tuple[str, str, str] | str:
    """(content, source description, warning) of an approved file, or why it cannot be imported."""
    try:
        with open_regular(path) as file:  # a FIFO or a device swapped in since the look is refused
            data = file.read(MAX_IMPORT_BYTES + 1)
    except OSError as exc:
        return f"Cannot import {path}: {exc.strerror or exc}."
    if len(data) > MAX_IMPORT_BYTES:
        return f"The file is too large: at most {MAX_IMPORT_BYTES // (1024 * 1024)} MB can be imported."
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"Cannot import '{path.name}': it is not UTF-8 text."
    if not content.strip():
        return "The file is empty: nothing to import."
    from ..permissions.sensitive import sensitive_reason

    warning = (
        "Warning: this file may hold secrets (API keys, tokens, credentials); they are now part of the session context."
        if sensitive_reason(path) is not None
        else ""
    )
    return content, f"file '{path.name}'", warning


def _session_import(core: SlashHost, target: str) -> tuple[str, str, str] | str:
    """(transcript, source description, "") of another session of the user's, or why not."""
    if target == core.session.id:
        return "Cannot import the current session into itself."
    source = sessions.find(core.work_dir, target) or sessions.find_by_id(target)
    if source is None:
        return f"'{target}' is neither a file nor a session id."
    history = Context.load(source.context_file).history
    if not history:
        return "That session has no messages."
    content = history_transcript(history)
    if len(content.encode("utf-8")) > MAX_IMPORT_BYTES:
        return f"That session is too large to import (over {MAX_IMPORT_BYTES // (1024 * 1024)} MB of text)."
    return content, f"session '{target}'", ""

