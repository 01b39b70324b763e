"""The IDE's controls over a session: the thought level, its own instructions (`systemPrompt`),
`/model` and `/thinking`, and sign-in methods a strict client keeps.

The loopback model (tests/fakes/openai_server.py) records every request, so each control is
checked where it matters: in what the model receives.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import acp
import pytest

from kimi_acp import sessions
from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.acp_fixtures import acp_env, fake_model_config, of_kind, texts, write_config
from tests.support.inmemory import serve_acp

FRENCH = "Always answer in French."
PIRATE = "You are a pirate who reviews code."
SCRIPTED_MODELS = {
    "other": {"provider": "scripted_provider", "model": "kimi-for-coding", "max_context_size": 50000},  # thinking
    "deep": {"provider": "scripted_provider", "model": "deep-thinking", "max_context_size": 50000},  # always thinks
}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


async def request(agent: Any, method: str, params: dict[str, Any]) -> Any:
    """A request as plain JSON: the SDK's models do not know `systemPrompt` or boolean options yet."""
    return await agent.conn._conn.send_request(method, params)


def options_of(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["id"]: o for o in result["configOptions"]}


def system_message(recorded: Any) -> str:
    first = recorded.body["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def state_file(share: Path, session_id: str) -> Path:
    return next(share.glob(f"sessions/*/{session_id}/state.json"))


def stored(share: Path, session_id: str) -> sessions.SessionState:
    """The session's state.json as the agent's process left it (its share dir is not this process's)."""
    return sessions.SessionState.model_validate_json(state_file(share, session_id).read_text())


def text_prompt(text: str) -> dict[str, Any]:
    return {"mode": "append", "content": [{"type": "text", "text": text}]}


async def test_the_thought_level_option_switches_the_models_thinking(share, project, server):
    server.enqueue(text_reply("one"), text_reply("two"), text_reply("three"))
    fake_model_config(share, server, model={"capabilities": ["thinking"]})
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        created = await request(agent, "session/new", {"cwd": str(project), "mcpServers": []})
        session_id = created["sessionId"]
        thinking = options_of(created)["thinking"]
        assert thinking["category"] == "thought_level" and thinking["type"] == "select"
        assert thinking["currentValue"] == "off" and [o["value"] for o in thinking["options"]] == ["off", "on"]
        assert [o["value"] for o in options_of(created)["model"]["options"]] == ["scripted", "fake"]  # each model once
        assert all(o["type"] == "select" for o in created["configOptions"])  # no toggles: not advertised
        await agent.prompt(session_id, "without thinking")
        result = await request(agent, "session/set_config_option", {"sessionId": session_id, "configId": "thinking", "value": "on"})
        assert options_of(result)["thinking"]["currentValue"] == "on"
        await agent.prompt(session_id, "with thinking")
        await agent.prompt(session_id, "/thinking off")  # a slash command: no model request
        updates = agent.recorder.updates(session_id)
        assert options_of(of_kind(updates, "config_option_update")[-1])["thinking"]["currentValue"] == "off"
        assert "Thinking is off for `fake` from the next request." in texts(updates)
        await agent.prompt(session_id, "without again")
    efforts = [r.body.get("reasoning_effort") for r in server.requests]
    assert efforts == [None, "high", None]


async def test_a_boolean_thinking_toggle_only_for_a_client_that_advertises_it(share, project):
    write_config(share, ["text: hi"], models=SCRIPTED_MODELS, default_model="other")
    async with serve_acp(acp_env(share)) as agent:
        await request(agent, "initialize", {"protocolVersion": 1, "clientCapabilities": {"session": {"configOptions": {"boolean": {}}}}})
        created = await request(agent, "session/new", {"cwd": str(project), "mcpServers": []})
        toggle = options_of(created)["thinking"]
        assert toggle == {"id": "thinking", "name": "Thinking", "description": toggle["description"],
                          "category": "thought_level", "type": "boolean", "currentValue": False}
        result = await agent.conn.set_config_option(config_id="thinking", session_id=created["sessionId"], value=True)
        assert {o.id: o for o in result.config_options}["thinking"].current_value is True
        assert stored(share, created["sessionId"]).thinking is True
        result = await request(agent, "session/set_config_option",
                               {"sessionId": created["sessionId"], "configId": "model", "value": "deep"})
        always = options_of(result)["thinking"]  # one level: shown as a select even to this client
        assert always["type"] == "select" and always["currentValue"] == "on" and len(always["options"]) == 1
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.set_config_option(config_id="thinking", session_id=created["sessionId"], value=False)
        assert caught.value.code == -32602 and "always thinks" in str(caught.value)
    async with serve_acp(acp_env(share)) as agent:  # a client without toggles: a select, never a boolean
        await agent.initialize()
        created = await request(agent, "session/new", {"cwd": str(project), "mcpServers": []})
        assert options_of(created)["thinking"]["type"] == "select"
        result = await request(agent, "session/set_config_option",
                               {"sessionId": created["sessionId"], "configId": "model", "value": "scripted"})
        assert "thinking" not in options_of(result)  # the scripted model has no thinking


async def test_older_alias_thinking_values_are_still_accepted(share, project):
    write_config(share, ["text: hi"], models=SCRIPTED_MODELS)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
    path = state_file(share, session.session_id)
    state = json.loads(path.read_text())
    state.update(model="other,thinking")  # what an older picker saved
    state.pop("thinking", None)
    path.write_text(json.dumps(state))
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        loaded = await request(agent, "session/load", {"sessionId": session.session_id, "cwd": str(project), "mcpServers": []})
        assert options_of(loaded)["model"]["currentValue"] == "other"
        assert options_of(loaded)["thinking"]["currentValue"] == "on"


async def test_model_and_thinking_slash_commands(share, project):
    write_config(share, [], models=SCRIPTED_MODELS)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        for line in ("/model", "/model other", "/thinking on", "/model nope", "/thinking maybe", "/help"):
            response = await agent.prompt(session.session_id, line)
            assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
    said = texts(updates)
    assert "- `scripted`: scripted_echo (current)" in said and "- `other`: kimi-for-coding" in said
    assert "This session now uses `other` (kimi-for-coding) from the next request." in said
    assert "Thinking is on for `other` from the next request." in said
    assert "Unknown model `nope`. Configured models: `scripted`, `other`, `deep`." in said
    assert "Usage: `/thinking on|off`" in said
    assert "- `/add-dir`: Add a directory to the workspace. Usage: `/add-dir <path>`." in said  # /help, Markdown-safe
    pickers = [options_of(u) for u in of_kind(updates, "config_option_update")]
    assert pickers[0]["model"]["currentValue"] == "other" and pickers[0]["thinking"]["currentValue"] == "off"
    assert pickers[1]["thinking"]["currentValue"] == "on"
    commands = {c["name"]: c for c in of_kind(updates, "available_commands_update")[-1]["availableCommands"]}
    assert commands["model"]["input"] == {"hint": "model alias (none: list them)"}
    assert commands["thinking"]["input"] == {"hint": "on | off"} and "rename" in commands
    state = stored(share, session.session_id)
    assert (state.model, state.thinking) == ("other", True)


async def test_the_ides_instructions_reach_the_model_and_stay_with_the_session(share, project, server):
    server.enqueue(*(text_reply(f"answer {n}") for n in range(4)))
    fake_model_config(share, server)
    async with serve_acp(acp_env(share)) as agent:
        init = await agent.initialize()
        raw = agent.recorder.incoming[0]["result"]
        assert raw["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {"mode": {"override": {}}}
        assert init.agent_capabilities.session_capabilities is not None
        created = await request(agent, "session/new", {"cwd": str(project), "mcpServers": [], "systemPrompt": text_prompt(FRENCH)})
        session_id = created["sessionId"]
        await agent.prompt(session_id, "hello")
    async with serve_acp(acp_env(share)) as agent:  # another process, the IDE reloading without it
        await agent.initialize()
        await request(agent, "session/load", {"sessionId": session_id, "cwd": str(project), "mcpServers": []})
        await agent.prompt(session_id, "again")
        override = {"mode": "override", "content": [{"type": "text", "text": PIRATE}, {"type": "text", "text": "Be brief."}]}
        await request(agent, "session/resume", {"sessionId": session_id, "cwd": str(project), "systemPrompt": override})
        await agent.prompt(session_id, "review")
        forked = await request(agent, "session/fork", {"sessionId": session_id, "cwd": str(project), "mcpServers": []})
        await agent.prompt(forked["sessionId"], "in the fork")
    appended, reloaded, overridden, fork = (system_message(r) for r in server.requests)
    assert appended.startswith("You are Kimi") and appended.rstrip().endswith(f"# Instructions from the IDE\n{FRENCH}")
    assert reloaded == appended
    assert overridden.startswith(f"{PIRATE}\n\nBe brief.\n\n# Environment\n- Working directory: ")
    assert "You are Kimi" not in overridden and FRENCH not in overridden
    assert server.requests[2].body["tools"] == server.requests[0].body["tools"]  # the tools are unchanged
    assert fork == overridden  # a fork keeps the source's instructions
    context = next(share.glob(f"sessions/*/{session_id}/context.jsonl")).read_text()
    assert PIRATE not in context and FRENCH not in context  # the frozen prompt stays the session's own
    assert stored(share, session_id).system_prompt.mode == "override"


@pytest.mark.parametrize(
    ("system_prompt", "field"),
    [
        ({"mode": "replace", "content": [{"type": "text", "text": "x"}]}, "systemPrompt.mode"),
        ({"mode": "_custom", "content": [{"type": "text", "text": "x"}]}, "systemPrompt.mode"),
        ({"mode": "append", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}, "systemPrompt.content[0]"),
        ({"mode": "append", "content": []}, "systemPrompt.content"),
        ({"content": [{"type": "text", "text": "x"}]}, "systemPrompt.mode"),
        ("be nice", "systemPrompt"),
    ],
)
async def test_instructions_the_agent_cannot_apply_are_refused_before_any_session(share, project, system_prompt, field):
    write_config(share)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        for method in ("session/new", "session/load", "session/resume", "session/fork"):
            params = {"cwd": str(project), "mcpServers": [], "systemPrompt": system_prompt, "sessionId": "x"}
            if method == "session/new":
                params.pop("sessionId")
            with pytest.raises(acp.RequestError) as caught:
                await request(agent, method, params)
            assert caught.value.code == -32602 and f"Invalid params: {field}:" in str(caught.value)
    assert not list(share.glob("sessions/*/*"))


async def test_sign_in_methods_are_in_the_schemas_shapes(share, project):
    """Only `terminal` and agent methods (schema 1.25); the API key is named in the login method."""
    (share / "config.toml").write_text("default_model = ''\n")
    async with serve_acp(acp_env(share)) as agent:
        await request(agent, "initialize", {"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True}}})
        (login,) = agent.recorder.incoming[0]["result"]["authMethods"]
        assert login["type"] == "terminal" and login["args"] == ["login"]
        assert "KIMI_API_KEY" in login["description"]
        assert login["_meta"]["env-var-auth"] == {"vars": [{"name": "KIMI_API_KEY"}], "link": "https://platform.moonshot.ai/console/api-keys"}
        with pytest.raises(acp.RequestError) as caught:
            await agent.new_session(project)
        assert [m["id"] for m in caught.value.data["authMethods"]] == ["login"]
        assert not any(m.get("type") == "env_var" for m in caught.value.data["authMethods"])
