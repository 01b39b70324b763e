"""A session's settings as the protocols show them: the same refusal in the same words whether
the IDE's picker, `/model` over ACP or `/model` over Wire asked, and each change announced once.

ACP: a slash command's change reaches the pickers in one update (mode and options each only when
they changed); the client's own `session/set_config_option` / `session/set_mode` is answered with
the options and not echoed back as updates. Wire: `set_plan_mode` and `/plan` record one
StatusUpdate each. The front ends' code behind these, setting by setting:
tests/frontends/test_session_settings.py.
"""

from __future__ import annotations

import json
from typing import Any

import acp
import pytest

from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import events, scripted_config_data, text_of

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
MODELS = {
    "other": {"provider": "scripted_provider", "model": "kimi-for-coding", "max_context_size": 50000},  # thinking
    "broken": {"provider": "nowhere", "model": "m", "max_context_size": 50000},  # no base_url: unusable
}
PROVIDERS = {"nowhere": {"type": "openai_legacy", "base_url": "", "api_key": "sk-test"}}
UNKNOWN = "Unknown model `nope`. Configured models: `scripted`, `other`, `broken`."
UNUSABLE = "Model `broken` cannot be used: its provider needs a base_url and the model a name."
NO_THINKING = "`scripted` has no thinking mode (its capabilities have no `thinking`)."
UNKNOWN_MODE = "Unknown mode `turbo` (available: default, ask, yolo, plan)."


async def refusal(call: Any) -> str:
    with pytest.raises(acp.RequestError) as caught:
        await call
    assert caught.value.code == -32602
    return str(caught.value)


async def test_acp_and_wire_refuse_a_setting_in_the_same_words(share, project, start_wire) -> None:
    write_config(share, models=MODELS, providers=PROVIDERS)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        for line in ("/model nope", "/model broken", "/thinking on"):
            await agent.prompt(session_id, line)
        said = texts(agent.recorder.updates(session_id))
        picked = [
            await refusal(agent.conn.set_config_option(config_id="model", session_id=session_id, value="nope")),
            await refusal(agent.conn.set_config_option(config_id="model", session_id=session_id, value="broken")),
            await refusal(agent.conn.set_config_option(config_id="thinking", session_id=session_id, value="on")),
            await refusal(agent.conn.set_session_mode(session_id=session_id, mode_id="turbo")),
        ]
        assert of_kind(agent.recorder.updates(session_id), "config_option_update") == []  # nothing changed
    for words in (UNKNOWN, UNUSABLE, NO_THINKING):
        assert words in said
    for words, error in zip((UNKNOWN, UNUSABLE, NO_THINKING, UNKNOWN_MODE), picked):
        assert words in error

    data = scripted_config_data(share, [])
    data["models"].update(MODELS)
    data["providers"].update(PROVIDERS)
    config = share / "wire.json"
    config.write_text(json.dumps(data))
    wire = await start_wire((), config=config)
    await wire.call("initialize", INIT)
    replies = []
    for line in ("/model nope", "/model broken", "/thinking on"):
        _, seen = await wire.call("prompt", {"user_input": line})
        replies.append(text_of(seen))
    assert [words in reply for words, reply in zip((UNKNOWN, UNUSABLE, NO_THINKING), replies)] == [True] * 3


async def test_acp_shows_each_change_once_and_never_echoes_the_clients_own(share, project) -> None:
    write_config(share, models=MODELS, providers=PROVIDERS, permissions={"always_ask": False})
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        updates = agent.recorder.updates

        def settings_updates() -> list[dict[str, Any]]:
            return [u for u in updates(session_id) if u["sessionUpdate"] in ("current_mode_update", "config_option_update")]

        result = await agent.conn.set_config_option(config_id="model", session_id=session_id, value="other")
        assert {o.id: o for o in result.config_options}["model"].current_value == "other"
        await agent.conn.set_session_mode(session_id=session_id, mode_id="ask")
        assert settings_updates() == []  # the client set them: the response carries them

        await agent.prompt(session_id, "/thinking on")  # an option: one update, no mode update
        shown = settings_updates()
        assert [u["sessionUpdate"] for u in shown] == ["config_option_update"]
        assert {o["id"]: o for o in shown[0]["configOptions"]}["thinking"]["currentValue"] == "on"
        await agent.prompt(session_id, "/yolo")  # the mode (and its option): one of each
        assert [u["sessionUpdate"] for u in settings_updates()[1:]] == ["current_mode_update", "config_option_update"]
        assert settings_updates()[1]["currentModeId"] == "yolo"
        await agent.prompt(session_id, "/afk")  # a mode no picker shows: nothing to update
        await agent.prompt(session_id, "/thinking on")  # already on: nothing changed
        assert len(settings_updates()) == 3


async def test_wire_records_one_status_per_plan_mode_change(share, start_wire) -> None:
    wire = await start_wire(())
    await wire.call("initialize", {**INIT, "capabilities": {"supports_plan_mode": True}})
    response, seen = await wire.call("set_plan_mode", {"enabled": True})
    assert response["result"] == {"status": "ok", "plan_mode": True}
    assert [e["payload"]["plan_mode"] for e in events(seen, "StatusUpdate")] == [True]
    _, seen = await wire.call("prompt", {"user_input": "/plan off"})
    assert [e["payload"]["plan_mode"] for e in events(seen, "StatusUpdate")] == [False]
    assert "Plan mode is off" in text_of(seen)
