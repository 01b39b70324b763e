"""The issue #22 fields of `UpdateMapper`, message by message (no process): `messageId`s that a
replay repeats, `name`, a bounded `rawOutput`, placeholder-free streamed arguments, and a background
command's output on a display-only terminal. tests/e2e/test_acp_ide_fields.py drives the same
through `kimi acp`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.frontends.acp.arguments import StreamingArguments
from kimi_acp.frontends.acp.message_ids import MessageIds, turn_key
from kimi_acp.frontends.acp.task_output import CUT_NOTE, LIMIT, TerminalFeed, terminal_output_supported
from kimi_acp.frontends.acp.updates import RAW_OUTPUT_MAX, UpdateMapper, raw_output
from kimi_acp.wire.types import (
    BackgroundTaskDisplayBlock,
    FunctionBody,
    ImageURLPart,
    MediaURL,
    StepBegin,
    StepRetry,
    TextPart,
    ThinkPart,
    ToolCall,
    ToolCallPart,
    ToolResult,
    ToolReturnValue,
    TurnBegin,
)
from tests.support.acp_client import load_schemas

CWD = Path("/work/project")
OPTED_IN = {"_meta": {"terminal_output": True}}


def valid(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for update in updates:
        problems = load_schemas().validate("SessionNotification", {"sessionId": "s", "update": update})
        assert not problems, problems
    return updates


def feed(mapper: UpdateMapper, messages: list[tuple[Any, float | None]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message, recorded_at in messages:
        out += valid(mapper.map(message, recorded_at))
    return out + valid(mapper.flush())


def ids(updates: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(u["sessionUpdate"], u["messageId"], u["content"].get("text", "")) for u in updates if "messageId" in u]


def call(llm_id: str, name: str, arguments: str) -> ToolCall:
    return ToolCall(id=llm_id, function=FunctionBody(name=name, arguments=arguments))


def result(llm_id: str, output: str = "", **display: Any) -> ToolResult:
    return ToolResult(tool_call_id=llm_id, return_value=ToolReturnValue(is_error=False, output=output, **display))


def started(mapper: UpdateMapper, tool_call: ToolCall) -> dict[str, Any]:
    """The `tool_call` of a call whose arguments are complete (its closing update dropped)."""
    start, *_closing = valid(mapper.map(tool_call) + mapper.flush())
    return start


# --------------------------------------------------------------------------- messageId

# One turn as the live mapper hears it: chunk by chunk, a retry notice it alone shows.
LIVE = [
    (TurnBegin(user_input="hi"), 1727000000.25),
    (StepBegin(n=1), None),
    (ThinkPart(think="let me "), None),
    (ThinkPart(think="see"), None),
    (TextPart(text="Sure"), None),
    (TextPart(text=""), None),
    (TextPart(text=", done."), None),
    (call("c1", "ReadFile", '{"path": "a"}'), None),
    (TextPart(text="after the call"), None),
    (result("c1", "alpha"), None),
    (StepRetry(n=1, next_attempt=2, max_attempts=3, wait_s=0.1, error_type="APIConnectionError"), None),
    (ThinkPart(think="again"), None),
    (StepBegin(n=2), None),
    (TextPart(text="Bye"), None),
]
# The same turn as wire.jsonl keeps it: chunks merged, read back with the TurnBegin's time.
RECORDED = [
    (TurnBegin(user_input="hi"), 1727000000.25),
    (StepBegin(n=1), None),
    (ThinkPart(think="let me see"), None),
    (TextPart(text="Sure, done."), None),
    (call("c1", "ReadFile", '{"path": "a"}'), None),
    (TextPart(text="after the call"), None),
    (result("c1", "alpha"), None),
    (StepRetry(n=1, next_attempt=2, max_attempts=3, wait_s=0.1, error_type="APIConnectionError"), None),
    (ThinkPart(think="again"), None),
    (StepBegin(n=2), None),
    (TextPart(text="Bye"), None),
]


def joined(updates: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for kind, message_id, text in ids(updates):
        out[message_id] = (kind, out.get(message_id, (kind, ""))[1] + text)
    return out


def test_a_replay_gives_each_message_the_id_it_had_live():
    live = joined(feed(UpdateMapper(CWD), LIVE))
    replayed = joined(feed(UpdateMapper(CWD, replay=True), RECORDED))
    key = turn_key(1727000000.25)
    assert replayed == {
        f"{key}-1": ("user_message_chunk", "hi"),
        f"{key}-2": ("agent_thought_chunk", "let me see"),
        f"{key}-3": ("agent_message_chunk", "Sure, done."),
        f"{key}-4": ("agent_message_chunk", "after the call"),
        f"{key}-5": ("agent_thought_chunk", "again"),
        f"{key}-6": ("agent_message_chunk", "Bye"),
    }
    retry = live.pop(f"{key}-note-1")  # shown live only, under an id of its own
    assert "Retrying" in retry[1]
    assert live == {k: v for k, v in replayed.items() if v[0] != "user_message_chunk"}  # the client shows its prompt


def test_every_chunk_has_an_id_images_and_nested_prompts_too():
    image = ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AAAA"))
    updates = feed(UpdateMapper(CWD), [
        (TurnBegin(user_input="outer"), 10.0), (image, None), (TurnBegin(user_input="a flow node"), 11.0),
        (TextPart(text="node reply"), None),
    ])
    chunks = [u for u in updates if u["sessionUpdate"].endswith("_chunk")]
    assert [u["messageId"] for u in chunks] == [f"{turn_key(10.0)}-2", f"{turn_key(11.0)}-1", f"{turn_key(11.0)}-2"]


def test_notes_leave_the_count_alone():
    ids_ = MessageIds()
    ids_.turn(5.0)
    first = ids_.next("agent")
    assert ids_.note() != first and ids_.next("agent") == first
    ids_.boundary()
    assert ids_.next("agent") != first


def test_without_a_recorded_time_turns_still_get_distinct_ids():
    mapper = UpdateMapper(CWD)
    one = feed(mapper, [(TurnBegin(user_input="x"), None), (TextPart(text="a"), None)])
    two = feed(mapper, [(TurnBegin(user_input="y"), None), (TextPart(text="b"), None)])
    assert one[-1]["messageId"] != two[-1]["messageId"]


# --------------------------------------------------------------------------- name and rawOutput


def test_tool_call_names_its_tool_and_a_finished_card_says_what_the_model_got():
    mapper = UpdateMapper(CWD)
    start = started(mapper, call("c1", "mcp_server_tool", '{"q": 1}'))
    assert start["name"] == "mcp_server_tool"
    (done, *_rest) = feed(mapper, [(result("c1", "x" * (RAW_OUTPUT_MAX + 5), message="Read it."), None)])
    assert done["status"] == "completed"
    assert done["rawOutput"] == {
        "is_error": False, "message": "Read it.", "output": "x" * RAW_OUTPUT_MAX, "output_cut": 5,
    }


def test_raw_output_names_media_it_does_not_send():
    value = ToolReturnValue(
        is_error=True, message="bad", output=[TextPart(text="see "), ImageURLPart(image_url=MediaURL(url="data:x"))]
    )
    assert raw_output(value) == {"is_error": True, "message": "bad", "output": "see [image_url]"}


# --------------------------------------------------------------------------- no placeholders


@pytest.mark.parametrize(
    ("deltas", "shown"),
    [
        (['{"command": '], {}),
        (['{"comm'], {}),
        (['{"command": "ls'], {}),  # "ls" may be "lsof": shown once the string is closed
        (['{"command": "ls"'], {"command": "ls"}),
        (['{"command": "ls", "timeout": 1'], {"command": "ls"}),  # 1 may be 120
        (['{"command": "ls", "cwd": "/tm'], {"command": "ls"}),
        (['{"command": "say \\"hi\\'], {}),  # an escaped quote does not close it
        (['{"l": ["a", "b'], {"l": ["a"]}),
        (['{"a": t'], {}),
        (['{"a": -'], {}),
        (['{"edit": {"old": '], {"edit": {}}),
        (['{"l": [1, 2'], {"l": [1]}),
        (['{"a": null,'], {"a": None}),  # a real null: the comma ended it
        (['{"a": 1}'], {"a": 1}),
    ],
)
def test_streamed_arguments_show_only_what_is_known(deltas: list[str], shown: dict[str, Any]):
    args = StreamingArguments()
    for delta in deltas:
        args.append(delta)
    assert args.partial == shown


def test_the_first_card_of_a_streamed_call_has_no_placeholder():
    mapper = UpdateMapper(CWD)
    (start,) = valid(mapper.map(call("s1", "Shell", '{"command": ')))
    assert start["rawInput"] == {} and start["title"] == "Shell"
    assert valid(mapper.map(ToolCallPart(arguments_part='"touc'))) == []  # never "Shell: touc"
    (update,) = valid(mapper.map(ToolCallPart(arguments_part='h x"')))
    assert update["rawInput"] == {"command": "touch x"} and update["title"] == "Shell: touch x"


# --------------------------------------------------------------------------- background output


def test_the_convention_is_opt_in():
    assert terminal_output_supported(OPTED_IN)
    assert not terminal_output_supported({"_meta": {"terminal_output": "yes"}})
    assert not terminal_output_supported({"terminal": True})
    assert not UpdateMapper(CWD, replay=True, client_capabilities=OPTED_IN).terminal_output


def block(status: str) -> BackgroundTaskDisplayBlock:
    return BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status=status, description="dev server")


BACKGROUND = json.dumps({"command": "serve", "run_in_background": True})


def test_output_written_before_the_card_was_complete_comes_first_then_the_rest():
    mapper = UpdateMapper(CWD, client_capabilities=OPTED_IN, task_log=lambda task_id: (b"early\n", None),
                          task_state=lambda task_id: block("running"))
    start = started(mapper, call("bg", "Shell", BACKGROUND))
    terminal = start["_meta"]["terminal_info"]["terminal_id"]
    done, backlog = feed(mapper, [(result("bg", display=[block("running")]), None)])
    assert done["content"][0] == {"type": "terminal", "terminalId": terminal}
    assert backlog["_meta"] == {"terminal_output": {"terminal_id": terminal, "data": "early\n"}}
    (more,) = valid(mapper.task_output("bash-1", "late \u00e9".encode()[:-1]))  # half of é
    (rest,) = valid(mapper.task_output("bash-1", "late \u00e9".encode()[-1:] + b"\n"))
    assert more["_meta"]["terminal_output"]["data"] + rest["_meta"]["terminal_output"]["data"] == "late \u00e9\n"
    (end,) = valid(mapper.task_ended(block("completed"), exit_code=0))
    assert end["_meta"] == {"terminal_exit": {"terminal_id": terminal, "exit_code": 0, "signal": None}}
    assert end["content"][0]["type"] == "terminal" and "**completed**" in end["content"][1]["content"]["text"]
    assert mapper.task_output("bash-1", b"after the end") == []


def test_a_task_that_ended_before_its_card_was_complete_ends_its_terminal_at_once():
    mapper = UpdateMapper(CWD, client_capabilities=OPTED_IN, task_log=lambda task_id: (b"all of it\n", 3),
                          task_state=lambda task_id: block("failed"))
    started(mapper, call("bg", "Shell", BACKGROUND))
    _done, shown = feed(mapper, [(result("bg", display=[block("running")]), None)])
    assert shown["_meta"]["terminal_output"]["data"] == "all of it\n"
    assert shown["_meta"]["terminal_exit"]["exit_code"] == 3


def test_no_terminal_for_a_client_that_did_not_opt_in_nor_for_a_foreground_call():
    plain = UpdateMapper(CWD, task_log=lambda task_id: (b"x", None), task_state=lambda task_id: block("running"))
    start = started(plain, call("bg", "Shell", BACKGROUND))
    assert "_meta" not in start
    (done,) = feed(plain, [(result("bg", display=[block("running")]), None)])
    assert [c["type"] for c in done["content"]] == ["content"]
    assert plain.task_output("bash-1", b"more") == []
    opted = UpdateMapper(CWD, client_capabilities=OPTED_IN)
    (foreground,) = opted.map(call("fg", "Shell", '{"command": "ls"}'))
    assert "_meta" not in foreground


def test_a_feed_stops_at_its_limit_with_a_note():
    terminal = TerminalFeed("t")
    first = terminal.feed(b"a" * (LIMIT - 1))
    assert first is not None and len(first["terminal_output"]["data"]) == LIMIT - 1
    cut = terminal.feed(b"bcd")
    assert cut is not None and cut["terminal_output"]["data"] == "b" + CUT_NOTE
    assert terminal.feed(b"more") is None
    assert terminal.exit(None) == {"terminal_exit": {"terminal_id": "t", "exit_code": None, "signal": None}}


def test_a_prompt_the_client_did_not_send_is_shown_with_its_replayed_id():
    mapper = UpdateMapper(CWD)
    mapper.begin_turn(show_prompt=True)  # e.g. steering that starts a turn on an idle session
    (shown,) = feed(mapper, [(TurnBegin(user_input="steered"), 42.0)])
    (replayed,) = feed(UpdateMapper(CWD, replay=True), [(TurnBegin(user_input="steered"), 42.0)])
    assert shown == replayed
    mapper.begin_turn()
    assert feed(mapper, [(TurnBegin(user_input="sent as a prompt"), 43.0)]) == []
