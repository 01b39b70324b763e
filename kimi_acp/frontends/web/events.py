"""What the `kimi web` page reads: the simple event stream, plus a few notifications of its own.

The page needs more than the NDJSON note's nine events (they carry no approvals, questions, diffs
or session status), so the server adds notifications in the same JSON-RPC 2.0 form, with method
names the note does not use: a client that follows the note ignores them. All are derived from the
same Wire messages, by `PageView` (one per connected page, pure: no I/O). Diffs reach the page as
numbered rows (diffview.py), so the browser does no diffing; a subagent's messages reach it as
the simple events of the child, wrapped in `Subagent`, so its steps show in the parent's card.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core.toolset import was_cancelled
from ...simple_stream import JSONRPC_VERSION, SimpleStream, event_to_rpc
from ...util.dispatch import Handlers
from ...wire.serde import WireDecodeError, from_envelope
from ...wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    Notification,
    PlanDisplay,
    QuestionRequest,
    SteerInput,
    StepRetry,
    SubagentEvent,
    ToolResult,
    user_input_text,
)
from .diffview import page_display


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params or {}}


_on: Handlers[Callable[[PageView, Any, bool], list[dict[str, Any]]]] = Handlers()


class PageView:
    """Wire messages, in order, to the notifications one page gets: the simple stream's events, then
    what the message's handler adds (one per message type; the rest, e.g. other requests, adds nothing)."""

    def __init__(self) -> None:
        self.simple = SimpleStream()
        self.children: dict[str, SimpleStream] = {}  # a subagent's own run, by agent id

    def feed(self, message: Any, *, live: bool = True) -> list[dict[str, Any]]:
        """`live=False` for history: requests in it are over and are not offered for answering."""
        out = [event_to_rpc(e) for e in self.simple.feed(message)]
        handler = _on.get(type(message))
        if handler is not None:
            out += handler(self, message, live)
        return out

    # ------------------------------------------------------------------ one handler per message

    @_on(ToolResult)
    def _tool_result(self, message: ToolResult, live: bool) -> list[dict[str, Any]]:
        value = message.return_value
        return [notification("ToolDisplay", {
            "tool_call_id": message.tool_call_id,
            "is_error": value.is_error,
            "cancelled": was_cancelled(value),
            "message": value.message,
            "display": page_display(value.display),
        })]  # fmt: skip

    @_on(ApprovalRequest)
    def _approval_request(self, message: ApprovalRequest, live: bool) -> list[dict[str, Any]]:
        return [notification("ApprovalRequest", approval_params(message))] if live else []

    @_on(QuestionRequest)
    def _question_request(self, message: QuestionRequest, live: bool) -> list[dict[str, Any]]:
        return [notification("QuestionRequest", message.model_dump(mode="json"))] if live else []

    @_on(ApprovalResponse)
    def _approval_response(self, message: ApprovalResponse, live: bool) -> list[dict[str, Any]]:
        return [notification("RequestResolved", {"id": message.request_id, "response": message.response})]

    @_on(PlanDisplay)
    def _plan(self, message: PlanDisplay, live: bool) -> list[dict[str, Any]]:
        return [notification("Plan", {"content": message.content, "file_path": message.file_path})]

    @_on(SubagentEvent)
    def _subagent_event(self, message: SubagentEvent, live: bool) -> list[dict[str, Any]]:
        return self._child(message)

    @_on(SteerInput)
    def _steer(self, message: SteerInput, live: bool) -> list[dict[str, Any]]:
        return [notification("Steer", {"text": user_input_text(message.user_input)})]

    @_on(Notification)
    def _notice(self, message: Notification, live: bool) -> list[dict[str, Any]]:
        return [notification("Notice", {"title": message.title, "body": message.body})]

    @_on(StepRetry)
    def _retry(self, message: StepRetry, live: bool) -> list[dict[str, Any]]:
        text = f"{message.error_type}: retrying ({message.next_attempt}/{message.max_attempts})"
        return [notification("Notice", {"title": "Retrying", "body": text})]

    def _child(self, message: SubagentEvent) -> list[dict[str, Any]]:
        """A subagent's message as its own simple event, for the parent's card (its steps and answer)."""
        try:
            inner = from_envelope(message.event.model_dump(mode="json"))
        except WireDecodeError:  # a message of a newer version: nothing to show
            return []
        key = message.agent_id or message.parent_tool_call_id or ""
        stream = self.children.setdefault(key, SimpleStream())
        wrap = {"parent_tool_call_id": message.parent_tool_call_id, "agent_id": message.agent_id,
                "subagent_type": message.subagent_type}  # fmt: skip
        return [notification("Subagent", {**wrap, "event": event_to_rpc(e)}) for e in stream.feed(inner)]


def approval_params(request: ApprovalRequest) -> dict[str, Any]:
    """The Wire request, its diffs as rows (the page draws them; it does not diff)."""
    return {**request.model_dump(mode="json"), "display": page_display(request.display)}
