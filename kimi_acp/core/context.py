"""`context.jsonl`: the model history of a session, appended line by line.

Kimi's format: `{"role": "_system_prompt", "content": ...}` first (frozen when the session is
created), `{"role": "_checkpoint", "id": n}` markers, `{"role": "_usage", "token_count": n}` after
steps, and one message per line otherwise. `/clear` and compaction rotate the file to
`context_N.jsonl` and start a fresh one, so history is never destroyed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from ..llm.types import Message
from ..util.fs import ends_with_newline, iter_json_objects
from .messages import estimate_tokens

log = logging.getLogger(__name__)


class Context:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.history: list[Message] = []
        self.system_prompt: str | None = None
        self.token_count = 0
        self.n_checkpoints = 0
        self.estimated_tokens = 0  # ~chars/4 of prompt + history, kept up to date on every append
        self._file: TextIO | None = None
        self._seen: tuple[int, int, int] | None = None  # the file as this object last left it

    @classmethod
    def load(cls, path: Path) -> Context:
        """Read an existing file (torn or unknown lines are skipped); a missing file is empty."""
        ctx = cls(path)
        seen = _stamp(path)  # before reading: lines another process appends meanwhile show as a change
        for lineno, data in iter_json_objects(path):
            role = data.get("role")
            if role == "_system_prompt":
                ctx.system_prompt = str(data.get("content") or "")
                ctx.estimated_tokens += len(ctx.system_prompt) // 4
            elif role == "_checkpoint":
                ctx.n_checkpoints += 1
            elif role == "_usage":
                count = data.get("token_count")
                if isinstance(count, int):
                    ctx.token_count = count
            elif isinstance(role, str) and not role.startswith("_"):
                try:
                    message = Message.model_validate(data)
                    ctx.history.append(message)
                    ctx.estimated_tokens += estimate_tokens((message,))
                except ValidationError as exc:
                    log.warning("%s:%d: skipping invalid message: %s", path, lineno, exc.errors()[0]["msg"])
        ctx._seen = seen
        return ctx

    def changed_elsewhere(self) -> bool:
        """Whether another process wrote (or rotated) the file since this object last read or wrote it."""
        return self._file is None and _stamp(self.path) != self._seen

    @property
    def is_new(self) -> bool:
        return self.system_prompt is None and not self.history

    def start(self, system_prompt: str) -> None:
        """Freeze the system prompt of a new session (no-op when one is already recorded)."""
        if self.system_prompt is None:
            self.system_prompt = system_prompt
            self.estimated_tokens += len(system_prompt) // 4
            self._write({"role": "_system_prompt", "content": system_prompt})

    def append(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.history.append(message)
            self.estimated_tokens += estimate_tokens((message,))
            self._write_raw(message.model_dump_json(exclude_none=True))

    def checkpoint(self) -> None:
        self._write({"role": "_checkpoint", "id": self.n_checkpoints})
        self.n_checkpoints += 1

    def set_token_count(self, count: int) -> None:
        self.token_count = count
        self._write({"role": "_usage", "token_count": count})

    def rotate(self, system_prompt: str, history: Iterable[Message] = (), token_count: int = 0) -> None:
        """Move the file aside (`context_N.jsonl`) and start over with `history`."""
        self.close()
        if self.path.exists():
            n = 1
            while (rotated := self.path.with_name(f"{self.path.stem}_{n}{self.path.suffix}")).exists():
                n += 1
            self.path.rename(rotated)
        self.history = []
        self.system_prompt = None
        self.n_checkpoints = 0
        self.token_count = 0
        self.estimated_tokens = 0
        self.start(system_prompt)
        self.append(history)
        if token_count:
            self.set_token_count(token_count)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._seen = _stamp(self.path)

    def _write(self, record: dict[str, object]) -> None:
        self._write_raw(json.dumps(record, ensure_ascii=False))

    def _write_raw(self, line: str) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
            if self._file.tell() and not ends_with_newline(self.path):
                self._file.write("\n")  # after a torn last line (crash mid-write), start a fresh one
        self._file.write(line + "\n")
        self._file.flush()


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
