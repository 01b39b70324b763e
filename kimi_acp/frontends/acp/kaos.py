"""KAOS through the ACP client: files via `fs/*`, commands in the client's terminal.

Routed only for what the client advertised; everything else stays local. Reading through the
client sees unsaved editor buffers, writing through it lands edits in the editor, and a command in
a client terminal shows its live output inside the tool call card.

The agent's own files (everything under the share dir: plans, sessions) never go through the
editor, which may refuse paths outside the project (acpx: "Path is outside allowed cwd subtree").
The editor is asked to read only a file that exists on disk. A file the editor refuses to read is
read from disk; a write it refuses outside the workspace (which the user approved as such) is
written to disk. Any other refusal reaches the tool's error with the client's reason
(`data.details`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ToolError
from ...kaos.base import BinaryFileError, CommandResult, CommandSandbox, FileStat, TextWindow, window_of_text
from ...kaos.local import NONINTERACTIVE_ENV, LocalKaos, user_shell
from ...util.share_dir import in_share_dir
from .client_calls import refusal_text

if TYPE_CHECKING:
    from acp.interfaces import Client

log = logging.getLogger(__name__)
SNIFF_BYTES = 8192
# Files bigger than this on disk are read from the editor a window at a time (see `read_lines`).
WINDOWED_READ_BYTES = 1024 * 1024
CLEANUP_TIMEOUT_S = 2.0


class ClientTerminalFailed(ToolError):
    """The client's terminal failed while a command ran in it; the message says what it answered."""


class EditorRefused(ToolError, OSError):
    """`fs/read_text_file` failed for a file that exists on disk. Some editors (Zed) refuse files
    outside the project; the file is then read locally — ReadFile needs no approval either way, and
    the workspace rules (relative paths, secrets) were applied before the read."""


@dataclass(frozen=True)
class ClientCapabilities:
    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> ClientCapabilities:
        raw = raw or {}
        fs = raw.get("fs")
        if not isinstance(fs, dict):
            fs = {}
        return cls(
            read_text_file=fs.get("readTextFile") is True,
            write_text_file=fs.get("writeTextFile") is True,
            terminal=raw.get("terminal") is True,
        )


