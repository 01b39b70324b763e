"""AskUserQuestion over `kimi acp`: a form through `elicitation/create` when the client advertises
form elicitation, a permission prompt for one single-choice question otherwise, and what the
model is offered in each case. Every message the agent sends is checked against the ACP schema."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.tools.question import DISMISSED_NOTE, SINGLE_CHOICE_MESSAGE
from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.acp_fixtures import acp_env, fake_model_config, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

LANGUAGE = {
    "question": "Which language?",
    "header": "Lang",
    "options": [{"label": "Python", "description": "big ecosystem"}, {"label": "Rust"}],
}
CHECKS = {
    "question": "Which checks?",
    "options": [{"label": "Lint"}, {"label": "Tests"}, {"label": "Types"}],
    "multi_select": True,
}


def ask(*questions: dict[str, Any]) -> list[str]:
    return [tool_call("q1", "AskUserQuestion", {"questions": list(questions)}), "text: thanks"]


def tool_output(share: Path, session_id: str) -> str:
    """The tool message the model's next call sees (context.jsonl), its text parts joined."""
    path = next(share.glob(f"sessions/*/{session_id}/context.jsonl"))
    (line,) = [json.loads(raw) for raw in path.read_text().splitlines() if json.loads(raw).get("role") == "tool"]
    content = line["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def card_id(agent: Any, session_id: str) -> str:
    (card,) = of_kind(agent.recorder.updates(session_id), "tool_call")
    return card["toolCallId"]


# ------------------------------------------------------------------ elicitation forms


async def test_questions_are_asked_through_an_elicitation_form(share, project):
    write_config(share, ask(LANGUAGE, CHECKS))
    async with serve_acp(acp_env(share), elicitation=True) as agent:
        agent.client.elicitation_policy = lambda request: {
            "action": "accept",
            "content": {"question_1": "Rust", "question_2": ["Lint", "Types"], "question_2_other": "fuzzing"},
        }
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "ask me")
        assert response.stop_reason == "end_turn"
        assert not agent.recorder.requests("session/request_permission")
        (sent,) = agent.recorder.requests("elicitation/create")
        params = sent["params"]
        assert params["mode"] == "form" and params["sessionId"] == session.session_id
        assert params["toolCallId"] == card_id(agent, session.session_id)
        assert params["message"] == "Please answer 2 questions."
        fields = params["requestedSchema"]["properties"]
        assert fields["question_1"] == {
            "type": "string",
            "title": "Lang",
            "description": "Which language?",
            "oneOf": [{"const": "Python", "title": "Python", "description": "big ecosystem"}, {"const": "Rust", "title": "Rust"}],
        }
        assert fields["question_2"] == {
            "type": "array",
            "title": "Which checks?",
            "items": {"anyOf": [{"const": "Lint", "title": "Lint"}, {"const": "Tests", "title": "Tests"}, {"const": "Types", "title": "Types"}]},
        }
        assert fields["question_1_other"]["type"] == fields["question_2_other"]["type"] == "string"
        assert not params["requestedSchema"].get("required")  # the user may leave questions open
    expected = {"answers": {"Which language?": "Rust", "Which checks?": ["Lint", "Types", "fuzzing"]}}
    assert json.dumps(expected) in tool_output(share, session.session_id)


async def test_own_words_win_over_a_single_choice(share, project):
    write_config(share, ask(LANGUAGE))
    async with serve_acp(acp_env(share), elicitation=True) as agent:
        agent.client.elicitation_policy = lambda request: {
            "action": "accept",
            "content": {"question_1": "Python", "question_1_other": "Go"},
        }
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "ask me")
        (sent,) = agent.recorder.requests("elicitation/create")
        assert sent["params"]["message"] == "Which language?"  # one question: it is the message
    assert json.dumps({"answers": {"Which language?": "Go"}}) in tool_output(share, session.session_id)


@pytest.mark.parametrize(
    "answer",
    [{"action": "decline"}, {"action": "cancel"}, {"action": "accept", "content": {}}],
    ids=["decline", "cancel", "accept-empty"],
)
async def test_a_declined_or_cancelled_form_is_a_dismissal(share, project, answer):
    write_config(share, ask(LANGUAGE))
    async with serve_acp(acp_env(share), elicitation=True) as agent:
        agent.client.elicitation_policy = lambda request: answer
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "ask me")
        assert response.stop_reason == "end_turn"
        assert len(agent.recorder.requests("elicitation/create")) == 1
    assert json.dumps({"answers": {}, "note": DISMISSED_NOTE}) in tool_output(share, session.session_id)


