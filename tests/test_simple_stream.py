"""The simple event stream (kimi_acp/simple_stream.py): encoding, and the mapping from Wire messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kimi_acp
from kimi_acp import (
    JSONRPC_VERSION,
    Agent,
    decode_event,
    decode_event_line,
    encode_event,
    encode_event_line,
    event_to_rpc,
    rpc_to_event,
)
from kimi_acp import simple_stream as ss
from kimi_acp.llm.errors import ChatProviderError
from kimi_acp.wire import types as w
from tests.support.wire_client import scripted_config, tool_call

USAGE = ss.Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
CALL = ss.ToolCallInfo(id="c1", name="Shell", arguments='{"command": "ls"}')
ONE_OF_EACH: list[Any] = [
    ss.RunBegin(user_input="你好嘛"),
    ss.TurnBegin(turn=1),
    ss.TurnEnd(turn=1, stopped=False),
    ss.TextDelta(text="5"),
    ss.ReasoningDelta(text="hmm"),
    ss.StepEnd(content="x", tool_calls=(CALL,), reasoning_content="r", usage=USAGE),
    ss.StepEnd(),
    ss.ToolCallBegin(tool_call_id="c1", name="Shell", arguments="{}"),
    ss.ToolResult(tool_call_id="c1", name="Shell", content="out\n"),
    ss.RunEnd(content="5", tool_calls=(), reasoning_content="", usage=None),
    ss.RunEnd(content="done", tool_calls=(CALL,), reasoning_content="r", usage=USAGE),
]


def test_every_event_type_is_covered_and_round_trips() -> None:
    assert {type(e).__name__ for e in ONE_OF_EACH} == set(ss.EVENT_CLASSES)
    for event in ONE_OF_EACH:
        line = encode_event_line(event)
        assert line.endswith("\n") and line.count("\n") == 1
        assert decode_event_line(line) == event
        assert decode_event_line(line.encode("utf-8")) == event
        assert decode_event(encode_event(event)) == event
        assert rpc_to_event(event_to_rpc(event)) == event


def test_the_notes_wire_format() -> None:
    data = json.loads(encode_event_line(ss.TextDelta(text="你好嘛")))
    assert data == {"jsonrpc": "2.0", "method": "TextDelta", "params": {"text": "你好嘛"}}
    assert "你好嘛" in encode_event_line(ss.TextDelta(text="你好嘛"))  # UTF-8 kept, not escaped
    assert JSONRPC_VERSION == "2.0"
    end = json.loads(encode_event_line(ONE_OF_EACH[-1]))
    assert end["params"] == {
        "content": "done",
        "tool_calls": [{"id": "c1", "name": "Shell", "arguments": '{"command": "ls"}'}],
        "reasoning_content": "r",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    assert json.loads(encode_event_line(ss.RunEnd(content="5")))["params"]["usage"] is None
    params = {name: sorted(cls.model_fields) for name, cls in ss.EVENT_CLASSES.items()}
    assert params == {  # the note's table, exactly
        "RunBegin": ["user_input"],
        "TurnBegin": ["turn"],
        "TurnEnd": ["stopped", "turn"],
        "TextDelta": ["text"],
        "ReasoningDelta": ["text"],
        "StepEnd": ["content", "reasoning_content", "tool_calls", "usage"],
        "ToolCallBegin": ["arguments", "name", "tool_call_id"],
        "ToolResult": ["content", "name", "tool_call_id"],
        "RunEnd": ["content", "reasoning_content", "tool_calls", "usage"],
    }


def test_the_package_exports_the_notes_names() -> None:
    for name in ("event_to_rpc", "rpc_to_event", "encode_event", "decode_event", "encode_event_line",
                 "decode_event_line", "JSONRPC_VERSION"):  # fmt: skip
        assert name in kimi_acp.__all__
        assert getattr(kimi_acp, name) is getattr(ss, name)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("{nope", "not a JSON line"),
        ("[1]", "expected an object"),
        ('{"method": "TextDelta", "params": {"text": "a"}}', '"jsonrpc" must be "2.0"'),
        ('{"jsonrpc": "2.0", "id": 1, "method": "TextDelta", "params": {"text": "a"}}', "have no id"),
        ('{"jsonrpc": "2.0", "method": "event", "params": {}}', "unknown event method 'event'"),
        ('{"jsonrpc": "2.0", "method": "TurnBegin", "params": {"turn": "x"}}', "invalid TurnBegin params: turn"),
        ('{"jsonrpc": "2.0", "method": "TextDelta", "params": []}', "must be an object"),
        (b"\xff", "not a JSON line"),
    ],
)
def test_bad_lines_are_one_line_value_errors(line: str | bytes, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        decode_event_line(line)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_a_wire_message_is_refused_with_directions() -> None:
    with pytest.raises(TypeError, match="encode_wire_line"):
        encode_event_line(w.TextPart(text="hi"))  # type: ignore[arg-type]


def _call(call_id: str, name: str, args: str) -> list[Any]:
    """A tool call as the providers stream it: the call, then its arguments in two parts."""
    half = len(args) // 2
    return [
        w.ToolCall(id=call_id, function=w.FunctionBody(name=name, arguments=args[:half])),
        w.ToolCallPart(arguments_part=args[half:]),
    ]


def _status(inp: int, out: int) -> w.StatusUpdate:
    usage = w.TokenUsage(input_other=inp, output=out)
    return w.StatusUpdate(context_tokens=inp, max_context_tokens=1000, token_usage=usage, plan_mode=False)


def _result(call_id: str, output: str, *, error: str = "") -> w.ToolResult:
    value = w.ToolReturnValue(is_error=bool(error), output=output, message=error)
    return w.ToolResult(tool_call_id=call_id, return_value=value)


# A recorded turn: thinking, text and two tool calls (one fails) in step 1, the answer in step 2.
RECORDED_TURN: list[Any] = [
    w.TurnBegin(user_input=[w.TextPart(text="list and "), w.TextPart(text="count")]),
    w.StepBegin(n=1),
    w.ThinkPart(think="I should "),
    w.ThinkPart(think="look."),
    w.TextPart(text="Looking."),
    *_call("a", "Shell", '{"command": "ls"}'),
    w.ApprovalRequest(id="ap", tool_call_id="a", sender="Shell", action="run command", description="ls"),
    w.ApprovalResponse(request_id="ap", response="approve"),
    *_call("b", "ReadFile", '{"path": "missing.txt"}'),
    _result("b", "", error="missing.txt does not exist"),  # done before the model's reply ended
    _status(10, 5),
    _result("a", "a.txt\nb.txt\n"),
    w.SubagentEvent(parent_tool_call_id="a", event=w.WireEnvelope(type="TextPart", payload={"text": "child"})),
    w.StepBegin(n=2),
    w.TextPart(text="Two "),
    w.TextPart(text="files."),
    _status(30, 4),
    w.TurnEnd(),
]
LS = ss.ToolCallInfo(id="a", name="Shell", arguments='{"command": "ls"}')
READ = ss.ToolCallInfo(id="b", name="ReadFile", arguments='{"path": "missing.txt"}')
DOCUMENTED_SEQUENCE: list[Any] = [
    ss.RunBegin(user_input="list and count"),
    ss.TurnBegin(turn=1),
    ss.ReasoningDelta(text="I should "),
    ss.ReasoningDelta(text="look."),
    ss.TextDelta(text="Looking."),
    ss.ToolCallBegin(tool_call_id="a", name="Shell", arguments='{"command": "ls"}'),
    ss.ToolCallBegin(tool_call_id="b", name="ReadFile", arguments='{"path": "missing.txt"}'),
    ss.StepEnd(content="Looking.", tool_calls=(LS, READ), reasoning_content="I should look.",
               usage=ss.Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)),
    ss.ToolResult(tool_call_id="b", name="ReadFile", content="ERROR: missing.txt does not exist"),
    ss.ToolResult(tool_call_id="a", name="Shell", content="a.txt\nb.txt\n"),
    ss.TurnEnd(turn=1, stopped=False),
    ss.TurnBegin(turn=2),
    ss.TextDelta(text="Two "),
    ss.TextDelta(text="files."),
    ss.StepEnd(content="Two files.", usage=ss.Usage(prompt_tokens=30, completion_tokens=4, total_tokens=34)),
    ss.TurnEnd(turn=2, stopped=True),
    ss.RunEnd(content="Two files.", usage=ss.Usage(prompt_tokens=40, completion_tokens=9, total_tokens=49)),
]


def test_a_recorded_wire_turn_maps_to_the_documented_sequence() -> None:
    assert ss.to_simple_events(RECORDED_TURN) == DOCUMENTED_SEQUENCE


def test_the_same_turn_read_back_from_a_recorded_wire_file(tmp_path: Path) -> None:
    from kimi_acp.wire.file import WireRecorder, read_wire_file

    recorder = WireRecorder(tmp_path / "wire.jsonl")
    for message in RECORDED_TURN:
        recorder.record(message)
    recorder.close()
    replayed = ss.to_simple_events(r.message for r in read_wire_file(tmp_path / "wire.jsonl"))
    # The recorder merges streamed chunks: the same run, with one delta per merged chunk.
    merged = [e for e in DOCUMENTED_SEQUENCE if not isinstance(e, (ss.TextDelta, ss.ReasoningDelta))]
    assert [e for e in replayed if not isinstance(e, (ss.TextDelta, ss.ReasoningDelta))] == merged
    assert "".join(e.text for e in replayed if isinstance(e, ss.TextDelta)) == "Looking.Two files."


def test_a_cancelled_step_ends_with_its_results_and_a_failed_step_with_step_end() -> None:
    cancelled = [
        w.TurnBegin(user_input="go"), w.StepBegin(n=1), w.TextPart(text="run"), *_call("s", "Shell", "{}"),
        _result("s", "", error="The tool call was cancelled."), w.TurnEnd(),
    ]  # fmt: skip
    events = ss.to_simple_events(cancelled)
    assert [type(e).__name__ for e in events] == [
        "RunBegin", "TurnBegin", "TextDelta", "ToolCallBegin", "StepEnd", "ToolResult", "TurnEnd", "RunEnd",
    ]  # fmt: skip
    assert events[-1] == ss.RunEnd(content="run", tool_calls=(ss.ToolCallInfo(id="s", name="Shell", arguments="{}"),))
    failed = [w.TurnBegin(user_input="go"), w.StepBegin(n=1), w.StepInterrupted(), w.TurnEnd()]
    assert [type(e).__name__ for e in ss.to_simple_events(failed)] == [
        "RunBegin", "TurnBegin", "StepEnd", "TurnEnd", "RunEnd",
    ]  # fmt: skip


def test_a_reply_without_usage_ends_at_its_id_or_else_at_the_step_end_in_the_same_order() -> None:
    """Without usage the reply's StatusUpdate has null figures (as Kimi sends it); a plan-mode update
    in the middle of the step is not its end."""
    def turn(status: w.StatusUpdate) -> list[Any]:
        return [
            w.TurnBegin(user_input="go"), w.StepBegin(n=1), w.TextPart(text="run"), *_call("s", "Shell", "{}"),
            w.StatusUpdate(plan_mode=True), w.TextPart(text=" it"), status, _result("s", "ok"),
            w.StepBegin(n=2), w.TextPart(text="done"), w.StatusUpdate(plan_mode=True), w.TurnEnd(),
        ]  # fmt: skip

    with_id = ss.to_simple_events(turn(w.StatusUpdate(message_id="chatcmpl-1", plan_mode=True)))
    without = ss.to_simple_events(turn(w.StatusUpdate(plan_mode=True)))
    assert with_id == without
    assert [type(e).__name__ for e in with_id] == [
        "RunBegin", "TurnBegin", "TextDelta", "ToolCallBegin", "TextDelta", "StepEnd", "ToolResult", "TurnEnd",
        "TurnBegin", "TextDelta", "StepEnd", "TurnEnd", "RunEnd",
    ]  # fmt: skip
    assert with_id[5] == ss.StepEnd(content="run it", tool_calls=(ss.ToolCallInfo(id="s", name="Shell", arguments="{}"),))
    # live, the id ends the step as soon as the reply is complete: before the tool's result arrives
    mapper = ss.SimpleStream()
    live = [mapper.feed(m) for m in turn(w.StatusUpdate(message_id="chatcmpl-1", plan_mode=True))]
    assert [type(e).__name__ for e in live[7]] == ["StepEnd"] and [type(e).__name__ for e in live[8]] == ["ToolResult"]


def test_nested_turns_continue_the_run_and_messages_outside_runs_map_to_nothing() -> None:
    flow = [
        w.StatusUpdate(plan_mode=True),  # set_plan_mode between turns
        w.TurnBegin(user_input="/flow:x"),
        w.TurnBegin(user_input="node 1"), w.StepBegin(n=1), w.TextPart(text="one"), _status(1, 1), w.TurnEnd(),
        w.TurnBegin(user_input="node 2"), w.StepBegin(n=1), w.TextPart(text="two"), _status(1, 1), w.TurnEnd(),
        w.TurnEnd(),
    ]  # fmt: skip
    events = ss.to_simple_events(flow)
    assert [type(e).__name__ for e in events].count("RunBegin") == 1
    assert [e.turn for e in events if isinstance(e, ss.TurnBegin)] == [1, 2]
    assert events[-1].content == "two"


async def test_agent_yields_the_simple_stream(tmp_path: Path, work_dir: Path) -> None:
    scripts = ["think: hmm\ntext: héllo\n" + tool_call("s1", "Shell", {"command": "echo wired"}), "text: done"]
    agent = Agent(work_dir=work_dir, config=scripted_config(tmp_path, scripts), on_approval=lambda r: "approve")
    try:
        lines = [line async for line in agent.arun_wire("go")]
    finally:
        await agent.aclose()
    events = [decode_event_line(line) for line in lines]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    assert [type(e).__name__ for e in events] == [
        "RunBegin", "TurnBegin", "ReasoningDelta", "TextDelta", "ToolCallBegin", "StepEnd", "ToolResult",
        "TurnEnd", "TurnBegin", "TextDelta", "StepEnd", "TurnEnd", "RunEnd",
    ]  # fmt: skip
    result = next(e for e in events if isinstance(e, ss.ToolResult))
    assert (result.name, result.content.strip()) == ("Shell", "wired")
    assert events[-1].content == "done" and events[0] == ss.RunBegin(user_input="go")


async def test_agent_simple_events_and_a_failing_turn(tmp_path: Path, work_dir: Path) -> None:
    agent = Agent(work_dir=work_dir, config=scripted_config(tmp_path, ["text: partial\nerror: 400 bad request"]))
    seen: list[Any] = []
    try:
        with pytest.raises(ChatProviderError):
            async for event in agent.arun_events("go", form="simple"):
                seen.append(event)
        with pytest.raises(ValueError, match="form must be"):
            async for _ in agent.arun_wire("go", form="pagent"):  # type: ignore[arg-type]
                pass
    finally:
        await agent.aclose()
    assert isinstance(seen[-1], ss.RunEnd)  # the run is closed before the error is raised
