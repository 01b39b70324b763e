"""Wire envelopes: every message type round-trips; legacy names, aliases, unknown blocks, errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kimi_acp.wire.serde import WireDecodeError, from_envelope, to_envelope, type_name
from kimi_acp.wire.types import (
    EVENT_TYPES,
    REQUEST_TYPES,
    ApprovalRequest,
    ApprovalResponse,
    AudioURLPart,
    BackgroundTaskDisplayBlock,
    BriefDisplayBlock,
    BtwBegin,
    BtwEnd,
    CompactionBegin,
    CompactionEnd,
    DiffDisplayBlock,
    FunctionBody,
    HookRequest,
    HookResolved,
    HookTriggered,
    ImageURLPart,
    MCPLoadingBegin,
    MCPLoadingEnd,
    MediaURL,
    Notification,
    PlanDisplay,
    QuestionItem,
    QuestionOption,
    QuestionRequest,
    Request,
    ShellDisplayBlock,
    StatusUpdate,
    SteerInput,
    StepBegin,
    StepInterrupted,
    StepRetry,
    SubagentEvent,
    TextPart,
    ThinkPart,
    TodoDisplayBlock,
    TodoDisplayItem,
    TokenUsage,
    ToolCall,
    ToolCallPart,
    ToolCallRequest,
    ToolResult,
    ToolReturnValue,
    TurnBegin,
    TurnEnd,
    UnknownDisplayBlock,
    VideoURLPart,
    WireEnvelope,
    user_input_text,
)

SAMPLES: dict[str, Any] = {
    "TurnBegin": TurnBegin(user_input=[TextPart(text="look"), ImageURLPart(image_url=MediaURL(url="data:x", id="i1"))]),
    "TurnEnd": TurnEnd(),
    "StepBegin": StepBegin(n=3),
    "StepInterrupted": StepInterrupted(),
    "StepRetry": StepRetry(n=1, next_attempt=2, max_attempts=3, wait_s=0.5, error_type="APIStatusError", status_code=429),
    "CompactionBegin": CompactionBegin(),
    "CompactionEnd": CompactionEnd(),
    "MCPLoadingBegin": MCPLoadingBegin(),
    "MCPLoadingEnd": MCPLoadingEnd(),
    "StatusUpdate": StatusUpdate(
        context_usage=0.5,
        context_tokens=10,
        max_context_tokens=20,
        token_usage=TokenUsage(input_other=1, output=2, input_cache_read=3, input_cache_creation=4),
        message_id="m1",
        plan_mode=True,
        mcp_status={"loading": False, "connected": 1, "total": 1, "tools": 2, "servers": []},
    ),
    "Notification": Notification(id="n1", category="task", type="done", title="T", body="B", severity="warning",
                                 created_at=1.5, payload={"k": [1]}),
    "ToolResult": ToolResult(
        tool_call_id="c1",
        return_value=ToolReturnValue(
            is_error=False,
            output=[TextPart(text="out"), ThinkPart(think="hm")],
            message="ok",
            display=[
                BriefDisplayBlock(text="brief"),
                DiffDisplayBlock(path="/a", old_text="x", new_text="y", old_start=1, new_start=1),
                TodoDisplayBlock(items=[TodoDisplayItem(title="t", status="in_progress")]),
                ShellDisplayBlock(language="bash", command="ls"),
                BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status="running", description="d"),
                UnknownDisplayBlock(type="future_block", data={"task_id": "b1"}),
            ],
            extras={"e": 1},
        ),
    ),
    "ApprovalResponse": ApprovalResponse(request_id="r1", response="reject", feedback="no"),
    "SubagentEvent": SubagentEvent(parent_tool_call_id="c1", agent_id="a1", subagent_type="coder",
                                   event=WireEnvelope(type="StepBegin", payload={"n": 1})),
    "BtwBegin": BtwBegin(id="b1", question="why?"),
    "BtwEnd": BtwEnd(id="b1", response="because", error=None),
    "SteerInput": SteerInput(user_input="steer me"),
    "PlanDisplay": PlanDisplay(content="# plan", file_path="/p.md"),
    "HookTriggered": HookTriggered(event="PreToolUse", target="Shell", hook_count=2),
    "HookResolved": HookResolved(event="PreToolUse", target="Shell", action="block", reason="no", duration_ms=5),
    "ToolCall": ToolCall(id="c1", function=FunctionBody(name="Shell", arguments='{"command":"ls"}'), extras={"x": 1}),
    "ToolCallPart": ToolCallPart(arguments_part='{"a"'),
    "ApprovalRequest": ApprovalRequest(
        id="r1", tool_call_id="c1", sender="Shell", action="run command", description="Run `ls`",
        display=[ShellDisplayBlock(language="bash", command="ls")], source_kind="foreground_turn", source_id="t1",
    ),
    "ToolCallRequest": ToolCallRequest(id="c9", name="ext", arguments='{"p": 1}'),
    "QuestionRequest": QuestionRequest(
        id="q1", tool_call_id="c2",
        questions=[QuestionItem(question="Which?", header="H", options=[QuestionOption(label="A", description="a")],
                                multi_select=True)],
    ),
    "HookRequest": HookRequest(id="h1", subscription_id="s1", event="PreToolUse", target="Shell",
                               input_data={"tool_input": {"command": "ls"}}),
}


def round_trip(message: Any) -> Any:
    line = json.dumps(to_envelope(message))
    return from_envelope(json.loads(line))


def test_samples_cover_every_type() -> None:
    assert set(SAMPLES) == set(EVENT_TYPES) | set(REQUEST_TYPES)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_message_type_round_trips(kind: str) -> None:
    message = SAMPLES[kind]
    envelope = to_envelope(message)
    assert envelope["type"] == kind == type_name(message)
    assert set(envelope) == {"type", "payload"}
    decoded = round_trip(message)
    assert type(decoded) is type(message)
    assert decoded == message
    assert isinstance(decoded, Request) == (kind in REQUEST_TYPES)


@pytest.mark.parametrize(
    "part",
    [
        TextPart(text="t"),
        ThinkPart(think="th", encrypted="enc"),
        ImageURLPart(image_url=MediaURL(url="https://x/i.png")),
        AudioURLPart(audio_url=MediaURL(url="https://x/a.mp3", id="a")),
        VideoURLPart(video_url=MediaURL(url="https://x/v.mp4")),
    ],
)
def test_content_parts_use_the_content_part_envelope(part: Any) -> None:
    envelope = to_envelope(part)
    assert envelope["type"] == "ContentPart"
    assert envelope["payload"]["type"] == part.type
    decoded = round_trip(part)
    assert type(decoded) is type(part) and decoded == part


def test_status_update_serializes_every_key_including_nulls() -> None:
    payload = to_envelope(StatusUpdate(plan_mode=False))["payload"]
    assert payload == {
        "context_usage": None, "context_tokens": None, "max_context_tokens": None, "token_usage": None,
        "message_id": None, "plan_mode": False, "mcp_status": None,
    }


def test_legacy_approval_request_resolved_decodes_as_approval_response() -> None:
    decoded = from_envelope(
        {"type": "ApprovalRequestResolved", "payload": {"request_id": "r1", "response": "approve_for_session"}}
    )
    assert decoded == ApprovalResponse(request_id="r1", response="approve_for_session")
    assert to_envelope(decoded)["type"] == "ApprovalResponse"


def test_subagent_event_accepts_legacy_task_tool_call_id() -> None:
    decoded = from_envelope(
        {
            "type": "SubagentEvent",
            "payload": {"task_tool_call_id": "task-1", "event": {"type": "TurnEnd", "payload": {}}},
        }
    )
    assert isinstance(decoded, SubagentEvent)
    assert decoded.parent_tool_call_id == "task-1"
    assert decoded.event == WireEnvelope(type="TurnEnd", payload={})
    # the new name wins when both are present
    both = SubagentEvent.model_validate(
        {"parent_tool_call_id": "new", "task_tool_call_id": "old", "event": {"type": "TurnEnd"}}
    )
    assert both.parent_tool_call_id == "new"
    assert "task_tool_call_id" not in to_envelope(decoded)["payload"]


def test_unknown_display_block_round_trips() -> None:
    raw = {
        "tool_call_id": "c1",
        "return_value": {"is_error": False, "output": "", "message": "", "display": [{"type": "foo", "x": 1}]},
    }
    result = from_envelope({"type": "ToolResult", "payload": raw})
    (block,) = result.return_value.display
    assert isinstance(block, UnknownDisplayBlock)
    assert (block.type, block.data) == ("foo", {"x": 1})
    serialized = to_envelope(result)["payload"]["return_value"]["display"]
    assert serialized == [{"type": "foo", "data": {"x": 1}}]
    again = round_trip(result)
    assert again == result
    assert to_envelope(again)["payload"]["return_value"]["display"] == [{"type": "foo", "data": {"x": 1}}]


def test_known_display_blocks_keep_their_classes() -> None:
    result = round_trip(SAMPLES["ToolResult"])
    kinds = [type(b) for b in result.return_value.display]
    assert kinds == [BriefDisplayBlock, DiffDisplayBlock, TodoDisplayBlock, ShellDisplayBlock,
                     BackgroundTaskDisplayBlock, UnknownDisplayBlock]


def test_unknown_payload_keys_from_newer_peers_are_ignored() -> None:
    decoded = from_envelope({"type": "StepBegin", "payload": {"n": 2, "added_in_2030": True}})
    assert decoded == StepBegin(n=2)


@pytest.mark.parametrize(
    ("envelope", "expected"),
    [
        ({"type": "NoSuchEvent", "payload": {}}, "unknown Wire message type 'NoSuchEvent'"),
        ({"type": "StepBegin", "payload": {"n": "x"}}, "invalid StepBegin payload: n:"),
        ({"type": "StepBegin", "payload": {}}, "invalid StepBegin payload: n: Field required"),
        ({"type": "ContentPart", "payload": {"type": "hologram"}}, "invalid ContentPart payload"),
        ({"type": "ApprovalResponse", "payload": {"request_id": "r", "response": "maybe"}},
         "invalid ApprovalResponse payload: response:"),
        ({"payload": {}}, "a Wire message needs a string `type`"),
        ({"type": 5, "payload": {}}, "a Wire message needs a string `type`"),
        ("TurnEnd", "a Wire message must be an object"),
        (None, "a Wire message must be an object"),
    ],
)
def test_decode_errors_are_one_line_wire_decode_errors(envelope: Any, expected: str) -> None:
    with pytest.raises(WireDecodeError) as info:
        from_envelope(envelope)
    message = str(info.value)
    assert message.startswith(expected)
    assert "\n" not in message
    assert isinstance(info.value, ValueError)


def test_type_name_rejects_non_messages() -> None:
    with pytest.raises(TypeError):
        type_name(object())
    with pytest.raises(TypeError):
        to_envelope(TodoDisplayItem(title="x", status="done"))  # a model, but not a Wire message


def test_user_input_text() -> None:
    assert user_input_text("plain") == "plain"
    assert user_input_text([TextPart(text="a"), ImageURLPart(image_url=MediaURL(url="u")), TextPart(text="b")]) == "ab"


def test_token_usage_totals() -> None:
    usage = TokenUsage(input_other=7, output=3, input_cache_read=2, input_cache_creation=1)
    assert (usage.input, usage.total) == (10, 13)


# --------------------------------------------------------------------------- requests carry a future


async def test_request_resolve_and_wait() -> None:
    request = ToolCallRequest(id="c1", name="ext")
    assert not request.resolved
    waiter = asyncio.create_task(request.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    assert request.resolve("first") is True
    assert request.resolved
    assert request.resolve("second") is False  # only the first answer counts
    assert await waiter == "first"
    assert await request.wait() == "first"  # later waiters see the same answer


async def test_cancelling_a_waiter_does_not_settle_the_request() -> None:
    request = ToolCallRequest(id="c1", name="ext")
    waiter = asyncio.create_task(request.wait())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not request.resolved  # the future is shielded
    assert request.resolve("late") is True
    assert await request.wait() == "late"


async def test_resolve_before_anyone_waits() -> None:
    request = ApprovalRequest(id="r", tool_call_id="c", sender="s", action="a", description="d")
    assert request.resolve(ApprovalResponse(request_id="r", response="approve"))
    assert (await request.wait()).response == "approve"


def test_a_request_decoded_from_the_wire_has_no_future_yet() -> None:
    decoded = round_trip(SAMPLES["HookRequest"])
    assert not decoded.resolved
    assert decoded == SAMPLES["HookRequest"]
