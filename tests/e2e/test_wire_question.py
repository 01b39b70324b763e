"""AskUserQuestion over `kimi --wire`: a `QuestionRequest` to a client that declared
`supports_question`, its answers back to the model as JSON; dismissal, error answers, and a
client that cannot show questions (the tool is not offered; called anyway it says not to retry)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.tools.question import DISMISSED_NOTE, UNSUPPORTED_MESSAGE
from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.inmemory import WireMemory
from tests.support.wire_client import WireClientMixin, WireProcess, event_types, events, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
ASKING = {**INIT, "capabilities": {"supports_question": True}}
QUESTIONS = {
    "questions": [
        {
            "question": "Which language?",
            "header": "Lang",
            "options": [{"label": "Python", "description": "big ecosystem"}, {"label": "Rust"}],
        },
        {
            "question": "Which checks?",
            "options": [{"label": "Lint"}, {"label": "Tests"}, {"label": "Types"}],
            "multi_select": True,
        },
    ]
}


def ask(call_id: str = "q1", arguments: dict[str, Any] = QUESTIONS) -> list[str]:
    return [tool_call(call_id, "AskUserQuestion", arguments), "text: thanks"]


def tool_result(seen: list[dict[str, Any]]) -> dict[str, Any]:
    (result,) = events(seen, "ToolResult")
    return result["payload"]["return_value"]


def tool_message(share_dir: Path) -> str:
    """What the model's next call sees: the tool message in context.jsonl."""
    (context,) = share_dir.glob("sessions/*/*/context.jsonl")
    (line,) = [json.loads(line) for line in context.read_text().splitlines() if json.loads(line).get("role") == "tool"]
    content = line["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


async def prompt_with_question(wire: WireProcess) -> tuple[Any, dict[str, Any]]:
    prompt_id = await wire.request("prompt", {"user_input": "ask me"})
    request, _ = await wire.next_request()
    assert request["params"]["type"] == "QuestionRequest"
    return prompt_id, request


async def test_initialize_reports_supports_question_early_and_late(start_wire, start_wire_process):
    early = await start_wire_process([])
    response, _ = await early.call("initialize", ASKING)  # the first line: answered before the core is up
    assert response["result"]["capabilities"] == {"supports_question": True}
    late = await start_wire([])
    external = [{"name": "ext", "description": "d", "parameters": {"type": "object"}}]
    response, _ = await late.call("initialize", {**INIT, "external_tools": external})  # answered by the server
    assert response["result"]["capabilities"] == {"supports_question": True}


async def test_answers_reach_the_model_as_json(start_wire, share_dir):
    wire = await start_wire(ask())
    await wire.call("initialize", ASKING)  # answered early: the server must still know the capability
    prompt_id, request = await prompt_with_question(wire)
    payload = request["params"]["payload"]
    assert request["id"] == payload["id"] and payload["tool_call_id"] == "q1"
    shown = [{k: q[k] for k in ("question", "header", "options", "multi_select")} for q in payload["questions"]]
    assert shown == [
        {
            "question": "Which language?",
            "header": "Lang",
            "options": [{"label": "Python", "description": "big ecosystem"}, {"label": "Rust", "description": ""}],
            "multi_select": False,
        },
        {
            "question": "Which checks?",
            "header": "",
            "options": [{"label": "Lint", "description": ""}, {"label": "Tests", "description": ""}, {"label": "Types", "description": ""}],
            "multi_select": True,
        },
    ]
    answers = {"Which language?": "Rust", "Which checks?": "Lint, Types"}  # multi-select: comma-joined labels
    await wire.respond(request["id"], {"request_id": payload["id"], "answers": answers})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    result = tool_result(seen)
    expected = {"answers": {"Which language?": "Rust", "Which checks?": ["Lint", "Types"]}}
    assert not result["is_error"] and json.loads(result["output"]) == expected
    assert json.dumps(expected) in tool_message(share_dir)


async def test_free_text_and_list_answers_are_kept(start_wire):
    wire = await start_wire(ask())
    await wire.call("initialize", ASKING)
    prompt_id, request = await prompt_with_question(wire)
    answers = {"Which language?": "Go, honestly", "Which checks?": ["Tests"]}
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "answers": answers})
    response, seen = await wire.response(prompt_id)
    assert json.loads(tool_result(seen)["output"]) == {"answers": {"Which language?": "Go, honestly", "Which checks?": ["Tests"]}}


