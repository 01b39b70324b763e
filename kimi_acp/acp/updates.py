"""Wire messages -> ACP `session/update` payloads, for live turns and for history replay.

One `UpdateMapper` per session keeps the little state the mapping needs: which tool calls the
current turn has shown (ACP ids are made unique across turns), the arguments still streaming for
the open call, and whether a call's output is shown by an embedded terminal.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..wire.types import (
    ApprovalRequest,
    DiffDisplayBlock,
    ImageURLPart,
    ShellDisplayBlock,
    StatusUpdate,
    SteerInput,
    TextPart,
    ThinkPart,
    TodoDisplayBlock,
    ToolCall,
    ToolCallPart,
    ToolResult,
    TurnBegin,
    UserInput,
)
from .convert import (
    content_blocks_for_display,
    diff_content,
    parse_arguments,
    plan_entries,
    result_content,
    text_content,
    tool_kind,
    tool_locations,
    tool_title,
)

Update = dict[str, Any]


@dataclass
class _Call:
    acp_id: str
    name: str
    chunks: list[str] = field(default_factory=list)
    title: str = ""
    terminal: bool = False
    closed: bool = False

    @property
    def arguments(self) -> str:
        return "".join(self.chunks)


class UpdateMapper:
    def __init__(self, cwd: Path, *, replay: bool = False) -> None:
        self.cwd = cwd
        self.replay = replay
        self._turn = uuid.uuid4().hex[:8]
        self._calls: dict[str, _Call] = {}
        self._open: _Call | None = None
        self.shown_output = False  # any agent text sent this turn (errors then need a visible note)
        self.last_usage: Update | None = None

    def begin_turn(self) -> None:
        self._turn = uuid.uuid4().hex[:8]
        self._calls.clear()
        self._open = None
        self.shown_output = False

    def acp_id(self, llm_id: str) -> str:
        call = self._calls.get(llm_id)
        return call.acp_id if call else f"{self._turn}/{llm_id}"

    # ------------------------------------------------------------------ mapping

    def map(self, message: Any) -> list[Update]:
        if isinstance(message, ToolCallPart):
            return self._tool_call_part(message)
        updates = self._close_open_call()
        if isinstance(message, TextPart):
            if message.text:
                self.shown_output = True
                updates.append({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": message.text}})
        elif isinstance(message, ThinkPart):
            if message.think:
                updates.append({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": message.think}})
        elif isinstance(message, ImageURLPart):
            updates.append({"sessionUpdate": "agent_message_chunk", "content": content_blocks_for_display(message)})
        elif isinstance(message, ToolCall):
            updates.extend(self._tool_call(message))
        elif isinstance(message, ToolResult):
            updates.extend(self._tool_result(message))
        elif isinstance(message, StatusUpdate):
            usage = self._usage(message)
            if usage is not None:
                self.last_usage = usage
                if not self.replay:
                    updates.append(usage)
        elif isinstance(message, SteerInput):
            updates.extend(user_chunks(message.user_input))
        elif isinstance(message, TurnBegin) and self.replay:
            self.begin_turn()
            updates.extend(user_chunks(message.user_input))
        return updates

    def flush(self) -> list[Update]:
        """Updates still owed at the end of a turn (a call whose arguments just finished)."""
        return self._close_open_call()

    def terminal_attached(self, llm_id: str, terminal_id: str) -> Update:
        call = self._calls.get(llm_id)
        if call is not None:
            call.terminal = True
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": self.acp_id(llm_id),
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": terminal_id}],
        }

    def permission_tool_call(self, request: ApprovalRequest) -> dict[str, Any]:
        """The `toolCall` of a permission request: the card the user is asked about."""
        call = self._calls.get(request.tool_call_id)
        arguments = parse_arguments(call.arguments) if call else {}
        name = call.name if call else request.sender
        content: list[dict[str, Any]] = [diff_content(b) for b in request.display if isinstance(b, DiffDisplayBlock)]
        if not content:
            shell = next((b for b in request.display if isinstance(b, ShellDisplayBlock)), None)
            text = f"```{shell.language}\n{shell.command}\n```" if shell else request.description
            content = [text_content(text)]
        return {
            "toolCallId": self.acp_id(request.tool_call_id),
            "title": call.title if call and call.title else request.description,
            "kind": tool_kind(name),
            "status": "pending",
            "rawInput": arguments,
            "locations": tool_locations(name, arguments, self.cwd),
            "content": content,
        }

    # ------------------------------------------------------------------ pieces

    def _tool_call(self, message: ToolCall) -> list[Update]:
        name = message.function.name
        call = _Call(f"{self._turn}/{message.id}", name, [message.function.arguments or ""])
        if message.id in self._calls:  # an id reused within one turn still gets its own card
            call.acp_id = f"{call.acp_id}#{len(self._calls)}"
        self._calls[message.id] = call
        call.title = tool_title(name, call.arguments, self.cwd)
        arguments = parse_arguments(call.arguments)
        update: Update = {
            "sessionUpdate": "tool_call",
            "toolCallId": call.acp_id,
            "title": call.title,
            "kind": tool_kind(name),
            "status": "pending",
            "rawInput": arguments,
            "locations": tool_locations(name, arguments, self.cwd),
            "content": [],
        }
        self._open = call
        return [update]

    def _tool_call_part(self, message: ToolCallPart) -> list[Update]:
        call = self._open
        if call is None or not message.arguments_part:
            return []
        call.chunks.append(message.arguments_part)
        title = tool_title(call.name, call.arguments, self.cwd)
        if title == call.title:
            return []  # nothing the user would see changed: no update per argument chunk
        call.title = title
        return [{"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id, "title": title}]

    def _close_open_call(self) -> list[Update]:
        call, self._open = self._open, None
        if call is None or call.closed:
            return []
        call.closed = True
        arguments = parse_arguments(call.arguments)
        call.title = tool_title(call.name, call.arguments, self.cwd)
        return [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call.acp_id,
                "status": "in_progress",
                "title": call.title,
                "rawInput": arguments,
                "locations": tool_locations(call.name, arguments, self.cwd),
            }
        ]

    def _tool_result(self, message: ToolResult) -> list[Update]:
        call = self._calls.get(message.tool_call_id)
        name = call.name if call else ""
        result = message.return_value
        terminal_shown = bool(call and call.terminal and not self.replay)
        update: Update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": self.acp_id(message.tool_call_id),
            "status": "failed" if result.is_error else "completed",
        }
        content = result_content(name, result, terminal_shown=terminal_shown)
        if content is not None:
            update["content"] = content
        edits = [b for b in result.display if isinstance(b, DiffDisplayBlock) and b.new_start]
        if edits and call is not None:
            update["locations"] = [{"path": b.path, "line": first_changed_line(b)} for b in edits[:20]]
        updates = [update]
        for block in result.display:
            if isinstance(block, TodoDisplayBlock):
                entries = plan_entries(block)
                updates.append({"sessionUpdate": "plan", "entries": entries})
        return updates

    @staticmethod
    def _usage(message: StatusUpdate) -> Update | None:
        if message.context_tokens is None or not message.max_context_tokens:
            return None
        return {"sessionUpdate": "usage_update", "used": max(0, message.context_tokens), "size": message.max_context_tokens}


def first_changed_line(block: DiffDisplayBlock) -> int:
    """The line a hunk's change starts at (its context lines skipped), for jump-to-edit."""
    old, new = block.old_text.splitlines(), block.new_text.splitlines()
    same = 0
    while same < min(len(old), len(new)) and old[same] == new[same]:
        same += 1
    return (block.new_start or 1) + same


def user_chunks(user_input: UserInput) -> list[Update]:
    if isinstance(user_input, str):
        return [{"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": user_input}}]
    return [{"sessionUpdate": "user_message_chunk", "content": content_blocks_for_display(p)} for p in user_input]
