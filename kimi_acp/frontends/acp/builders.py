"""ACP `session/update` payloads and the content they carry, each from one small builder.

What goes out is a plain dict, as `json.dumps` writes it; the TypedDicts only tell a reader (and a
type checker) its keys, at no run-time cost (no SDK model is built per streamed chunk). The names
follow the ACP Python SDK's helpers (`acp/helpers.py`: `text_block`, `tool_content`,
`start_tool_call`, `update_tool_call`, `update_agent_message`, `update_plan`, ...); the ones it has
no helper for (usage, notices, compaction, plan operations) are named the same way. A builder leaves out what it
is not given: an update says only what changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types for readers and checkers only: creating them would cost ~3 ms at start-up
    from typing import Literal, NotRequired, Required, TypedDict

    ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]
    NoticeSeverity = Literal["info", "warning", "error"]
    MessageKind = Literal["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]

    # content
    class TextBlock(TypedDict):
        type: Literal["text"]
        text: str

    class ImageBlock(TypedDict):
        type: Literal["image"]
        mimeType: str
        data: str

    ContentBlock = TextBlock | ImageBlock

    class ContentItem(TypedDict):
        type: Literal["content"]
        content: ContentBlock

    class DiffItem(TypedDict):
        type: Literal["diff"]
        path: str
        oldText: str | None  # null: a new file
        newText: str

    class TerminalItem(TypedDict):
        type: Literal["terminal"]
        terminalId: str

    ToolCallContent = ContentItem | DiffItem | TerminalItem

    class Location(TypedDict):
        path: str
        line: NotRequired[int]

    class PlanEntry(TypedDict):
        content: str
        priority: Literal["high", "medium", "low"]
        status: Literal["pending", "in_progress", "completed"]

    class MessageChunk(TypedDict):
        sessionUpdate: MessageKind
        content: ContentBlock
        messageId: NotRequired[str]

    class ToolCallStart(TypedDict, total=False):
        sessionUpdate: Required[Literal["tool_call"]]
        toolCallId: Required[str]
        title: Required[str]
        name: str  # the tool's own name (ACP's programmatic tool name), e.g. Shell
        kind: str
        status: ToolCallStatus
        rawInput: Any
        locations: list[Location]
        content: list[ToolCallContent]
        _meta: dict[str, Any]

    class ToolCallProgress(TypedDict, total=False):
        sessionUpdate: Required[Literal["tool_call_update"]]
        toolCallId: Required[str]
        title: str
        status: ToolCallStatus
        content: list[ToolCallContent]
        rawInput: Any
        rawOutput: Any
        locations: list[Location]
        _meta: dict[str, Any]

    class PlanUpdate(TypedDict):
        sessionUpdate: Literal["plan"]
        entries: list[PlanEntry]

    # plan operations (clientCapabilities.plan): one plan by its id, as items, a file or Markdown
    class PlanItems(TypedDict):
        type: Literal["items"]
        planId: str
        entries: list[PlanEntry]

    class PlanFile(TypedDict):
        type: Literal["file"]
        planId: str
        uri: str

    class PlanMarkdown(TypedDict):
        type: Literal["markdown"]
        planId: str
        content: str

    class PlanContentUpdate(TypedDict):
        sessionUpdate: Literal["plan_update"]
        plan: PlanItems | PlanFile | PlanMarkdown

    class PlanRemovedUpdate(TypedDict):
        sessionUpdate: Literal["plan_removed"]
        planId: str

    class UsageUpdate(TypedDict):
        sessionUpdate: Literal["usage_update"]
        used: int
        size: int
        cost: NotRequired[dict[str, Any]]

    class NoticeUpdate(TypedDict):
        sessionUpdate: Literal["notice"]
        severity: NoticeSeverity
        title: str
        description: str

    class CompactionUpdate(TypedDict):
        sessionUpdate: Literal["compaction_update"]
        compactionId: str
        status: Literal["in_progress", "completed"]

    class AvailableCommandsUpdate(TypedDict):
        sessionUpdate: Literal["available_commands_update"]
        availableCommands: list[dict[str, Any]]

    class CurrentModeUpdate(TypedDict):
        sessionUpdate: Literal["current_mode_update"]
        currentModeId: str

    class ConfigOptionUpdate(TypedDict):
        sessionUpdate: Literal["config_option_update"]
        configOptions: list[dict[str, Any]]

    class SessionInfoUpdate(TypedDict):
        sessionUpdate: Literal["session_info_update"]
        title: str
        updatedAt: str

    Update = (
        MessageChunk | ToolCallStart | ToolCallProgress | PlanUpdate | PlanContentUpdate | PlanRemovedUpdate
        | UsageUpdate | NoticeUpdate | CompactionUpdate | AvailableCommandsUpdate | CurrentModeUpdate | ConfigOptionUpdate
        | SessionInfoUpdate
    )


# --------------------------------------------------------------------------- content


def text_block(text: str) -> TextBlock:
    return {"type": "text", "text": text}


def image_block(data: str, mime_type: str) -> ImageBlock:
    return {"type": "image", "mimeType": mime_type, "data": data}


def tool_content(block: ContentBlock) -> ContentItem:
    return {"type": "content", "content": block}


def tool_diff_content(path: str, new_text: str, old_text: str | None = None) -> DiffItem:
    return {"type": "diff", "path": path, "oldText": old_text, "newText": new_text}


def tool_terminal_ref(terminal_id: str) -> TerminalItem:
    return {"type": "terminal", "terminalId": terminal_id}


def location(path: str, line: int | None = None) -> Location:
    found: Location = {"path": path}
    if line is not None:
        found["line"] = line
    return found


def plan_entry(content: str, status: Literal["pending", "in_progress", "completed"] = "pending") -> PlanEntry:
    return {"content": content, "priority": "medium", "status": status}


# --------------------------------------------------------------------------- updates


def _chunk(kind: MessageKind, content: ContentBlock, message_id: str | None) -> MessageChunk:
    chunk: MessageChunk = {"sessionUpdate": kind, "content": content}
    if message_id is not None:
        chunk["messageId"] = message_id
    return chunk


def update_user_message(content: ContentBlock, message_id: str | None = None) -> MessageChunk:
    return _chunk("user_message_chunk", content, message_id)


def update_agent_message(content: ContentBlock, message_id: str | None = None) -> MessageChunk:
    return _chunk("agent_message_chunk", content, message_id)


def update_agent_message_text(text: str, message_id: str | None = None) -> MessageChunk:
    return _chunk("agent_message_chunk", text_block(text), message_id)


def update_agent_thought(content: ContentBlock, message_id: str | None = None) -> MessageChunk:
    return _chunk("agent_thought_chunk", content, message_id)


def start_tool_call(
    tool_call_id: str,
    title: str,
    *,
    name: str,
    kind: str,
    status: ToolCallStatus = "pending",
    raw_input: Any = None,
    locations: list[Location] | None = None,
    content: list[ToolCallContent] | None = None,
    meta: dict[str, Any] | None = None,
) -> ToolCallStart:
    start: ToolCallStart = {
        "sessionUpdate": "tool_call", "toolCallId": tool_call_id, "title": title, "name": name, "kind": kind,
        "status": status, "rawInput": raw_input, "locations": locations or [], "content": content or [],
    }  # fmt: skip
    if meta is not None:
        start["_meta"] = meta
    return start


_UNSET: Any = object()  # raw input and output may be null: absent is this


def update_tool_call(
    tool_call_id: str,
    *,
    title: str | None = None,
    status: ToolCallStatus | None = None,
    content: list[ToolCallContent] | None = None,
    raw_input: Any = _UNSET,
    raw_output: Any = _UNSET,
    locations: list[Location] | None = None,
    meta: dict[str, Any] | None = None,
) -> ToolCallProgress:
    update: ToolCallProgress = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id}
    if title is not None:
        update["title"] = title
    if status is not None:
        update["status"] = status
    if content is not None:
        update["content"] = content
    if raw_input is not _UNSET:
        update["rawInput"] = raw_input
    if raw_output is not _UNSET:
        update["rawOutput"] = raw_output
    if locations is not None:
        update["locations"] = locations
    if meta is not None:
        update["_meta"] = meta
    return update


def update_plan(entries: list[PlanEntry]) -> PlanUpdate:
    return {"sessionUpdate": "plan", "entries": entries}


def update_plan_items(plan_id: str, entries: list[PlanEntry]) -> PlanContentUpdate:
    """The whole checklist of one plan: the client replaces that plan's entries with these."""
    return {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": plan_id, "entries": entries}}


def update_plan_file(plan_id: str, uri: str) -> PlanContentUpdate:
    return {"sessionUpdate": "plan_update", "plan": {"type": "file", "planId": plan_id, "uri": uri}}


def update_plan_markdown(plan_id: str, content: str) -> PlanContentUpdate:
    return {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": plan_id, "content": content}}


def remove_plan(plan_id: str) -> PlanRemovedUpdate:
    return {"sessionUpdate": "plan_removed", "planId": plan_id}


def update_usage(used: int, size: int, cost: dict[str, Any] | None = None) -> UsageUpdate:
    update: UsageUpdate = {"sessionUpdate": "usage_update", "used": used, "size": size}
    if cost is not None:
        update["cost"] = cost
    return update


def notice(severity: NoticeSeverity, title: str, description: str) -> NoticeUpdate:
    return {"sessionUpdate": "notice", "severity": severity, "title": title, "description": description}


def update_compaction(compaction_id: str, status: Literal["in_progress", "completed"]) -> CompactionUpdate:
    return {"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": status}


def update_available_commands(commands: list[dict[str, Any]]) -> AvailableCommandsUpdate:
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


def update_current_mode(current_mode_id: str) -> CurrentModeUpdate:
    return {"sessionUpdate": "current_mode_update", "currentModeId": current_mode_id}


def update_config_options(options: list[dict[str, Any]]) -> ConfigOptionUpdate:
    return {"sessionUpdate": "config_option_update", "configOptions": options}


def update_session_info(title: str, updated_at: str) -> SessionInfoUpdate:
    return {"sessionUpdate": "session_info_update", "title": title, "updatedAt": updated_at}
