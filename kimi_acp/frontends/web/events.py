"""What the `kimi web` page reads: the simple event stream, plus a few notifications of its own.

The page needs more than the NDJSON note's nine events (they carry no approvals, questions, diffs
or session status), so the server adds notifications in the same JSON-RPC 2.0 form, with method
names the note does not use: a client that follows the note ignores them. All are derived from the
same Wire messages, by `PageView` (one per connected page, pure: no I/O).
"""

from __future__ import annotations

from typing import Any

from ...simple_stream import JSONRPC_VERSION, SimpleStream, event_to_rpc
from ...wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    Notification,
    QuestionRequest,
    Request,
    SteerInput,
    StepRetry,
    ToolResult,
    TurnBegin,
    TurnEnd,
    user_input_text,
)

# The page's own methods (documented in docs/web.md).
EXTRA_METHODS = (
    "Reset", "HistoryEnd", "Status", "ToolDisplay", "ApprovalRequest", "QuestionRequest", "RequestResolved",
    "Steer", "Notice", "Error",
)  # fmt: skip


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params or {}}


class PageView:
    """Wire messages, in order, to the notifications one page gets."""

    def __init__(self) -> None:
        self.simple = SimpleStream()

    def feed(self, message: Any, *, live: bool = True) -> list[dict[str, Any]]:
        """`live=False` for history: requests in it are over and are not offered for answering."""
        out = [event_to_rpc(e) for e in self.simple.feed(message)]
        if isinstance(message, ToolResult):
            value = message.return_value
            out.append(notification("ToolDisplay", {
                "tool_call_id": message.tool_call_id,
                "is_error": value.is_error,
                "message": value.message,
                "display": [block.model_dump(mode="json") for block in value.display],
            }))  # fmt: skip
        elif isinstance(message, ApprovalRequest) and live:
            out.append(notification("ApprovalRequest", message.model_dump(mode="json")))
        elif isinstance(message, QuestionRequest) and live:
            out.append(notification("QuestionRequest", message.model_dump(mode="json")))
        elif isinstance(message, ApprovalResponse):
            out.append(notification("RequestResolved", {"id": message.request_id, "response": message.response}))
        elif isinstance(message, SteerInput):
            out.append(notification("Steer", {"text": user_input_text(message.user_input)}))
        elif isinstance(message, Notification):
            out.append(notification("Notice", {"title": message.title, "body": message.body}))
        elif isinstance(message, StepRetry):
            text = f"{message.error_type}: retrying ({message.next_attempt}/{message.max_attempts})"
            out.append(notification("Notice", {"title": "Retrying", "body": text}))
        elif isinstance(message, (TurnBegin, TurnEnd, Request)):
            pass
        return out
