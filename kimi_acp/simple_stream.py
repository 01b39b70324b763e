"""The simple event stream for web and mobile clients: one JSON-RPC 2.0 notification per event.

Not a second event system: a view of the one timeline the core emits (Wire messages), in the
vocabulary of the NDJSON event-stream note (`RunBegin` … `RunEnd`). `SimpleStream` turns Wire
messages into these events; `encode_event_line` / `decode_event_line` turn an event into one
NDJSON line and back. How our Turn/Step map onto the note's Run/Turn/Step is in docs/web.md.

>>> from kimi_acp.wire.types import TextPart, TurnBegin, TurnEnd, StepBegin
>>> mapper = SimpleStream()
>>> events = [e for m in (TurnBegin(user_input="2+3?"), StepBegin(n=1), TextPart(text="5"), TurnEnd())
...           for e in mapper.feed(m)]
>>> [type(e).__name__ for e in events]
['RunBegin', 'TurnBegin', 'TextDelta', 'StepEnd', 'TurnEnd', 'RunEnd']
>>> encode_event_line(events[2])
'{"jsonrpc":"2.0","method":"TextDelta","params":{"text":"5"}}\\n'
>>> decode_event_line(encode_event_line(events[-1])) == events[-1]
True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .util.dispatch import Handlers
from .wire.types import (
    StatusUpdate,
    StepBegin,
    StepInterrupted,
    TextPart,
    ThinkPart,
    TokenUsage,
    ToolCall,
    ToolCallPart,
    ToolReturnValue,
    user_input_text,
)
from .wire.types import ToolResult as WireToolResult
from .wire.types import TurnBegin as WireTurnBegin
from .wire.types import TurnEnd as WireTurnEnd

__all__ = [
    "EVENT_CLASSES",
    "JSONRPC_VERSION",
    "ReasoningDelta",
    "RunBegin",
    "RunEnd",
    "SimpleEvent",
    "SimpleStream",
    "StepEnd",
    "TextDelta",
    "ToolCallBegin",
    "ToolCallInfo",
    "ToolResult",
    "TurnBegin",
    "TurnEnd",
    "Usage",
    "decode_event",
    "decode_event_line",
    "encode_event",
    "encode_event_line",
    "event_to_rpc",
    "rpc_to_event",
    "to_simple_events",
    "tool_output_text",
]  # fmt: skip

JSONRPC_VERSION = "2.0"


class _Event(BaseModel):
    # Unknown params from a newer server are ignored, so old clients keep decoding.
    model_config = ConfigDict(extra="ignore", frozen=True)
    method: ClassVar[str] = ""


class Usage(BaseModel):
    """Token counts of a step (or summed over a run), as the note's plain `usage` object."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def of(cls, usage: TokenUsage) -> Usage:
        return cls(prompt_tokens=usage.input, completion_tokens=usage.output, total_tokens=usage.total)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class ToolCallInfo(BaseModel):
    """One tool call the model made, in `StepEnd.tool_calls` / `RunEnd.tool_calls`."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str
    name: str
    arguments: str = ""


class RunBegin(_Event):
    method: ClassVar[str] = "RunBegin"
    user_input: str


class TurnBegin(_Event):
    method: ClassVar[str] = "TurnBegin"
    turn: int


class TurnEnd(_Event):
    method: ClassVar[str] = "TurnEnd"
    turn: int
    stopped: bool


class TextDelta(_Event):
    method: ClassVar[str] = "TextDelta"
    text: str


class ReasoningDelta(_Event):
    method: ClassVar[str] = "ReasoningDelta"
    text: str


class StepEnd(_Event):
    method: ClassVar[str] = "StepEnd"
    content: str = ""
    tool_calls: tuple[ToolCallInfo, ...] = ()
    reasoning_content: str = ""
    usage: Usage | None = None


class ToolCallBegin(_Event):
    method: ClassVar[str] = "ToolCallBegin"
    tool_call_id: str
    name: str
    arguments: str = ""


class ToolResult(_Event):
    method: ClassVar[str] = "ToolResult"
    tool_call_id: str
    name: str
    content: str = ""


class RunEnd(_Event):
    method: ClassVar[str] = "RunEnd"
    content: str = ""
    tool_calls: tuple[ToolCallInfo, ...] = ()
    reasoning_content: str = ""
    usage: Usage | None = None


SimpleEvent = (
    RunBegin | TurnBegin | TurnEnd | TextDelta | ReasoningDelta | StepEnd | ToolCallBegin | ToolResult | RunEnd
)
EVENT_CLASSES: dict[str, type[_Event]] = {
    cls.method: cls
    for cls in (RunBegin, TurnBegin, TurnEnd, TextDelta, ReasoningDelta, StepEnd, ToolCallBegin, ToolResult, RunEnd)
}


# --------------------------------------------------------------------------- encoding


def event_to_rpc(event: SimpleEvent) -> dict[str, Any]:
    """An event as a JSON-RPC 2.0 notification object (no id)."""
    if not isinstance(event, _Event):
        raise TypeError(
            f"expected a simple-stream event (RunBegin, TextDelta, ...), got {type(event).__name__}; "
            "Wire messages are encoded with encode_wire_line, or mapped first with SimpleStream / "
            "Agent.arun_events(..., form='simple')"
        )
    return {"jsonrpc": JSONRPC_VERSION, "method": event.method, "params": event.model_dump(mode="json")}


def rpc_to_event(message: Any) -> SimpleEvent:
    """Inverse of `event_to_rpc`; raises ValueError with a one-line reason on anything else."""
    if not isinstance(message, dict):
        raise ValueError("not a JSON-RPC notification (expected an object)")
    if message.get("jsonrpc") != JSONRPC_VERSION:
        raise ValueError('not a JSON-RPC 2.0 message ("jsonrpc" must be "2.0")')
    if "id" in message:
        raise ValueError("not an event: events are notifications and have no id")
    method = message.get("method")
    cls = EVENT_CLASSES.get(method) if isinstance(method, str) else None
    if cls is None:
        raise ValueError(f"unknown event method {method!r} (expected one of {', '.join(EVENT_CLASSES)})")
    params = message.get("params", {})
    if not isinstance(params, dict):
        raise ValueError(f"params of {method} must be an object")
    try:
        return cls.model_validate(params)  # type: ignore[return-value]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "params"
        raise ValueError(f"invalid {method} params: {where}: {first.get('msg')}") from None


def encode_event(event: SimpleEvent) -> str:
    """An event as compact JSON text (UTF-8 kept, no trailing newline)."""
    return json.dumps(event_to_rpc(event), ensure_ascii=False, separators=(",", ":"))


def decode_event(text: str | bytes) -> SimpleEvent:
    """Inverse of `encode_event`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not a JSON line: {exc}") from None
    return rpc_to_event(data)


