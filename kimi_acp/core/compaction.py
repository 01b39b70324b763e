"""Compaction: when the context nears the model's limit, older history becomes a summary.

The last two user/assistant exchanges stay verbatim (never splitting a tool call from its result);
everything before them is summarised by the model itself, without tools. The old context file is
rotated, not deleted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..config import Config, LoopControl
from ..llm.errors import is_retryable
from ..llm.types import ChatProvider, ChatStream, Message
from ..wire.types import CompactionBegin, CompactionEnd, TextPart, ToolCall
from .context import Context
from .hook_points import HookRunner
from .messages import estimate_tokens, system_note
from .stream import MessageStream


class _ToolNames(Protocol):
    def names(self) -> list[str]: ...


class CompactionHost(Protocol):
    """The parts of a session's agent that compaction reads and rewrites (AgentCore has them)."""

    context: Context
    stream: MessageStream
    hooks: HookRunner

    @property
    def config(self) -> Config: ...

    @property
    def work_dir(self) -> Path: ...

    @property
    def toolset(self) -> _ToolNames: ...

    def fresh_system_prompt(self) -> str:
        """The session's system prompt built anew (the agent file's template, skills, workspace)."""
        ...

    def record_usage(self, stream: ChatStream) -> None:
        """The summary's reply ended: count its tokens and cost (core/usage.py)."""
        ...

PRESERVED_MESSAGES = 2
SUMMARY_SYSTEM_PROMPT = "You are a helpful assistant that compacts conversation context."
SUMMARY_INSTRUCTIONS = """\
The conversation above between a user and a coding agent is getting too long for the context window.
Write a summary that lets the agent continue the work without the original messages. Include:
- the user's goals and requirements, in their own words where it matters;
- what has been done so far: files read or changed (with paths), commands run and their outcomes;
- decisions made and why, and anything that failed and should not be retried;
- the current state and the next steps.
Be precise and complete about facts (names, paths, numbers); leave out chit-chat. Reply with the summary only."""


def should_compact(token_count: int, max_context_size: int, loop: LoopControl) -> bool:
    """Near the limit: past the trigger ratio, or too little room left for the next reply.

    The reserve is capped at a quarter of the window so that small local models (8k-32k) are not
    compacted on every step because of a reserve meant for 128k+ windows.
    """
    reserve = min(loop.reserved_context_size, max_context_size // 4)
    return token_count >= max_context_size * loop.compaction_trigger_ratio or token_count + reserve >= max_context_size


def split_point(history: list[Message]) -> int:
    """Index where the preserved tail starts (0 when there is nothing worth compacting)."""
    kept = 0
    for i in range(len(history) - 1, -1, -1):
        if history[i].role in ("user", "assistant"):
            kept += 1
            if kept >= PRESERVED_MESSAGES:
                return i
    return 0


def _render(history: list[Message]) -> str:
    chunks = []
    for i, message in enumerate(history, 1):
        body = message.text()
        calls = "".join(f"\n[tool call {c.function.name}: {c.function.arguments or ''}]" for c in message.tool_calls or ())
        chunks.append(f"## Message {i}\nRole: {message.role}\nContent:\n{body}{calls}")
    return "\n\n".join(chunks)


async def compact(
    core: CompactionHost, provider: ChatProvider, focus: str = "", trigger: str = "manual"
) -> bool:
    """Summarise older history; returns False when there was nothing to compact.

    `trigger` ("auto" near the limit, "manual" for /compact) is what PreCompact / PostCompact hooks
    match. PreCompact is awaited but cannot stop a compaction; PostCompact runs in the background.
    """
    history = core.context.history
    cut = split_point(history)
    if cut == 0:
        return False
    await core.hooks.run("PreCompact", trigger, {"trigger": trigger, "token_count": core.context.token_count})
    core.stream.send(CompactionBegin())
    try:
        instructions = SUMMARY_INSTRUCTIONS + (f"\n\nPay particular attention to: {focus}" if focus else "")
        request = [Message(role="user", content=f"{_render(history[:cut])}\n\n---\n\n{instructions}")]
        summary, output_tokens = await _summarise(
            provider, request, core.config.loop_control.max_retries_per_step, core.record_usage
        )
        preserved = history[cut:]
        head = Message(
            role="user",
            content=[system_note("Previous context has been compacted. Here is the compaction output:"), TextPart(text=summary)],
        )
        new_history = [head, *preserved]
        system_prompt = core.fresh_system_prompt()
        estimated = output_tokens + estimate_tokens(preserved)
        core.context.rotate(system_prompt, new_history, estimated)
        core.context.checkpoint()
    finally:
        core.stream.send(CompactionEnd())
    core.hooks.fire("PostCompact", trigger, {"trigger": trigger, "estimated_token_count": estimated})
    return True


async def _summarise(
    provider: ChatProvider, request: list[Message], attempts: int, on_reply: Callable[[ChatStream], None]
) -> tuple[str, int]:
    for attempt in range(1, attempts + 1):
        stream = provider.stream(SUMMARY_SYSTEM_PROMPT, [], request)
        try:
            text = []
            async for part in stream:
                if isinstance(part, TextPart):
                    text.append(part.text)
                elif isinstance(part, ToolCall):
                    pass
            on_reply(stream)
            usage = stream.usage
            return "".join(text).strip(), usage.output if usage else 0
        except Exception as exc:
            if attempt >= attempts or not is_retryable(exc):
                raise
            await asyncio.sleep(0.3 * 2 ** (attempt - 1))
        finally:
            await stream.aclose()
    raise AssertionError("unreachable")