class AcpKaos:
    """A Kaos for one ACP session.

    `on_terminal(tool_call_id, terminal_id)` is called as soon as a command's client terminal
    exists, so the session can embed it in the tool call card before the command ends.
    `session_of()` names the session a call is made for: a subagent's child session while its work
    runs (frontends/acp/children.py), else this one.
    """

    name = "acp"

    def __init__(self, connection: Client, session_id: str, capabilities: ClientCapabilities) -> None:
        self._conn = connection
        self._root_session_id = session_id
        self._caps = capabilities
        # Commands run in the IDE's terminal get the IDE's environment, which the agent does not
        # know (permissions/shell_expand.py reads no variable of it but those it sets).
        self.command_environment_known = not capabilities.terminal
        self.on_terminal: Callable[[str, str], None] | None = None
        self.session_of: Callable[[], str] | None = None
        # The session's workspace roots (the server sets it once the core exists); None: unknown,
        # so no refused write falls back to the disk.
        self.workspace: Callable[[], Sequence[Path]] | None = None
        self._local = LocalKaos()
        self._cleanups: set[asyncio.Future[None]] = set()

    @property
    def _session_id(self) -> str:
        return self.session_of() if self.session_of is not None else self._root_session_id

    # ------------------------------------------------------------------ files

    def _editor_reads(self, path: Path) -> bool:
        return self._caps.read_text_file and not in_share_dir(path)

    async def read_text(self, path: Path) -> str:
        if not self._editor_reads(path):
            return await self._local.read_text(path)
        on_disk = await self._check_on_disk(path)
        if on_disk is None:  # not there: the disk says so, and the editor is not asked
            return await self._local.read_text(path)
        try:
            return await self._editor_read(path, on_disk)
        except EditorRefused:
            return await self._local.read_text(path)  # the file is on disk: read it ourselves

    async def read_lines(
        self, path: Path, offset: int, limit: int, *, max_line_chars: int, max_chars: int
    ) -> TextWindow:
        """Through the editor (it has the unsaved buffer); a big file only a window at a time.

        Files up to WINDOWED_READ_BYTES on disk and tails are read whole, which
        gives the exact line count. For bigger files the editor is asked for `line`/`limit` (one
        line more than needed, to tell whether the file goes on), so only the window crosses
        the connection; the total is then known only when the window reaches the end.
        """
        limits = {"max_line_chars": max_line_chars, "max_chars": max_chars}
        if not self._editor_reads(path):
            return await self._local.read_lines(path, offset, limit, **limits)
        on_disk = await self._check_on_disk(path)
        if on_disk is None:
            return await self._local.read_lines(path, offset, limit, **limits)
        if offset > 0 and on_disk.size > WINDOWED_READ_BYTES:
            try:
                text = await self._editor_read(path, on_disk, line=offset, limit=limit + 1)
            except OSError:
                text = None  # some editors refuse a line past the end: read it whole to say so
            if text is not None:
                window = window_of_text(text, 1, limit, **limits)
                got = window.total or 0
                if 0 < got <= limit + 1:  # the editor sent the window we asked for
                    total = None if got > limit else offset - 1 + got
                    return TextWindow(window.lines, offset, total, window.cut)
                if got > limit + 1:  # it ignored line/limit and sent the whole file
                    return window_of_text(text, offset, limit, **limits)
        try:
            text = await self._editor_read(path, on_disk)
        except EditorRefused:  # e.g. Zed, for a file outside the project: the disk has it
            return await self._local.read_lines(path, offset, limit, **limits)
        return window_of_text(text, offset, limit, **limits)

    async def _check_on_disk(self, path: Path) -> FileStat | None:
        """The file's stat on disk, refusing directories and (by a sniff of its head) binary files."""
        on_disk = await self._local.stat(path)
        if on_disk is not None:
            if on_disk.is_dir:
                raise IsADirectoryError(f"{path} is a directory")
            head = await self._local.read_bytes(path, SNIFF_BYTES)
            if b"\x00" in head:
                raise BinaryFileError(f"{path} looks like a binary file (NUL bytes)")
        return on_disk

    async def _editor_read(self, path: Path, on_disk: FileStat, **window: int) -> str:
        """`fs/read_text_file` of a file that is on disk; EditorRefused when the editor says no."""
        try:
            response = await self._conn.read_text_file(session_id=self._session_id, path=str(path), **window)
        except Exception as exc:
            reason = refusal_text(exc)
            log.info("the editor refused to read %s (%s); reading it from disk", path, reason)
            raise EditorRefused(f"the editor could not read {path}: {reason}") from None
        return response.content

    async def read_bytes(self, path: Path, limit: int | None = None) -> bytes:
        return await self._local.read_bytes(path, limit)

    async def write_text(self, path: Path, text: str, *, append: bool = False) -> int:
        if not self._caps.write_text_file or in_share_dir(path):
            return await self._local.write_text(path, text, append=append)
        if append:
            try:
                text = await self.read_text(path) + text
            except FileNotFoundError:
                pass
        try:
            await self._conn.write_text_file(session_id=self._session_id, path=str(path), content=text)
        except Exception as exc:
            reason = refusal_text(exc)
            if not self._outside_workspace(path):
                raise OSError(f"the editor could not write {path}: {reason}") from None
            # The user approved this write as one outside the workspace: the editor declining to
            # hold it (acpx: outside the project) does not undo that. Reads do the same.
            log.info("the editor refused to write %s (%s); writing it to disk", path, reason)
            return await self._local.write_text(path, text)
        return len(text.encode("utf-8"))  # what we wrote, not a possibly stale size on disk

    def _outside_workspace(self, path: Path) -> bool:
        """Whether `path` really lies outside every workspace root, as the edit's approval decided
        (real paths: tools/base.ToolContext.in_workspace). Unknown roots: not known to be outside."""
        if self.workspace is None:
            return False
        real = Path(os.path.realpath(path))
        for root in self.workspace():
            base = Path(os.path.realpath(root))
            if real == base or base in real.parents:
                return False
        return True

    async def stat(self, path: Path) -> FileStat | None:
        return await self._local.stat(path)

    # ------------------------------------------------------------------ commands

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        output_limit: int,
        tool_call_id: str | None = None,
        sandbox: CommandSandbox | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        if not self._caps.terminal:
            return await self._local.run_command(
                command, cwd=cwd, timeout=timeout, output_limit=output_limit, tool_call_id=tool_call_id, sandbox=sandbox,
                extra_env=extra_env,
            )
        from acp.schema import EnvVariable

        # In a sandbox, the IDE runs the sandbox's launcher (it runs on this machine): the command
        # is as confined in the client's terminal as in ours (docs/security.md).
        argv = [user_shell(), "-c", command]
        if sandbox is not None:
            argv = sandbox.wrap(argv, cwd)
        try:
            created = await self._conn.create_terminal(
                session_id=self._session_id,
                command=argv[0],
                args=argv[1:],
                cwd=str(cwd),
                env=[EnvVariable(name=k, value=v) for k, v in {**NONINTERACTIVE_ENV, **(extra_env or {})}.items()],
                output_byte_limit=output_limit,
            )
        except Exception as exc:  # e.g. acpx: "Permission denied for terminal/create"
            raise OSError(f"the editor did not open a terminal: {refusal_text(exc)}") from None
        terminal_id = created.terminal_id
        try:
            if tool_call_id is not None and self.on_terminal is not None:
                self.on_terminal(tool_call_id, terminal_id)
            timed_out = False
            try:
                exit_status = await asyncio.wait_for(
                    self._conn.wait_for_terminal_exit(session_id=self._session_id, terminal_id=terminal_id), timeout
                )
            except TimeoutError:
                timed_out = True
                exit_status = None
                await self._bounded(self._conn.kill_terminal(session_id=self._session_id, terminal_id=terminal_id))
            output = await self._conn.terminal_output(session_id=self._session_id, terminal_id=terminal_id)
        except BaseException as exc:
            # Cancelled (session/cancel) or the client failed: stop the command and free the
            # terminal without waiting for the client's answers — the turn must end now.
            task = asyncio.ensure_future(self._kill_and_release(terminal_id))
            self._cleanups.add(task)
            task.add_done_callback(self._cleanups.discard)
            if isinstance(exc, Exception):
                raise ClientTerminalFailed(f"the editor's terminal failed: {refusal_text(exc)}") from None
            raise
        await self._bounded(self._conn.release_terminal(session_id=self._session_id, terminal_id=terminal_id))
        status = output.exit_status or exit_status
        exit_code = getattr(status, "exit_code", None)
        signal = getattr(status, "signal", None)
        return CommandResult(
            output=output.output,
            exit_code=None if timed_out else exit_code,
            signal=signal,
            timed_out=timed_out,
            truncated=bool(output.truncated),
            terminal_id=terminal_id,
        )

    async def _kill_and_release(self, terminal_id: str) -> None:
        await self._bounded(self._conn.kill_terminal(session_id=self._session_id, terminal_id=terminal_id))
        await self._bounded(self._conn.release_terminal(session_id=self._session_id, terminal_id=terminal_id))

    @staticmethod
    async def _bounded(awaitable: Any) -> None:
        with contextlib.suppress(Exception, asyncio.TimeoutError):
            await asyncio.wait_for(awaitable, CLEANUP_TIMEOUT_S)