def encode_event_line(event: SimpleEvent) -> str:
    """An event as one NDJSON line, ending in `\\n` (for HTTP chunks, SSE `data:`, WebSocket frames)."""
    return encode_event(event) + "\n"


def decode_event_line(line: str | bytes) -> SimpleEvent:
    """Inverse of `encode_event_line` (the trailing newline is optional)."""
    return decode_event(line)


# --------------------------------------------------------------------------- mapping


def tool_output_text(value: ToolReturnValue) -> str:
    """What a tool returned, as the text a client shows: an error's message first, then the output."""
    if isinstance(value.output, str):
        output = value.output
    else:
        output = "".join(p.text for p in value.output if isinstance(p, TextPart))
    if value.is_error:
        head = f"ERROR: {value.message}" if value.message else "ERROR"
        return f"{head}\n{output}" if output else head
    return output or value.message


_on: Handlers[Callable[[SimpleStream, Any, list[SimpleEvent]], None]] = Handlers()


class SimpleStream:
    """Maps the core's Wire messages, in order, to simple-stream events (pure: no I/O).

    One Run per top-level Wire turn; one Turn per model step (StepBegin), with its StepEnd when the
    model's reply is complete (the step's StatusUpdate; without usage or a message id, the step's
    end). A tool call appears as ToolCallBegin once its arguments are complete; its ToolResult
    after the StepEnd of its step. Nested turns (flow nodes) continue the Run; subagents' messages
    (SubagentEvent) are not part of this stream: the parent's tool call and its result stand for
    them. Anything else (approvals, status, hooks) is not in the note's vocabulary and maps to
    nothing.
    """

    def __init__(self) -> None:
        self._depth = 0
        self._turn = 0  # numbering of the run's turns (steps), from 1
        self._in_turn = False
        self._step_open = False
        self._text: list[str] = []
        self._think: list[str] = []
        self._calls: list[ToolCallInfo] = []
        self._open_call: ToolCall | None = None
        self._open_args: list[str] = []
        self._names: dict[str, str] = {}
        self._held: list[ToolResult] = []
        self._usage: Usage | None = None
        self._run_usage: Usage | None = None
        self._last = StepEnd()

    def feed(self, message: Any) -> list[SimpleEvent]:
        """The events one Wire message produces (often none): its handler's, outside a run only a
        TurnBegin's. Anything without a handler (approvals, hooks, subagents' messages) maps to nothing."""
        out: list[SimpleEvent] = []
        kind = type(message)
        if kind is ToolCallPart:
            if self._open_call is not None and message.arguments_part:
                self._open_args.append(message.arguments_part)
            return out
        self._close_call(out)
        handler = _on.get(kind)
        if handler is not None and (self._depth > 0 or kind is WireTurnBegin):
            handler(self, message, out)
        return out

    # ------------------------------------------------------------------ one handler per message

    @_on(WireTurnBegin)
    def _turn_begins(self, message: WireTurnBegin, out: list[SimpleEvent]) -> None:
        self._depth += 1
        if self._depth == 1:
            self._reset_run()
            out.append(RunBegin(user_input=user_input_text(message.user_input)))

    @_on(StepBegin)
    def _step_begins(self, message: StepBegin, out: list[SimpleEvent]) -> None:
        self._end_turn(out, stopped=False)
        self._turn += 1
        self._in_turn = self._step_open = True
        self._text, self._think, self._calls, self._usage = [], [], [], None
        out.append(TurnBegin(turn=self._turn))

    @_on(TextPart)
    def _text_part(self, message: TextPart, out: list[SimpleEvent]) -> None:
        if message.text:
            self._text.append(message.text)
            out.append(TextDelta(text=message.text))

    @_on(ThinkPart)
    def _think_part(self, message: ThinkPart, out: list[SimpleEvent]) -> None:
        if message.think:
            self._think.append(message.think)
            out.append(ReasoningDelta(text=message.think))

    @_on(ToolCall)
    def _tool_call(self, message: ToolCall, out: list[SimpleEvent]) -> None:
        self._open_call = message
        self._open_args = [message.function.arguments or ""]

    @_on(WireToolResult)
    def _tool_result(self, message: WireToolResult, out: list[SimpleEvent]) -> None:
        name = self._names.get(message.tool_call_id, "")
        result = ToolResult(tool_call_id=message.tool_call_id, name=name, content=tool_output_text(message.return_value))
        if self._step_open:
            self._held.append(result)  # after the step's StepEnd, as the note orders them
        else:
            out.append(result)

    @_on(StatusUpdate)
    def _status(self, message: StatusUpdate, out: list[SimpleEvent]) -> None:
        # Only a reply's update has a message id or usage. Without either (a provider that sends
        # neither), it looks like a plan-mode update: the step then ends at the next StepBegin or
        # TurnEnd, in the same order.
        if message.message_id is not None or message.token_usage is not None or message.context_tokens is not None:
            if message.token_usage is not None:
                self._usage = Usage.of(message.token_usage)
            self._end_step(out)

    @_on(StepInterrupted)
    def _interrupted(self, message: StepInterrupted, out: list[SimpleEvent]) -> None:
        self._end_step(out)

    @_on(WireTurnEnd)
    def _turn_ends(self, message: WireTurnEnd, out: list[SimpleEvent]) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._end_turn(out, stopped=True)
            last = self._last
            out.append(RunEnd(content=last.content, tool_calls=last.tool_calls,
                              reasoning_content=last.reasoning_content, usage=self._run_usage))  # fmt: skip

    def feed_all(self, messages: Iterable[Any]) -> Iterator[SimpleEvent]:
        for message in messages:
            yield from self.feed(message)

    # ------------------------------------------------------------------ internals

    def _reset_run(self) -> None:
        self._turn, self._in_turn, self._step_open = 0, False, False
        self._held, self._names, self._run_usage, self._last = [], {}, None, StepEnd()

    def _close_call(self, out: list[SimpleEvent]) -> None:
        call, self._open_call = self._open_call, None
        if call is None:
            return
        info = ToolCallInfo(id=call.id, name=call.function.name, arguments="".join(self._open_args))
        self._names[info.id] = info.name
        self._calls.append(info)
        out.append(ToolCallBegin(tool_call_id=info.id, name=info.name, arguments=info.arguments))

    def _end_step(self, out: list[SimpleEvent]) -> None:
        if not self._step_open:
            return
        self._step_open = False
        step = StepEnd(content="".join(self._text), tool_calls=tuple(self._calls),
                       reasoning_content="".join(self._think), usage=self._usage)  # fmt: skip
        self._last = step
        if self._usage is not None:
            self._run_usage = self._usage if self._run_usage is None else self._run_usage + self._usage
        out.append(step)
        out.extend(self._held)
        self._held = []

    def _end_turn(self, out: list[SimpleEvent], *, stopped: bool) -> None:
        self._end_step(out)
        out.extend(self._held)
        self._held = []
        if self._in_turn:
            self._in_turn = False
            out.append(TurnEnd(turn=self._turn, stopped=stopped))


def to_simple_events(messages: Iterable[Any]) -> list[SimpleEvent]:
    """Map a whole recorded sequence of Wire messages (e.g. a session's wire.jsonl) at once."""
    return list(SimpleStream().feed_all(messages))

