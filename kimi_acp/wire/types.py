"""The Wire 1.10 message vocabulary as pydantic models.

Every message the agent core produces is one of these. Front ends serialize them (`--wire`,
`wire.jsonl`, NDJSON) or map them (ACP). No behaviour lives here except the future a request
carries, so that whichever front end answers it can resolve it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

from ..errors import ToolError
from .jsonrpc import without_lone_surrogates

# re-exported: the vocabulary's version lives with its types
from .protocol import WIRE_PROTOCOL_LEGACY_VERSION as WIRE_PROTOCOL_LEGACY_VERSION
from .protocol import WIRE_PROTOCOL_VERSION as WIRE_PROTOCOL_VERSION


class _Model(BaseModel):
    # Unknown keys from newer peers are ignored rather than rejected.
    model_config = ConfigDict(extra="ignore", defer_build=True)


# --------------------------------------------------------------------------- content parts


class MediaURL(_Model):
    url: str
    id: str | None = None


class TextPart(_Model):
    type: Literal["text"] = "text"
    text: str


class ThinkPart(_Model):
    type: Literal["think"] = "think"
    think: str
    encrypted: str | None = None


class ImageURLPart(_Model):
    type: Literal["image_url"] = "image_url"
    image_url: MediaURL


class AudioURLPart(_Model):
    type: Literal["audio_url"] = "audio_url"
    audio_url: MediaURL


class VideoURLPart(_Model):
    type: Literal["video_url"] = "video_url"
    video_url: MediaURL


ContentPart = Annotated[
    TextPart | ThinkPart | ImageURLPart | AudioURLPart | VideoURLPart, Field(discriminator="type")
]
CONTENT_PART_TYPES: tuple[type[_Model], ...] = (TextPart, ThinkPart, ImageURLPart, AudioURLPart, VideoURLPart)
UserInput = str | list[ContentPart]


def user_input_text(user_input: UserInput) -> str:
    """The text of a user input (media parts omitted), e.g. for titles and slash parsing."""
    if isinstance(user_input, str):
        return user_input
    return "".join(p.text for p in user_input if isinstance(p, TextPart))


def encodable_user_input(user_input: UserInput) -> UserInput:
    """`user_input` with every lone UTF-16 surrogate replaced by U+FFFD. JSON accepts `"\\ud800"`
    but UTF-8 cannot hold it, so a prompt carrying one (from a Python caller or a web page; the
    servers' line reader already cleans theirs) would fail when the turn is written down."""
    if isinstance(user_input, str):
        return without_lone_surrogates(user_input)
    return [type(p).model_validate(without_lone_surrogates(p.model_dump())) for p in user_input]


# --------------------------------------------------------------------------- tool calls


class FunctionBody(_Model):
    name: str
    arguments: str | None = None


class ToolCall(_Model):
    type: Literal["function"] = "function"
    id: str
    function: FunctionBody
    extras: dict[str, Any] | None = None


class ToolCallPart(_Model):
    arguments_part: str | None = None


class TokenUsage(_Model):
    input_other: int = 0
    output: int = 0
    input_cache_read: int = 0
    input_cache_creation: int = 0

    @property
    def input(self) -> int:
        return self.input_other + self.input_cache_read + self.input_cache_creation

    @property
    def total(self) -> int:
        return self.input + self.output


# --------------------------------------------------------------------------- display blocks


class BriefDisplayBlock(_Model):
    type: Literal["brief"] = "brief"
    text: str


class DiffDisplayBlock(_Model):
    type: Literal["diff"] = "diff"
    path: str
    old_text: str
    new_text: str
    old_start: int | None = None
    new_start: int | None = None
    is_summary: bool = False


class TodoDisplayItem(_Model):
    title: str
    status: Literal["pending", "in_progress", "done"]


class TodoDisplayBlock(_Model):
    type: Literal["todo"] = "todo"
    items: list[TodoDisplayItem]


class ShellDisplayBlock(_Model):
    type: Literal["shell"] = "shell"
    language: str
    command: str


class BackgroundTaskDisplayBlock(_Model):
    """A background task's state (Shell with run_in_background, TaskList/TaskOutput/TaskStop), as Kimi sends it."""

    type: Literal["background_task"] = "background_task"
    task_id: str
    kind: str
    status: str
    description: str


class UnknownDisplayBlock(_Model):
    """A display block of a type we do not know; kept as `{type, data}` so it round-trips."""

    type: str
    data: dict[str, Any] = {}

    @model_validator(mode="before")
    @classmethod
    def _collect_data(cls, value: Any) -> Any:
        if isinstance(value, dict) and set(value) - {"type", "data"}:
            rest = {k: v for k, v in value.items() if k != "type"}
            return {"type": value.get("type", "unknown"), "data": rest}
        return value


_KNOWN_DISPLAY = {
    "brief": BriefDisplayBlock,
    "diff": DiffDisplayBlock,
    "todo": TodoDisplayBlock,
    "shell": ShellDisplayBlock,
    "background_task": BackgroundTaskDisplayBlock,
}


def _display_discriminator(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _KNOWN_DISPLAY else "unknown"


DisplayBlock = Annotated[
    (
        Annotated[BriefDisplayBlock, Tag("brief")]
        | Annotated[DiffDisplayBlock, Tag("diff")]
        | Annotated[TodoDisplayBlock, Tag("todo")]
        | Annotated[ShellDisplayBlock, Tag("shell")]
        | Annotated[BackgroundTaskDisplayBlock, Tag("background_task")]
        | Annotated[UnknownDisplayBlock, Tag("unknown")]
    ),
    Discriminator(_display_discriminator),
]


class ToolReturnValue(_Model):
    is_error: bool
    output: str | list[ContentPart] = ""
    message: str = ""
    display: list[DisplayBlock] = []
    extras: dict[str, Any] | None = None


# --------------------------------------------------------------------------- events


class Event(_Model):
    """Base of every event; `wire_type` is the envelope's `type`."""

    wire_type: ClassVar[str] = ""


class TurnBegin(Event):
    wire_type: ClassVar[str] = "TurnBegin"
    user_input: UserInput


class TurnEnd(Event):
    wire_type: ClassVar[str] = "TurnEnd"


class StepBegin(Event):
    wire_type: ClassVar[str] = "StepBegin"
    n: int


class StepInterrupted(Event):
    wire_type: ClassVar[str] = "StepInterrupted"


class StepRetry(Event):
    wire_type: ClassVar[str] = "StepRetry"
    n: int
    next_attempt: int
    max_attempts: int
    wait_s: float
    error_type: str
    status_code: int | None = None


class CompactionBegin(Event):
    wire_type: ClassVar[str] = "CompactionBegin"


class CompactionEnd(Event):
    wire_type: ClassVar[str] = "CompactionEnd"


class MCPLoadingBegin(Event):
    wire_type: ClassVar[str] = "MCPLoadingBegin"


class MCPLoadingEnd(Event):
    wire_type: ClassVar[str] = "MCPLoadingEnd"


class StatusUpdate(Event):
    wire_type: ClassVar[str] = "StatusUpdate"
    context_usage: float | None = None
    context_tokens: int | None = None
    max_context_tokens: int | None = None
    token_usage: TokenUsage | None = None
    message_id: str | None = None
    plan_mode: bool | None = None
    mcp_status: dict[str, Any] | None = None


class Notification(Event):
    wire_type: ClassVar[str] = "Notification"
    id: str = ""
    category: str = ""
    type: str = ""
    source_kind: str | None = None
    source_id: str | None = None
    title: str = ""
    body: str = ""
    severity: str = "info"
    created_at: float | None = None
    payload: dict[str, Any] | None = None


class ToolResult(Event):
    wire_type: ClassVar[str] = "ToolResult"
    tool_call_id: str
    return_value: ToolReturnValue


ApprovalKind = Literal["approve", "approve_for_session", "reject"]


class ApprovalResponse(Event):
    wire_type: ClassVar[str] = "ApprovalResponse"
    request_id: str
    response: ApprovalKind
    # The spec says `feedback?: string`, and Kimi Code CLI always sends a string ("" for none):
    # never `null`. A `null` from a client or an older wire.jsonl is read as "".
    feedback: str = ""

    @field_validator("feedback", mode="before")
    @classmethod
    def _null_feedback(cls, value: Any) -> Any:
        return "" if value is None else value


class WireEnvelope(_Model):
    type: str
    payload: dict[str, Any] = {}


class SubagentEvent(Event):
    wire_type: ClassVar[str] = "SubagentEvent"
    parent_tool_call_id: str | None = None
    agent_id: str | None = None
    subagent_type: str | None = None
    event: WireEnvelope

    @model_validator(mode="before")
    @classmethod
    def _legacy_task_id(cls, value: Any) -> Any:
        if isinstance(value, dict) and "task_tool_call_id" in value and "parent_tool_call_id" not in value:
            value = {**value, "parent_tool_call_id": value["task_tool_call_id"]}
        return value


class BtwBegin(Event):
    wire_type: ClassVar[str] = "BtwBegin"
    id: str
    question: str


class BtwEnd(Event):
    wire_type: ClassVar[str] = "BtwEnd"
    id: str
    response: str | None = None
    error: str | None = None


class SteerInput(Event):
    wire_type: ClassVar[str] = "SteerInput"
    user_input: UserInput


class PlanDisplay(Event):
    wire_type: ClassVar[str] = "PlanDisplay"
    content: str
    file_path: str


class HookTriggered(Event):
    wire_type: ClassVar[str] = "HookTriggered"
    event: str
    target: str
    hook_count: int


class HookResolved(Event):
    wire_type: ClassVar[str] = "HookResolved"
    event: str
    target: str
    action: Literal["allow", "block"]
    reason: str = ""
    duration_ms: int = 0


# --------------------------------------------------------------------------- requests


AnswerT = TypeVar("AnswerT")

if TYPE_CHECKING:

    class _AnswerOf(Generic[AnswerT]):
        """`Request[T]`: a request answered with a T (for readers and type checkers)."""

else:

    class _AnswerOf:
        """At run time `_AnswerOf[T]` and `Request[T]` are the plain classes: a pydantic generic
        model would build one model class per answer type at import (~6 ms at start-up)."""

        def __class_getitem__(cls, answer: Any) -> Any:
            return cls


class Request(_Model, _AnswerOf[AnswerT]):
    """A message that needs an answer (`Request[T]`: a T). It carries a future; any front end may
    resolve it with the answer, and one that cannot answer it (it does not serve this kind, its
    client is gone, the turn is over) declines it: each kind says what that answer is (`declined`),
    so "nobody can answer" is written once, here."""

    wire_type: ClassVar[str] = ""
    id: str  # every request has one; its answer names it (`request_id`)
    _future: asyncio.Future[Any] | None = PrivateAttr(default=None)

    if not TYPE_CHECKING:

        def __class_getitem__(cls, answer: Any) -> Any:
            return cls  # see _AnswerOf

    @property
    def future(self) -> asyncio.Future[Any]:
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return self._future

    @property
    def resolved(self) -> bool:
        return self._future is not None and self._future.done()

    def resolve(self, value: AnswerT) -> bool:
        """Answer the request; returns False if it was already answered."""
        future = self.future
        if future.done():
            return False
        future.set_result(value)
        return True

    def declined(self) -> AnswerT:
        """The answer when nobody can give one."""
        raise NotImplementedError

    def decline(self) -> bool:
        """Answer as when nobody can (`declined`); returns False if it was already answered."""
        return self.resolve(self.declined())

    async def wait(self) -> AnswerT:
        answer: AnswerT = await asyncio.shield(self.future)
        return answer


class ApprovalRequest(Request["ApprovalResponse"]):
    wire_type: ClassVar[str] = "ApprovalRequest"
    tool_call_id: str
    sender: str
    action: str
    description: str
    display: list[DisplayBlock] = []
    source_kind: Literal["foreground_turn", "background_agent"] | None = None
    source_id: str | None = None
    agent_id: str | None = None
    subagent_type: str | None = None
    source_description: str | None = None
    # Beyond Wire 1.10, sent only when set (clients that do not know them see the 1.10 payload):
    # what "approve_for_session" remembers, in words ("`git status …`"); absent, that answer
    # approves this call only. And why this call always asks (a file holding credentials, a
    # protected path): never remembered, refused under --afk.
    session_scope: str | None = None
    warning: str | None = None
    # And the OS sandbox the call runs in, or leaves (kimi_acp/sandbox), in words: only when the
    # session's sandbox mode is on.
    sandbox: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_extensions(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("session_scope", "warning", "sandbox"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    def declined(self) -> ApprovalResponse:
        """Rejected: nothing runs without the user's yes."""
        return ApprovalResponse(request_id=self.id, response="reject")


class ToolCallRequest(Request["ToolReturnValue"]):
    wire_type: ClassVar[str] = "ToolCallRequest"
    name: str
    arguments: str | None = None

    def declined(self) -> ToolReturnValue:
        """A tool error: the client that would run it is gone (or the turn is over)."""
        return ToolReturnValue(
            is_error=True,
            message="Wire connection closed before tool result was received.",
            display=[BriefDisplayBlock(text="Wire closed")],
        )


class QuestionOption(_Model):
    label: str
    description: str = ""
    # Not on Wire (excluded when serialized): this answer turns down what was asked ("once"), or
    # turns it down and leaves the mode it was asked in ("always"), e.g. plan mode's Reject and
    # Reject and Exit. A front end with accept/reject buttons (an ACP permission prompt) shows
    # such an answer as a rejection, never as an acceptance.
    declines: Literal["once", "always"] | None = Field(default=None, exclude=True)


class QuestionItem(_Model):
    question: str
    header: str = ""
    options: list[QuestionOption] = []
    multi_select: bool = False
    # Kimi Code CLI's extras (ExitPlanMode uses them): text shown with the question, and the label
    # and description of the answer-in-your-own-words choice ("" for the client's default).
    body: str = ""
    other_label: str = ""
    other_description: str = ""


class QuestionRequest(Request["QuestionResponse | QuestionNotSupported"]):
    wire_type: ClassVar[str] = "QuestionRequest"
    tool_call_id: str
    questions: list[QuestionItem]

    def declined(self) -> QuestionResponse:
        """Dismissed: no answers (the tool tells the model not to assume one)."""
        return QuestionResponse(request_id=self.id)


class PlanQuestion(QuestionRequest):
    """A question of the plan tools (tools/plan.py): on Wire and in wire.jsonl a plain
    `QuestionRequest`, one single-choice question (so any front end that shows questions shows it:
    ACP as a form or a permission prompt). Its type lets the Wire server send it to a client that
    declared `supports_plan_mode`, whether or not it declared `supports_question`."""


class HookRequest(Request["HookResponse"]):
    wire_type: ClassVar[str] = "HookRequest"
    subscription_id: str
    event: str
    target: str
    input_data: dict[str, Any] = {}

    def declined(self) -> HookResponse:
        """Allowed: a hook nobody answers fails open, as one that fails (hooks.py)."""
        return HookResponse(request_id=self.id)


# Answers to requests (what clients send back as the JSON-RPC result).


class QuestionResponse(_Model):
    request_id: str
    # question text -> the chosen label; multi-select: labels comma-joined (Wire) or a list.
    answers: dict[str, str | list[str]] = {}


class QuestionNotSupported(ToolError):
    """What a front end answers a QuestionRequest with when its client cannot show questions
    (a Wire client without `supports_question`): the tool then tells the model to stop asking."""


class HookResponse(_Model):
    request_id: str
    action: Literal["allow", "block"] = "allow"
    reason: str = ""


# --------------------------------------------------------------------------- the union

WireMessage = (
    Event | Request[Any] | TextPart | ThinkPart | ImageURLPart | AudioURLPart | VideoURLPart | ToolCall | ToolCallPart
)

EVENT_TYPES: dict[str, type[Event | ToolCall | ToolCallPart]] = {
    cls.wire_type: cls
    for cls in (
        TurnBegin, TurnEnd, StepBegin, StepInterrupted, StepRetry, CompactionBegin, CompactionEnd,
        MCPLoadingBegin, MCPLoadingEnd, StatusUpdate, Notification, ToolResult, ApprovalResponse,
        SubagentEvent, BtwBegin, BtwEnd, SteerInput, PlanDisplay, HookTriggered, HookResolved,
    )
}
EVENT_TYPES["ToolCall"] = ToolCall
EVENT_TYPES["ToolCallPart"] = ToolCallPart

REQUEST_TYPES: dict[str, type[Request[Any]]] = {
    cls.wire_type: cls for cls in (ApprovalRequest, ToolCallRequest, QuestionRequest, HookRequest)
}

LEGACY_TYPE_NAMES = {"ApprovalRequestResolved": "ApprovalResponse"}
