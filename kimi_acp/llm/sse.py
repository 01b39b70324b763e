"""Incremental Server-Sent-Events parser.

Both HTTP providers stream SSE. Parsing is kept apart from the network so it can be fed byte-chunk
by byte-chunk (or line by line) and tested without a server. Only what chat APIs use is kept:
`data:` (multi-line data joined with "\\n"), `event:`, and `:` comments (ignored); `id:` and
`retry:` are accepted and dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DONE_SENTINEL = "[DONE]"
_LINE_END = re.compile(r"\r\n|\n|\r")


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its `event:` name (None when absent) and its joined data."""

    data: str
    event: str | None = None

    @property
    def is_done(self) -> bool:
        """OpenAI-style end-of-stream marker (`data: [DONE]`)."""
        return self.data.strip() == DONE_SENTINEL


class SSEParser:
    """Feed lines (or raw text); get back events as each blank line completes one."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event: str | None = None
        self._partial = ""
        self._after_cr = False

    def feed(self, text: str) -> list[SSEEvent]:
        """Feed a piece of the stream; lines may be split across calls.

        Only CR, LF and CRLF end a line (as SSE says). `str.splitlines` is not used on purpose:
        it also splits on U+2028 and friends, which may appear raw inside JSON strings.
        """
        if self._after_cr:
            # The previous piece ended with "\r": a leading "\n" completes that CRLF.
            self._after_cr = False
            if text.startswith("\n"):
                text = text[1:]
        text = self._partial + text
        lines = _LINE_END.split(text)
        self._partial = lines.pop()  # not terminated yet
        self._after_cr = text.endswith("\r")
        events: list[SSEEvent] = []
        for line in lines:
            event = self.feed_line(line)
            if event is not None:
                events.append(event)
        return events

    def feed_line(self, line: str) -> SSEEvent | None:
        """Feed one line without its terminator; returns an event when the line ends one."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # comment / keep-alive
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        # `id`, `retry` and unknown fields carry nothing a chat stream needs.
        return None

    def flush(self) -> SSEEvent | None:
        """End of stream: dispatch what is pending even without the final blank line."""
        if self._partial:
            line, self._partial = self._partial.rstrip("\r\n"), ""
            event = self.feed_line(line)
            if event is not None:
                return event
        return self._dispatch()

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = None
            return None
        event = SSEEvent(data="\n".join(self._data), event=self._event)
        self._data = []
        self._event = None
        return event
