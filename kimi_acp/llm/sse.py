"""Incremental Server-Sent-Events parser.

Both HTTP providers stream SSE. Parsing is kept apart from the network so it can be fed byte-chunk
by byte-chunk (or line by line) and tested without a server. Only what chat APIs use is kept:
`data:` (multi-line data joined with "\\n"), `event:`, and `:` comments (ignored); `id:` and
`retry:` are accepted and dropped.

It runs once per streamed chunk, so the common case is kept short: lines ending in LF only (a CR
anywhere takes the general path), a `data: ` line appended without the general field split, and
an event of one data line dispatched without a join.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DONE_SENTINEL = "[DONE]"
_LINE_END = re.compile(r"\r\n|\n|\r")


@dataclass(frozen=True, slots=True)
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
            text = text.removeprefix("\n")
        if self._partial:
            text = self._partial + text
        if "\r" in text:
            lines = _LINE_END.split(text)
            self._after_cr = text.endswith("\r")
        else:
            lines = text.split("\n")
        self._partial = lines.pop()  # not terminated yet
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(self._take())
                else:
                    self._event = None
            elif line.startswith("data: "):
                data.append(line[6:])
            else:
                self.feed_line(line)
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
        return self._take()

    def _take(self) -> SSEEvent:
        """The pending event (there is data), the parser then empty."""
        data = self._data
        event = SSEEvent(data[0] if len(data) == 1 else "\n".join(data), self._event)
        data.clear()  # in place: `feed` holds this list
        self._event = None
        return event
