"""The Python API (`Agent.arun`, `arun_events`, `arun_wire`, Kimi Wire NDJSON helpers) on `_scripted_echo`.

The simple event stream (`arun_wire` default form) is tested in tests/test_simple_stream.py."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import Agent, decode_wire_line, encode_wire_line
from kimi_acp.llm.errors import APIStatusError, ChatProviderError
from kimi_acp.sessions import SessionSelectionError, find, work_dir_key
from kimi_acp.wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    FunctionBody,
    QuestionRequest,
    StatusUpdate,
    StepBegin,
    StepInterrupted,
    TextPart,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    TurnBegin,
    TurnEnd,
)
from tests.support.wire_client import scripted_config, tool_call

MakeAgent = Callable[..., Agent]


@pytest.fixture
async def make_agent(tmp_path: Path, work_dir: Path) -> AsyncIterator[MakeAgent]:
    """Agents on scripted replies (each its own scripts file); all closed at teardown."""
    made: list[Agent] = []
    counter = itertools.count()

    def make(scripts: Sequence[str], **kwargs: Any) -> Agent:
        directory = tmp_path / f"cfg{next(counter)}"
        directory.mkdir()
        agent = Agent(work_dir=work_dir, config=scripted_config(directory, scripts), **kwargs)
        made.append(agent)
        return agent

    yield make
    for agent in made:
        await agent.aclose()


def context_roles_and_texts(work_dir: Path, session_id: str) -> list[tuple[str, str]]:
    session = find(work_dir, session_id)
    assert session is not None
    out = []
    for line in session.context_file.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        out.append((data["role"], json.dumps(data.get("content", ""))))
    return out


async def collect(agent: Agent, user_input: Any) -> list[Any]:
    return [message async for message in agent.arun_events(user_input)]


async def test_arun_returns_the_text_of_the_final_step(make_agent: MakeAgent, work_dir: Path) -> None:
    agent = make_agent(["text: let me look\n" + tool_call("g1", "Glob", {"pattern": "*"}), "text: final\ntext:  answer"])
    assert await agent.arun("what is here?") == "final answer"
    roles = [role for role, _ in context_roles_and_texts(work_dir, agent.session_id)]
    assert roles.count("assistant") == 2 and roles.count("tool") == 1


async def test_a_lone_surrogate_in_the_input_is_stored_as_a_replacement_character(make_agent: MakeAgent, work_dir: Path) -> None:
    """JSON accepts "\\ud800", UTF-8 cannot hold it: the turn stores U+FFFD instead of failing half-written."""
    agent = make_agent(["text: seen", "text: again"])
    assert await agent.arun("a\ud800b") == "seen"
    assert ("user", json.dumps("a\ufffdb")) in context_roles_and_texts(work_dir, agent.session_id)
    events = await collect(agent, [TextPart(text="c\udc00d")])
    assert isinstance(events[0], TurnBegin) and events[0].user_input == [TextPart(text="c\ufffdd")]
    session = find(work_dir, agent.session_id)
    assert session is not None
    types = [json.loads(line).get("message", {}).get("type") for line in session.wire_file.read_text(encoding="utf-8").splitlines()]
    assert types.count("TurnBegin") == types.count("TurnEnd") == 2


async def test_arun_events_in_order(make_agent: MakeAgent) -> None:
    agent = make_agent(["text: Hel\ntext: lo\nusage: input_other=5 output=2"])
    messages = await collect(agent, "hi")
    assert [type(m) for m in messages] == [TurnBegin, StepBegin, TextPart, TextPart, StatusUpdate, TurnEnd]
    assert messages[0] == TurnBegin(user_input="hi")
    assert messages[1] == StepBegin(n=1)
    assert [m.text for m in messages if isinstance(m, TextPart)] == ["Hel", "lo"]  # unmerged chunks
    assert messages[4].token_usage.input_other == 5 and messages[4].context_tokens == 5


async def test_arun_events_raises_the_provider_error_after_turn_end(make_agent: MakeAgent) -> None:
    agent = make_agent(["error: 400 bad request from the fake"])
    seen: list[Any] = []
    with pytest.raises(APIStatusError) as info:
        async for message in agent.arun_events("hi"):
            seen.append(message)
    assert info.value.status_code == 400 and "bad request from the fake" in str(info.value)
    assert isinstance(info.value, ChatProviderError)
    assert [type(m) for m in seen] == [TurnBegin, StepBegin, StepInterrupted, TurnEnd]
    # arun raises it as well, and the agent stays usable for the next turn
    agent2 = make_agent(["error: 400 again", "text: recovered"])
    with pytest.raises(APIStatusError):
        await agent2.arun("one")
    assert await agent2.arun("two") == "recovered"


async def test_no_model_configured_raises_after_turn_end(work_dir: Path) -> None:
    agent = Agent(work_dir=work_dir, config={})
    seen: list[Any] = []
    try:
        with pytest.raises(Exception) as info:
            async for message in agent.arun_events("hi"):
                seen.append(message)
        assert "LLM is not set" in str(info.value)
        assert [type(m) for m in seen] == [TurnBegin, TurnEnd]
    finally:
        await agent.aclose()


def shell_scripts(marker: Path) -> list[str]:
    return [tool_call("s1", "Shell", {"command": f"touch {marker} && echo made"}), "text: after the shell call"]


@pytest.mark.parametrize("style", ["sync", "async"])
async def test_rejecting_callback_stops_a_shell_call(make_agent: MakeAgent, work_dir: Path, style: str) -> None:
    marker = work_dir / "marker"
    asked: list[ApprovalRequest] = []

    def reject(request: ApprovalRequest) -> str:
        asked.append(request)
        return "reject"

    async def reject_async(request: ApprovalRequest) -> str:
        return reject(request)

    agent = make_agent(shell_scripts(marker), on_approval=reject if style == "sync" else reject_async)
    messages = await collect(agent, "make a marker")
    assert not marker.exists()
    assert len(asked) == 1
    assert (asked[0].sender, asked[0].action, asked[0].tool_call_id) == ("Shell", "run command", "s1")
    responses = [m for m in messages if isinstance(m, ApprovalResponse)]
    assert [(r.request_id, r.response) for r in responses] == [(asked[0].id, "reject")]
    result = next(m for m in messages if isinstance(m, ToolResult))
    assert result.return_value.is_error and "rejected by the user" in result.return_value.message
    assert [m.n for m in messages if isinstance(m, StepBegin)] == [1]  # the turn stopped there
    assert isinstance(messages[-1], TurnEnd)


async def test_reject_with_feedback_lets_the_model_continue(make_agent: MakeAgent, work_dir: Path) -> None:
    marker = work_dir / "marker"
    agent = make_agent(shell_scripts(marker), on_approval=lambda request: ("reject", "use python instead"))
    messages = await collect(agent, "go")
    assert not marker.exists()
    assert [m.n for m in messages if isinstance(m, StepBegin)] == [1, 2]
    response = next(m for m in messages if isinstance(m, ApprovalResponse))
    assert (response.response, response.feedback) == ("reject", "use python instead")
    assert "".join(m.text for m in messages if isinstance(m, TextPart)) == "after the shell call"
    assert "User feedback: use python instead" in json.dumps(context_roles_and_texts(work_dir, agent.session_id))


async def test_approving_callback_runs_the_call(make_agent: MakeAgent, work_dir: Path) -> None:
    marker = work_dir / "marker"

    async def approve(request: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(request_id=request.id, response="approve")

    agent = make_agent(shell_scripts(marker), on_approval=approve)
    assert await agent.arun("go") == "after the shell call"
    assert marker.exists()


async def test_garbled_callback_answer_is_a_rejection(make_agent: MakeAgent, work_dir: Path) -> None:
    marker = work_dir / "marker"
    agent = make_agent(shell_scripts(marker), on_approval=lambda request: "sure, why not")
    await agent.arun("go")
    assert not marker.exists()


def broken_callback(request: ApprovalRequest) -> str:
    raise RuntimeError("bug in the embedding program")


async def broken_async_callback(request: ApprovalRequest) -> str:
    raise RuntimeError("bug in the embedding program")


@pytest.mark.parametrize(
    "callback",
    [broken_callback, broken_async_callback, lambda request: ("reject",), lambda request: ("approve", "x", "y")],
    ids=["raises", "async-raises", "short-tuple", "long-tuple"],
)
async def test_a_failing_callback_is_a_refusal_not_a_hang(
    make_agent: MakeAgent, work_dir: Path, callback: Callable[[ApprovalRequest], Any]
) -> None:
    marker = work_dir / "marker"
    agent = make_agent(shell_scripts(marker), on_approval=callback)
    messages = await asyncio.wait_for(collect(agent, "go"), 10)
    assert not marker.exists()
    assert [m.response for m in messages if isinstance(m, ApprovalResponse)] == ["reject"]
    assert isinstance(messages[-1], TurnEnd)


async def test_no_callback_means_yolo(make_agent: MakeAgent, work_dir: Path) -> None:
    marker = work_dir / "marker"
    agent = make_agent(shell_scripts(marker))
    messages = await collect(agent, "go")
    assert marker.exists()
    assert not [m for m in messages if isinstance(m, (ApprovalRequest, ApprovalResponse))]
    result = next(m for m in messages if isinstance(m, ToolResult))
    assert not result.return_value.is_error and "made" in str(result.return_value.output)
    assert find(work_dir, agent.session_id).state.approval.yolo is False  # type: ignore[union-attr]


async def test_arun_wire_lines_decode_to_the_same_messages(make_agent: MakeAgent, work_dir: Path) -> None:
    scripts = ["think: hmm\ntext: héllo 世界\n" + tool_call("s1", "Shell", {"command": "echo wired"}), "text: done"]
    approvals: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> str:
        approvals.append(request)
        return "approve"

    lines = [line async for line in make_agent(scripts, on_approval=approve).arun_wire("go", form="kimi")]
    expected = await collect(make_agent(scripts, on_approval=lambda r: "approve"), "go")
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    decoded = [decode_wire_line(line) for line in lines]
    assert len(decoded) == len(expected)
    for got, want in zip(decoded, expected):
        assert type(got) is type(want)
        if isinstance(want, (ApprovalRequest, ApprovalResponse)):
            continue  # request ids are fresh uuids per run
        assert got == want
    for line, message in zip(lines, decoded):
        data = json.loads(line)
        assert data["jsonrpc"] == "2.0"
        if isinstance(message, ApprovalRequest):
            assert data["method"] == "request" and data["id"] == message.id == approvals[0].id
        else:
            assert data["method"] == "event" and "id" not in data
        assert encode_wire_line(message) == line  # and back again
    assert "héllo 世界" in "".join(lines)  # UTF-8 kept, not escaped


def test_encode_wire_line_of_requests_and_events() -> None:
    approval = ApprovalRequest(id="ap-1", tool_call_id="c1", sender="Shell", action="run command", description="d")
    data = json.loads(encode_wire_line(approval))
    assert (data["method"], data["id"], data["params"]["type"]) == ("request", "ap-1", "ApprovalRequest")
    external = json.loads(encode_wire_line(ToolCallRequest(id="call-9", name="ext", arguments="{}")))
    assert (external["method"], external["id"]) == ("request", "call-9")
    question = json.loads(encode_wire_line(QuestionRequest(id="q-1", tool_call_id="c2", questions=[])))
    assert question["id"] == "q-1"
    event = json.loads(encode_wire_line(ToolCall(id="c1", function=FunctionBody(name="Shell", arguments="{}"))))
    assert event == {
        "jsonrpc": "2.0",
        "method": "event",
        "params": {"type": "ToolCall", "payload": {"type": "function", "id": "c1",
                                                    "function": {"name": "Shell", "arguments": "{}"}, "extras": None}},
    }


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("{not json", "not a JSON line"),
        ("[1, 2]", "not a Wire event line"),
        ('{"jsonrpc": "2.0", "method": "prompt", "params": {}}', "not a Wire event line"),
        ('{"jsonrpc": "2.0", "id": "1", "result": {}}', "not a Wire event line"),
        ('{"jsonrpc": "2.0", "method": "event", "params": {"type": "Nope", "payload": {}}}', "unknown Wire message type"),
        ('{"jsonrpc": "2.0", "method": "event", "params": {"type": "StepBegin", "payload": {"n": "x"}}}',
         "invalid StepBegin payload"),
        ('{"jsonrpc": "2.0", "method": "event", "params": "TurnEnd"}', "must be an object"),
        ('{"jsonrpc": "2.0", "method": "event"}', "must be an object"),
        (b"\xff\xfe", "not a JSON line"),
    ],
)
def test_decode_wire_line_errors_are_one_line_value_errors(line: str | bytes, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        decode_wire_line(line)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_decode_wire_line_accepts_bytes_and_legacy_names() -> None:
    line = b'{"jsonrpc":"2.0","method":"event","params":{"type":"ApprovalRequestResolved","payload":{"request_id":"r","response":"approve"}}}\n'
    assert decode_wire_line(line) == ApprovalResponse(request_id="r", response="approve")


async def test_session_resumes_an_earlier_session(make_agent: MakeAgent, work_dir: Path) -> None:
    first = make_agent(["text: first answer"])
    assert await first.arun("first question") == "first answer"
    await first.aclose()
    second = make_agent(["text: second answer"], session=first.session_id)
    assert second.session_id == first.session_id
    assert await second.arun("second question") == "second answer"
    users = [text for role, text in context_roles_and_texts(work_dir, first.session_id) if role == "user"]
    assert users == ['"first question"', '"second question"']
    assert len(list((Path(os.environ["KIMI_SHARE_DIR"]) / "sessions" / work_dir_key(work_dir)).iterdir())) == 1


async def test_session_with_a_new_id_creates_it(make_agent: MakeAgent, work_dir: Path) -> None:
    agent = make_agent(["text: ok"], session="chosen-id")
    assert agent.session_id == "chosen-id"
    await agent.arun("hi")
    assert find(work_dir, "chosen-id") is not None
    with pytest.raises(SessionSelectionError):
        make_agent([], session="../escape")


async def test_continue_session_picks_the_last_session(make_agent: MakeAgent, work_dir: Path) -> None:
    with pytest.raises(SessionSelectionError, match="No previous session"):
        make_agent([], continue_session=True)
    first = make_agent(["text: one"])
    await first.arun("remember 42")
    await first.aclose()
    other = make_agent([])  # created but never used: not "the last session"
    assert other.session_id != first.session_id
    resumed = make_agent(["text: two"], continue_session=True)
    assert resumed.session_id == first.session_id
    await resumed.arun("what did I say?")
    users = [text for role, text in context_roles_and_texts(work_dir, first.session_id) if role == "user"]
    assert users == ['"remember 42"', '"what did I say?"']


async def test_a_session_busy_in_another_process_raises_session_busy_before_any_message(
    make_agent: MakeAgent, work_dir: Path
) -> None:
    from kimi_acp.core.errors import SessionBusy
    from kimi_acp.core.session_lock import TurnLock

    first = make_agent(["text: one", "text: three"])
    assert await first.arun("hi") == "one"
    session = find(work_dir, first.session_id)
    assert session is not None
    other = TurnLock(session.dir)  # what another process running a turn of it holds
    other.acquire()
    try:
        seen: list[Any] = []
        with pytest.raises(SessionBusy) as info:
            async for message in first.arun_events("again"):
                seen.append(message)
        assert seen == [] and "Wait for that turn to end" in str(info.value)
    finally:
        other.release()
    assert await first.arun("now") == "three"
