"""`wire.jsonl`: the record of every turn, written merged and read back tolerantly.

Format (Kimi's): a first line `{"type": "metadata", "protocol_version": "1.10"}`, then one line
`{"timestamp": <unix float>, "message": {"type", "payload"}}` per message. Consecutive streamed
chunks are merged before they are written (text with text, think with think, a tool call with its
argument parts), so a 2,000-chunk answer is one line, not 2,000. Each line is written whole and
flushed to the OS; nothing is fsynced per message. A torn last line is skipped on read.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..util.fs import ends_with_newline, iter_json_objects, open_private
from .serde import WireDecodeError, from_envelope, to_envelope
from .types import (
    WIRE_PROTOCOL_VERSION,
    FunctionBody,
    TextPart,
    ThinkPart,
    ToolCall,
    ToolCallPart,
    WireMessage,
)

log = logging.getLogger(__name__)


class _Pending:
    """A mergeable message being accumulated (chunks joined once, at flush: no O(n²) concat)."""

    __slots__ = ("chunks", "encrypted", "first", "kind", "timestamp")

    def __init__(self, message: TextPart | ThinkPart | ToolCall, timestamp: float) -> None:
        self.first = message
        self.timestamp = timestamp
        self.encrypted = message.encrypted if isinstance(message, ThinkPart) else None
        if isinstance(message, TextPart):
            self.kind, self.chunks = "text", [message.text]
        elif isinstance(message, ThinkPart):
            self.kind, self.chunks = "think", [message.think]
        else:
            self.kind, self.chunks = "tool_call", [message.function.arguments or ""]

    def absorb(self, message: Any) -> bool:
        if self.kind == "text" and isinstance(message, TextPart):
            self.chunks.append(message.text)
        elif self.kind == "think" and isinstance(message, ThinkPart):
            self.chunks.append(message.think)
            if message.encrypted:
                self.encrypted = message.encrypted
        elif self.kind == "tool_call" and isinstance(message, ToolCallPart):
            self.chunks.append(message.arguments_part or "")
        else:
            return False
        return True

    def build(self) -> WireMessage:
        joined = "".join(self.chunks)
        if self.kind == "text":
            return TextPart(text=joined)
        if self.kind == "think":
            return ThinkPart(think=joined, encrypted=self.encrypted)
        call = self.first
        assert isinstance(call, ToolCall)
        arguments = joined if (joined or call.function.arguments is not None) else None
        return ToolCall(
            id=call.id, function=FunctionBody(name=call.function.name, arguments=arguments), extras=call.extras
        )


class MessageMerger:
    """Joins streamed chunks into whole messages, as wire.jsonl stores them: `feed` returns what is
    complete so far, `flush` the message still being accumulated, each with the time it began
    (`clock()` when its first chunk came). The recorder writes them; a subagent's stream is
    forwarded through one (its text one part per step, its tool calls with their whole arguments)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._pending: _Pending | None = None

    def feed(self, message: WireMessage) -> Sequence[tuple[WireMessage, float]]:
        if self._pending is not None and self._pending.absorb(message):
            return ()  # the common case, once per streamed chunk: nothing allocated
        out = self.flush()
        if isinstance(message, (TextPart, ThinkPart, ToolCall)):
            self._pending = _Pending(message, self._clock())
        elif not isinstance(message, ToolCallPart):  # a part with no open call carries nothing
            out.append((message, self._clock()))
        return out

    def flush(self) -> list[tuple[WireMessage, float]]:
        pending, self._pending = self._pending, None
        return [(pending.build(), pending.timestamp)] if pending is not None else []

    def holds_call(self, call_id: str) -> bool:
        """Whether the message being accumulated is the tool call with this id."""
        first = self._pending.first if self._pending is not None else None
        return isinstance(first, ToolCall) and first.id == call_id


class WireRecorder:
    """Appends merged messages to a session's wire.jsonl. Call `flush()` at turn boundaries.

    `last_timestamp` is the timestamp of the last record written: a subscriber after the recorder
    learns when the message it was just given was recorded (the ACP session derives message ids
    from a `TurnBegin`'s, so that a replay of the file repeats them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self._merger = MessageMerger()
        self.last_timestamp: float | None = None

    def record(self, message: WireMessage) -> None:
        for merged, timestamp in self._merger.feed(message):
            self._write(merged, timestamp)

    def flush(self) -> None:
        for merged, timestamp in self._merger.flush():
            self._write(merged, timestamp)

    def close(self) -> None:
        """Flush and close; the file is forgotten even when that fails (a full disk), so the next
        record reopens it instead of writing to a closed file."""
        try:
            self.flush()
        finally:
            f, self._file = self._file, None
            if f is not None:
                f.close()

    def _open(self) -> IO[str]:
        if self._file is None:
            # The session folder is made once, by sessions.create: never brought back here after a delete.
            f = open_private(self.path, "a", encoding="utf-8")  # 0600: it holds the conversation
            if f.tell() == 0:
                f.write(json.dumps({"type": "metadata", "protocol_version": WIRE_PROTOCOL_VERSION}) + "\n")
            elif not ends_with_newline(self.path):
                f.write("\n")  # a torn last line (crash mid-write) must not swallow the next record
            self._file = f
        return self._file

    def _write(self, message: WireMessage, timestamp: float) -> None:
        self.last_timestamp = None  # until this one is written
        line = json.dumps({"timestamp": timestamp, "message": to_envelope(message)}, ensure_ascii=False)
        f = self._open()
        try:
            f.write(line + "\n")
            f.flush()
            self.last_timestamp = timestamp
        except BaseException:  # the next record reopens the file (a torn line gets its newline)
            self._file = None
            try:
                f.close()
            except OSError:
                pass
            raise


@dataclass(frozen=True)
class WireRecord:
    timestamp: float
    message: WireMessage


def read_wire_file(path: Path) -> Iterator[WireRecord]:
    """Every decodable record in order; torn or unknown lines are logged and skipped."""
    for lineno, data in iter_json_objects(path):
        if data.get("type") == "metadata":
            continue
        try:
            message = from_envelope(data.get("message"))  # type: ignore[arg-type]
        except WireDecodeError as exc:
            log.warning("%s:%d: skipping record: %s", path, lineno, exc)
            continue
        timestamp = data.get("timestamp")
        yield WireRecord(float(timestamp) if isinstance(timestamp, (int, float)) else 0.0, message)
