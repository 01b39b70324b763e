"""A background command's output, live on the card of the `Shell` call that started it.

The output of a background task otherwise reaches the user only when the model reads it with
`TaskOutput`. Zed (and clients that copy it) render a display-only terminal on a tool call: the
agent names it in the `tool_call`'s `_meta.terminal_info`, puts `{"type": "terminal"}` content
with its id on the card, streams the bytes in `tool_call_update._meta.terminal_output` (appended
by the client) and ends it with `_meta.terminal_exit`; claude-agent-acp sends its `Bash` cards
this way. A client opts in with `clientCapabilities._meta.terminal_output: true`; nothing of this
is sent to any other client.

`TerminalFeed` is one task's side of it: the log's bytes decoded as UTF-8 across chunk boundaries,
and at most `LIMIT` bytes of them (what is kept of a task's log on disk); the rest stays in the log
for `TaskOutput`.
"""

from __future__ import annotations

import codecs
from typing import Any

LIMIT = 1 << 20  # bytes of one task's output shown on its card
CUT_NOTE = "\r\n[... the rest of the output is in the task's log; TaskOutput reads it]\r\n"


def terminal_output_supported(client_capabilities: dict[str, Any] | None) -> bool:
    """Whether the client advertised the display-only terminal convention (`_meta.terminal_output: true`)."""
    meta = (client_capabilities or {}).get("_meta")
    return isinstance(meta, dict) and meta.get("terminal_output") is True


def terminal_info(terminal_id: str, cwd: str) -> dict[str, Any]:
    """The `_meta` of a `tool_call` that registers a display-only terminal for its card."""
    return {"terminal_info": {"terminal_id": terminal_id, "cwd": cwd}}


class TerminalFeed:
    """The output of one task on one display-only terminal."""

    def __init__(self, terminal_id: str) -> None:
        self.terminal_id = terminal_id
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._sent = 0
        self._cut = False

    def feed(self, data: bytes) -> dict[str, Any] | None:
        """The `_meta` that shows `data` (more of the log), or None when there is nothing to show."""
        if self._cut or not data:
            return None
        room = LIMIT - self._sent
        text = self._decoder.decode(data[:room])
        self._sent += min(len(data), room)
        if len(data) > room:
            self._cut = True
            text += self._decoder.decode(b"", final=True) + CUT_NOTE
        return self._output(text) if text else None

    def exit(self, exit_code: int | None) -> dict[str, Any]:
        """The `_meta` that ends the terminal (with the last undecoded bytes, if any)."""
        meta: dict[str, Any] = {}
        rest = "" if self._cut else self._decoder.decode(b"", final=True)
        if rest:
            meta.update(self._output(rest))
        meta["terminal_exit"] = {"terminal_id": self.terminal_id, "exit_code": exit_code, "signal": None}
        return meta

    def _output(self, text: str) -> dict[str, Any]:
        return {"terminal_output": {"terminal_id": self.terminal_id, "data": text}}