async def test_a_client_error_is_a_dismissal(share, project):
    import acp

    def refuse(request: dict[str, Any]) -> Any:
        raise acp.RequestError.internal_error({"details": "no form for you"})

    write_config(share, ask(LANGUAGE))
    async with serve_acp(acp_env(share), elicitation=True) as agent:
        agent.client.elicitation_policy = refuse
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "ask me")
        assert response.stop_reason == "end_turn"
    assert DISMISSED_NOTE in tool_output(share, session.session_id)


async def test_cancel_while_a_form_is_open_ends_the_turn_promptly(share, project):
    write_config(share, ask(LANGUAGE))
    async with serve_acp(acp_env(share), elicitation=True) as agent:
        never = asyncio.get_running_loop().create_future()
        asked = asyncio.Event()

        def wait_forever(request: dict[str, Any]) -> Any:
            asked.set()
            return never

        agent.client.elicitation_policy = wait_forever
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "ask me"))
        await asyncio.wait_for(asked.wait(), 10)
        started = time.monotonic()
        await agent.conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(prompt, 5)
        assert time.monotonic() - started < 1.0
        assert response.stop_reason == "cancelled"
        never.set_result({"action": "accept", "content": {"question_1": "Rust"}})  # too late: ignored
        follow = await agent.prompt(session.session_id, "next")
        assert follow.stop_reason == "end_turn"


# ------------------------------------------------------------------ the permission fallback


async def test_one_single_choice_question_goes_through_a_permission_prompt(share, project):
    write_config(share, ask(LANGUAGE))
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "option_2"
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "ask me")
        assert response.stop_reason == "end_turn"
        assert not agent.recorder.requests("elicitation/create")
        (sent,) = agent.recorder.requests("session/request_permission")
        params = sent["params"]
        assert params["options"] == [
            {"optionId": "option_1", "name": "Python", "kind": "allow_once"},
            {"optionId": "option_2", "name": "Rust", "kind": "allow_once"},
            {"optionId": "skip", "name": "Skip", "kind": "reject_once"},
        ]
        assert params["toolCall"]["toolCallId"] == card_id(agent, session.session_id)
        assert params["toolCall"]["title"] == "Which language?"
        assert "big ecosystem" in json.dumps(params["toolCall"]["content"])
    assert json.dumps({"answers": {"Which language?": "Rust"}}) in tool_output(share, session.session_id)


@pytest.mark.parametrize("answer", ["skip", "cancelled", "no-such-option"])
async def test_skipping_the_permission_prompt_is_a_dismissal(share, project, answer):
    write_config(share, ask(LANGUAGE))
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: answer
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "ask me")
        assert len(agent.recorder.requests("session/request_permission")) == 1
    assert json.dumps({"answers": {}, "note": DISMISSED_NOTE}) in tool_output(share, session.session_id)


@pytest.mark.parametrize("questions", [(LANGUAGE, LANGUAGE | {"question": "Which editor?"}), (CHECKS,)], ids=["two", "multi"])
async def test_without_forms_more_than_one_choice_is_a_tool_error(share, project, questions):
    write_config(share, ask(*questions))
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "ask me")
        assert response.stop_reason == "end_turn"
        assert not agent.recorder.requests("session/request_permission")
        assert not agent.recorder.requests("elicitation/create")
        (card,) = [u for u in of_kind(agent.recorder.updates(session.session_id), "tool_call_update") if u.get("status") == "failed"]
        assert SINGLE_CHOICE_MESSAGE in json.dumps(card)
    assert SINGLE_CHOICE_MESSAGE in tool_output(share, session.session_id)


# ------------------------------------------------------------------ what the model is offered


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


async def offered_spec(share: Path, project: Path, server: FakeLLMServer, *, elicitation: bool) -> dict[str, Any]:
    server.enqueue(text_reply("ok"))
    fake_model_config(share, server)
    async with serve_acp(acp_env(share), elicitation=elicitation) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "hi")
    (request,) = server.requests
    (spec,) = [t["function"] for t in request.body["tools"] if t["function"]["name"] == "AskUserQuestion"]
    return spec


async def test_a_form_client_is_offered_the_full_tool(share, project, server):
    spec = await offered_spec(share, project, server, elicitation=True)
    assert spec["parameters"]["properties"]["questions"]["maxItems"] == 4
    assert "multi_select" in spec["parameters"]["$defs"]["QuestionParam"]["properties"]


async def test_a_client_without_forms_is_offered_one_single_choice_question(share, project, server):
    spec = await offered_spec(share, project, server, elicitation=False)
    assert spec["parameters"]["properties"]["questions"]["maxItems"] == 1
    assert "multi_select" not in spec["parameters"]["$defs"]["QuestionParam"]["properties"]
    assert "one question at a time" in spec["description"]
