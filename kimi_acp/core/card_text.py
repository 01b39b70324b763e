"""What an approval request shows of text a model or a server wrote: only visible characters.

Every `ApprovalRequest` goes through `visible_request` before it is sent (core/approvals.py), so the
Wire client, the web page, the ACP card and `wire.jsonl` show the same thing: invisible, control
and bidi characters as escapes (util/visible_text.py), and, when there were any, a first display
block saying so. Only what is shown changes; the call runs with the text the model wrote.
"""

from __future__ import annotations

from typing import Any

from ..util.visible_text import escapes_note, shown_data, visible
from ..wire.types import (
    ApprovalRequest,
    BackgroundTaskDisplayBlock,
    BriefDisplayBlock,
    DiffDisplayBlock,
    DisplayBlock,
    ShellDisplayBlock,
    TodoDisplayBlock,
    UnknownDisplayBlock,
)


class _Shower:
    """Makes texts visible and remembers whether any needed an escape."""

    def __init__(self) -> None:
        self.escaped = False

    def __call__(self, text: str, *, lines: bool = True, padding: bool = True, crlf: bool = False) -> str:
        shown = visible(text, lines=lines, padding=padding, crlf=crlf)
        self.escaped = self.escaped or shown.escaped
        return shown.text

    def line(self, text: str | None) -> str | None:
        return None if text is None else self(text, lines=False)

    def block(self, block: DisplayBlock) -> DisplayBlock:
        update: dict[str, Any]
        if isinstance(block, ShellDisplayBlock):
            update = {"command": self(block.command)}
        elif isinstance(block, DiffDisplayBlock):  # a file's content: its blank runs and CRLF endings are its own
            update = {"path": self(block.path, lines=False), "old_text": self(block.old_text, padding=False, crlf=True),
                      "new_text": self(block.new_text, padding=False, crlf=True)}
        elif isinstance(block, BriefDisplayBlock):
            update = {"text": self(block.text)}
        elif isinstance(block, BackgroundTaskDisplayBlock):
            update = {"task_id": self.line(block.task_id), "description": self.line(block.description)}
        elif isinstance(block, TodoDisplayBlock):
            update = {"items": [item.model_copy(update={"title": self.line(item.title)}) for item in block.items]}
        elif isinstance(block, UnknownDisplayBlock):
            update = {"data": shown_data(block.data, lambda text: self(text, padding=False))}
        else:
            return block
        return block.model_copy(update=update)


def visible_request(request: ApprovalRequest) -> ApprovalRequest:
    """`request` as a card may show it; call it before the request is sent (it copies it)."""
    show = _Shower()
    display = [show.block(block) for block in request.display]
    update: dict[str, Any] = {
        "description": show(request.description),
        "session_scope": show.line(request.session_scope),
        "warning": show.line(request.warning),
        "sandbox": show.line(request.sandbox),
        "source_description": show.line(request.source_description),
    }
    if show.escaped and not any(is_escapes_note(block) for block in display):
        what = "command" if any(isinstance(block, ShellDisplayBlock) for block in display) else "request"
        display.insert(0, BriefDisplayBlock(text=escapes_note(what)))
    update["display"] = display
    return request.model_copy(update=update)


def is_escapes_note(block: DisplayBlock) -> bool:
    """Whether a display block is the note `visible_request` adds (a card shows it as a warning)."""
    return isinstance(block, BriefDisplayBlock) and block.text in (escapes_note("command"), escapes_note("request"))
