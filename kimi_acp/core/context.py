"""`context.jsonl`: the model history of a session, appended line by line.

Kimi's format: `{"role": "_system_prompt", "content": ...}` first (frozen when the session is
created), `{"role": "_checkpoint", "id": n}` markers, `{"role": "_usage", "token_count": n}` after
a reply whose provider reported usage (and after a compaction), and one message per line otherwise.
A `_usage` line is only ever a count some model call reported: a Kimi client reads it as one, so
an estimate stays in memory (`token_count` adds it to the last count). `/clear` and compaction
rotate the file to `context_N.jsonl` and start a fresh one, so history is never destroyed.

A rotation writes the new file whole first (`context.jsonl.new`, fsynced), then moves the old one
aside and the new one in, so a full disk or a crash never leaves the session without its history:
`load` finishes a rotation interrupted between the two renames, and a failed write leaves this
object on the history it had. The file is 0600 (`util.fs.open_private`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from ..llm.types import Message
from ..util.fs import (
    atomic_write_text,
    ends_with_newline,
    file_stamp,
    fsync_dir,
    iter_json_objects,
    open_private,
)
from .messages import estimate_tokens

log = logging.getLogger(__name__)


class Context:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.history: list[Message] = []
        self.system_prompt: str | None = None
        self.n_checkpoints = 0
        self.estimated_tokens = 0  # ~chars/4 of prompt + history, kept up to date on every append
        self._counted = 0  # the last count recorded as `_usage`
        self._pending = 0  # ~chars/4 of what came after it (the prompt too, while nothing was counted)
        self._file: IO[str] | None = None
        self._seen: tuple[int, int, int] | None = None  # the file as this object last left it

    @classmethod
    def load(cls, path: Path) -> Context:
        """Read an existing file (torn or unknown lines are skipped); a missing file is empty."""
        _finish_rotation(path)
        ctx = cls(path)
        seen = file_stamp(path)  # before reading: lines another process appends meanwhile show as a change
        for lineno, data in iter_json_objects(path):
            role = data.get("role")
            if role == "_system_prompt":
                ctx.system_prompt = str(data.get("content") or "")
                ctx.estimated_tokens += len(ctx.system_prompt) // 4
                ctx._pending += len(ctx.system_prompt) // 4
            elif role == "_checkpoint":
                ctx.n_checkpoints += 1
            elif role == "_usage":
                count = data.get("token_count")
                if isinstance(count, int):
                    ctx._counted, ctx._pending = count, 0
            elif isinstance(role, str) and not role.startswith("_"):
                try:
                    message = Message.model_validate(data)
                    ctx.history.append(message)
                    ctx.estimated_tokens += estimate_tokens((message,))
                    ctx._pending += estimate_tokens((message,))
                except ValidationError as exc:
                    log.warning("%s:%d: skipping invalid message: %s", path, lineno, exc.errors()[0]["msg"])
        ctx._seen = seen
        return ctx

    def changed_elsewhere(self) -> bool:
        """Whether another process wrote (or rotated) the file since this object last read or wrote it."""
        return self._file is None and file_stamp(self.path) != self._seen

    @property
    def token_count(self) -> int:
        """The size of the history as well as it is known: the last count recorded plus an estimate
        of what came after it. What decides compaction."""
        return self._counted + self._pending

    @property
    def is_new(self) -> bool:
        return self.system_prompt is None and not self.history

    def start(self, system_prompt: str) -> None:
        """Freeze the system prompt of a new session (no-op when one is already recorded)."""
        if self.system_prompt is None:
            self._write({"role": "_system_prompt", "content": system_prompt})
            self.system_prompt = system_prompt
            self.estimated_tokens += len(system_prompt) // 4
            self._pending += len(system_prompt) // 4

    def append(self, messages: Iterable[Message]) -> None:
        """Written before it is kept: a message the disk refused is not in `history` either."""
        for message in messages:
            self._write_raw(message.model_dump_json(exclude_none=True))
            self.history.append(message)
            self.estimated_tokens += estimate_tokens((message,))
            self._pending += estimate_tokens((message,))

    def checkpoint(self) -> None:
        self._write({"role": "_checkpoint", "id": self.n_checkpoints})
        self.n_checkpoints += 1

    def set_token_count(self, count: int) -> None:
        """Record a count a model call reported (never an estimate: see the module's note)."""
        self._write({"role": "_usage", "token_count": count})
        self._counted, self._pending = count, 0

    def rotate(self, system_prompt: str, history: Iterable[Message] = (), token_count: int = 0) -> None:
        """Move the file aside (`context_N.jsonl`) and start over with `history`.

        The new file is complete on disk before the old one moves; this object takes the new
        history only after both renames. An OSError (a full disk) leaves the file and this object
        on the old history."""
        history = list(history)
        lines = [json.dumps({"role": "_system_prompt", "content": system_prompt}, ensure_ascii=False)]
        lines += [message.model_dump_json(exclude_none=True) for message in history]
        if token_count:
            lines.append(json.dumps({"role": "_usage", "token_count": token_count}))
        self._swap_text("".join(line + "\n" for line in lines))
        self.history = history
        self.system_prompt = system_prompt
        self.n_checkpoints = 0
        self.estimated_tokens = len(system_prompt) // 4 + estimate_tokens(history)
        self._counted, self._pending = token_count, (0 if token_count else self.estimated_tokens)
        self._seen = file_stamp(self.path)

    def rewind(self, text: str) -> Context:
        """Move the file aside (`context_N.jsonl`) and start over with `text`, the file as it was
        at an earlier point (/undo, core/undo.py); returns the history loaded from it. Kimi Code
        CLI reverts a context the same way, so the moved-aside file is the record of what was
        taken back. An OSError leaves the file as it was."""
        self._swap_text(text)
        return Context.load(self.path)

    def _swap_text(self, text: str) -> None:
        """`text` becomes the file, whole on disk before the old one moves aside."""
        self.close()
        pending = rotation_path(self.path)
        try:
            atomic_write_text(pending, text, make_parents=False)
            _swap_in(self.path, pending)
        except BaseException:
            try:
                os.unlink(pending)
            except OSError:
                pass
            raise

    def close(self) -> None:
        """Close the file (reopened by the next write). The object forgets it first, so a close
        that fails (a full disk refusing the last flush) never leaves a closed file to write to."""
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()
            finally:
                self._seen = file_stamp(self.path)

    def _write(self, record: dict[str, object]) -> None:
        self._write_raw(json.dumps(record, ensure_ascii=False))

    def _write_raw(self, line: str) -> None:
        if self._file is None:
            # The session folder is made once, by sessions.create: never brought back here after a delete.
            self._file = open_private(self.path, "a", encoding="utf-8")
            if self._file.tell() and not ends_with_newline(self.path):
                self._file.write("\n")  # after a torn last line (crash mid-write), start a fresh one
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except BaseException:  # e.g. a full disk: drop the file; the next write reopens it
            f, self._file = self._file, None
            try:
                f.close()
            except OSError:
                pass
            raise


def rotation_path(path: Path) -> Path:
    """Where a rotation writes the new file before moving it in: `context.jsonl.new`."""
    return path.with_name(path.name + ".new")


def _swap_in(path: Path, pending: Path) -> None:
    """`path` → `context_N.jsonl`, then `pending` → `path`; if the second rename fails, the first
    is undone."""
    rotated: Path | None = None
    if path.exists():
        n = 1
        while (candidate := path.with_name(f"{path.stem}_{n}{path.suffix}")).exists():
            n += 1
        path.rename(candidate)
        rotated = candidate
    try:
        os.replace(pending, path)
    except BaseException:
        if rotated is not None and not path.exists():
            rotated.rename(path)
        raise
    fsync_dir(path.parent)


def _finish_rotation(path: Path) -> None:
    """A rotation a crash interrupted: the new file (complete: it is renamed into place only once
    fsynced) is moved in when the old one is already gone; when the old one is still there the
    rotation never started to move anything, and the leftover is removed."""
    pending = rotation_path(path)
    if not pending.exists():
        return
    try:
        if path.exists():
            pending.unlink()
            log.info("%s: removed a rotation that did not finish", pending)
        else:
            os.replace(pending, path)
            fsync_dir(path.parent)
            log.info("%s: finished a rotation interrupted before the new file was moved in", path)
    except OSError as exc:
        log.warning("%s: could not finish an interrupted rotation: %s", path, exc)
