"""One step of a turn: the model's reply streamed out, each tool call started as soon as its
arguments are complete, their results awaited, and the history the model continues from.

A step cut short (cancel) still leaves a consistent history: the text so far, every call that
was started with its result, or a "cancelled" result for those that did not finish. A call whose
arguments never finished streaming is dropped. The core (`agent.py`) owns retries and the turn.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..llm.types import ChatProvider, ChatStream, Message, merge_deltas
from ..tools.base import ToolContext
from ..wire.types import StatusUpdate, TextPart, ThinkPart, ToolCall, ToolCallPart, ToolResult
from .context import Context
from .messages import assistant_message, tool_result_message
from .stream import MessageStream
from .toolset import ToolOutcome, Toolset, cancelled_result
from .usage import context_figures

TOOL_CANCEL_GRACE_S = 0.8


class StepHost(Protocol):
    """What a step needs of the session's core."""

    context: Context
    toolset: Toolset
    stream: MessageStream

    @property
    def plan_mode(self) -> bool: ...

    @property
    def max_context_size(self) -> int | None: ...

    def plan_reminder(self) -> str: ...

    def request_system_prompt(self) -> str: ...

    def tool_context(self, call: ToolCall, tool_name: str) -> ToolContext: ...

    def record_usage(self, stream: ChatStream) -> None:
        """A reply ended: count its tokens and cost (core/usage.py)."""
        ...


@dataclass
class _StepState:
    """What one model reply produced so far, enough to record a consistent history if cut short."""

    text: list[str] = field(default_factory=list)
    think: list[str] = field(default_factory=list)
    encrypted: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    tasks: dict[str, asyncio.Task[ToolOutcome]] = field(default_factory=dict)
    open_call: ToolCall | None = None
    open_args: list[str] = field(default_factory=list)

    def close_open_call(self) -> ToolCall | None:
        call, self.open_call = self.open_call, None
        if call is None:
            return None
        args = "".join(self.open_args)
        complete = call.model_copy(update={"function": call.function.model_copy(update={"arguments": args or None})})
        self.calls.append(complete)
        return complete

    def assistant(self) -> Message:
        return assistant_message("".join(self.think), self.encrypted, "".join(self.text), self.calls)


async def run_step(host: StepHost, provider: ChatProvider) -> list[ToolOutcome]:
    """One model request and its tool calls; the outcomes, in the order the model made the calls."""
    state = _StepState()
    context = host.context
    assert context.system_prompt is not None
    history: list[Message] = context.history
    if host.plan_mode:
        history = [*history, Message(role="user", content=host.plan_reminder())]
    stream: ChatStream = provider.stream(host.request_system_prompt(), host.toolset.specs(), history)
    send = host.stream.send
    try:
        try:
            # Deltas that arrived in one network read go on as one part (llm.types.merge_deltas).
            async for batch in stream.batches():
                for part in merge_deltas(batch):
                    send(part)
                    if isinstance(part, TextPart):
                        _dispatch(host, state, state.close_open_call())
                        state.text.append(part.text)
                    elif isinstance(part, ThinkPart):
                        _dispatch(host, state, state.close_open_call())
                        state.think.append(part.think)
                        if part.encrypted:
                            state.encrypted = part.encrypted
                    elif isinstance(part, ToolCall):
                        _dispatch(host, state, state.close_open_call())
                        state.open_call = part
                        state.open_args = [part.function.arguments or ""]
                    elif isinstance(part, ToolCallPart):
                        if state.open_call is not None and part.arguments_part:
                            state.open_args.append(part.arguments_part)
                    else:
                        _dispatch(host, state, state.close_open_call())
            _dispatch(host, state, state.close_open_call())
        finally:
            await stream.aclose()
        host.record_usage(stream)  # before the StatusUpdate: a front end showing it reads the cost
        _send_status(host, stream)
        outcomes = [await state.tasks[c.id] for c in state.calls]
    except asyncio.CancelledError:
        await _record_cut_short(host, state)
        raise
    except BaseException:
        await cancel_tasks(state.tasks.values())
        raise
    reply = state.assistant()
    results = [tool_result_message(o.call.id, o.result) for o in outcomes]
    # Kimi's order: the reply, the provider's count (only when it reported one; otherwise the
    # context keeps its estimate in memory), then the tool results.
    context.append([reply])
    if stream.usage is not None:
        context.set_token_count(stream.usage.total)
    context.append(results)
    return outcomes


def _dispatch(host: StepHost, state: _StepState, call: ToolCall | None) -> None:
    if call is None:
        return
    if call.id in state.tasks:  # a model reusing an id within one reply: keep ids unique
        call = call.model_copy(update={"id": f"{call.id}-{len(state.tasks)}"})
        state.calls[-1] = call
    state.tasks[call.id] = asyncio.create_task(_run_tool(host, call))


async def _run_tool(host: StepHost, call: ToolCall) -> ToolOutcome:
    outcome = await host.toolset.handle(call, lambda name: host.tool_context(call, name))
    host.stream.send(ToolResult(tool_call_id=call.id, return_value=outcome.result))
    return outcome


async def _record_cut_short(host: StepHost, state: _StepState) -> None:
    """Cancelled mid-step: stop the tools, then keep a history the model can continue from."""
    state.open_call = None  # a call whose arguments never finished streaming is dropped
    await cancel_tasks(state.tasks.values())
    results = []
    for call in state.calls:
        task = state.tasks.get(call.id)
        if task is not None and task.done() and not task.cancelled() and task.exception() is None:
            results.append(task.result().result)
        else:
            cancelled = cancelled_result()
            host.stream.send(ToolResult(tool_call_id=call.id, return_value=cancelled))
            results.append(cancelled)
    if state.text or state.think or state.calls:
        messages = [state.assistant()]
        messages += [tool_result_message(c.id, r) for c, r in zip(state.calls, results, strict=True)]
        host.context.append(messages)


def _send_status(host: StepHost, stream: ChatStream) -> None:
    """The reply's figures. Without usage from the provider the context figures are null, as Kimi
    sends them: a client's meter shows no guess (the estimate only decides compaction)."""
    usage = stream.usage
    figures = context_figures(usage.input, host.max_context_size) if usage is not None else {}
    status = StatusUpdate(token_usage=usage, message_id=stream.id, plan_mode=host.plan_mode, **figures)
    host.stream.send(status)


async def cancel_tasks(tasks: Any) -> None:
    """Cancel what is still running and give it a moment to end (a tool's cleanup)."""
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=TOOL_CANCEL_GRACE_S)