@pytest.mark.parametrize(
    "answer",
    [
        {"result": {"answers": {}}},  # the user closed the question
        {"error": {"code": -32000, "message": "the user went away"}},  # a JSON-RPC error answer
        {"result": {"answers": "not a map"}},  # unreadable
    ],
    ids=["empty", "error", "garbled"],
)
async def test_dismissal_and_error_answers_are_a_note(start_wire, share_dir, answer):
    wire = await start_wire(ask())
    await wire.call("initialize", ASKING)
    prompt_id, request = await prompt_with_question(wire)
    await wire.send({"jsonrpc": "2.0", "id": request["id"], **answer})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    result = tool_result(seen)
    assert not result["is_error"]
    assert json.loads(result["output"]) == {"answers": {}, "note": DISMISSED_NOTE}
    assert "dismissed" in tool_message(share_dir)


@pytest.mark.parametrize("handshake", [None, INIT, {**INIT, "capabilities": {"supports_question": False}}], ids=["none", "plain", "false"])
async def test_called_anyway_without_supports_question_says_do_not_retry(start_wire, handshake):
    wire = await start_wire(ask())
    if handshake is not None:
        await wire.call("initialize", handshake)
    response, seen = await wire.call("prompt", {"user_input": "ask me"})
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]  # nothing was asked
    result = tool_result(seen)
    assert result["is_error"] and result["message"] == UNSUPPORTED_MESSAGE
    assert event_types(seen)[-1] == "TurnEnd"


async def test_cancel_while_a_question_is_pending(start_wire):
    wire = await start_wire(ask())
    await wire.call("initialize", ASKING)
    prompt_id, request = await prompt_with_question(wire)
    cancel, _ = await wire.call("cancel")
    assert cancel["result"] == {}
    response, _ = await wire.response(prompt_id, timeout=5)
    assert response["result"] == {"status": "cancelled"}
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "answers": {"Which language?": "Rust"}})
    steer, _ = await wire.call("steer", {"user_input": "x"})  # the late answer changed nothing
    assert steer["error"]["code"] == -32000


# ------------------------------------------------------------------ what the model is offered


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


async def start_on(server: FakeLLMServer, tmp_path: Path, work_dir: Path, *, process: bool = False) -> WireClientMixin:
    """`kimi --wire` on the fake provider: in this process, or (`process`) a real one."""
    config = {
        "default_model": "fake",
        "models": {"fake": {"provider": "fakeprov", "model": "fake-model", "max_context_size": 100_000}},
        "providers": {"fakeprov": {"type": "openai_legacy", "base_url": server.base_url, "api_key": "sk-test"}},
    }
    path = tmp_path / "provider.json"
    path.write_text(json.dumps(config))
    return await (WireProcess if process else WireMemory).start("--work-dir", str(work_dir), "--config-file", str(path))


def offered(body: dict[str, Any]) -> dict[str, Any] | None:
    return next((t["function"] for t in body["tools"] if t["function"]["name"] == "AskUserQuestion"), None)


async def test_offered_only_to_a_client_that_declared_supports_question(server, tmp_path, work_dir):
    server.enqueue(text_reply("one"), text_reply("two"), text_reply("three"))
    wire = await start_on(server, tmp_path, work_dir)
    try:
        await wire.call("initialize", INIT)
        await wire.call("prompt", {"user_input": "a"})
        await wire.call("initialize", ASKING)  # a later handshake may change its mind
        await wire.call("prompt", {"user_input": "b"})
        await wire.call("initialize", INIT)
        await wire.call("prompt", {"user_input": "c"})
    finally:
        await wire.close()
    first, second, third = (r.body for r in server.requests)
    assert offered(first) is None and offered(third) is None
    assert {t["function"]["name"] for t in first["tools"]} >= {"Shell", "SetTodoList"}
    spec = offered(second)
    assert spec is not None and "multiple-choice" in spec["description"]
    questions = spec["parameters"]["properties"]["questions"]
    assert (questions["minItems"], questions["maxItems"]) == (1, 4)
    item = spec["parameters"]["$defs"]["QuestionParam"]["properties"]
    assert set(item) == {"question", "header", "options", "multi_select"}
    assert (item["options"]["minItems"], item["options"]["maxItems"]) == (2, 4)


async def test_early_initialize_offers_the_tool(server, tmp_path, work_dir):
    server.enqueue(text_reply("ok"))
    wire = await start_on(server, tmp_path, work_dir, process=True)  # the early path: a process's first line
    try:
        await wire.call("initialize", ASKING)  # first line: answered at start-up
        await wire.call("prompt", {"user_input": "a"})
    finally:
        await wire.close()
    assert offered(server.requests[0].body) is not None
