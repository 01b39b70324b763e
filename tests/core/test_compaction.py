"""Compaction maths (kimi_acp/core/compaction.py): when to compact and where to split the history."""

from __future__ import annotations

import pytest

from kimi_acp.config import LoopControl
from kimi_acp.core.compaction import should_compact, split_point
from kimi_acp.llm.types import Message
from kimi_acp.wire.types import (
    FunctionBody,
    ToolCall,
)


@pytest.mark.parametrize(
    ("tokens", "max_size", "expected"),
    [
        (0, 100_000, False),
        (74_999, 100_000, False),  # reserve is capped at a quarter of the window: 25 000
        (75_000, 100_000, True),
        (5_999, 8_000, False),  # small window: reserve 2 000, not 50 000
        (6_000, 8_000, True),
        (849_999, 1_000_000, False),  # large window: the ratio triggers first
        (850_000, 1_000_000, True),
        (200_000, 262_144, False),
        (212_144, 262_144, True),  # 262 144 - 50 000
    ],
)
def test_should_compact(tokens: int, max_size: int, expected: bool) -> None:
    assert should_compact(tokens, max_size, LoopControl()) is expected


def test_should_compact_uses_loop_control() -> None:
    loop = LoopControl(compaction_trigger_ratio=0.5, reserved_context_size=1000)
    assert should_compact(50_000, 100_000, loop)
    assert not should_compact(49_999, 100_000, loop)


def msg(role: str, calls: int = 0) -> Message:
    tool_calls = [ToolCall(id=f"c{i}", function=FunctionBody(name="Glob", arguments="{}")) for i in range(calls)]
    return Message(role=role, content=role, tool_calls=tool_calls or None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        ([], 0),
        (["user"], 0),
        (["user", "assistant"], 0),
        (["user", "assistant", "user", "assistant"], 2),
        (["user", "assistant", "user", "assistant", "user"], 3),
        (["user", "assistant+", "tool", "assistant"], 1),  # the call stays with its result
        (["user", "assistant", "user", "assistant+", "tool", "tool"], 2),
        (["user", "assistant+", "tool", "assistant+", "tool", "assistant"], 3),
    ],
)
def test_split_point(roles: list[str], expected: int) -> None:
    history = [msg(r.rstrip("+"), calls=2 if r.endswith("+") else 0) for r in roles]
    cut = split_point(history)
    assert cut == expected
    if cut:
        assert history[cut].role in ("user", "assistant")
        kept_ids = {c.id for m in history[cut:] for c in m.tool_calls or ()}
        assert all(m.tool_call_id in kept_ids or m.tool_call_id is None for m in history[cut:])
