"""Hooks as a Zed user sees them over `kimi acp` (every message schema-validated by the client):
a PreToolUse block is a failed tool card that says why, a UserPromptSubmit block is the agent's
reply with `end_turn`."""

from __future__ import annotations

import json

from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.hooks import HookScript, hook
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


async def test_blocked_tool_is_a_failed_card_with_the_reason(share, project, tmp_path):
    script = HookScript(tmp_path / "hooks")
    hooks = [hook("PreToolUse", script.command("exit2", "Blocked: rm -rf is not allowed."), "^Shell$")]
    scripts = [tool_call("s1", "Shell", {"command": "touch marker"}), "text: I will not do that then."]
    write_config(share, scripts, default_yolo=True, hooks=hooks)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "clean up")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        (card,) = of_kind(updates, "tool_call")
        final = [u for u in of_kind(updates, "tool_call_update") if u["toolCallId"] == card["toolCallId"] and "status" in u]
        assert final[-1]["status"] == "failed"
        assert "Blocked: rm -rf is not allowed." in json.dumps(final[-1]["content"])
        assert not agent.recorder.requests("session/request_permission")
        assert texts(updates) == "I will not do that then."
    assert not (project / "marker").exists()
    assert script.payloads()[0]["tool_input"] == {"command": "touch marker"}


async def test_blocked_prompt_is_the_agents_reply_and_ends_the_turn(share, project, tmp_path):
    script = HookScript(tmp_path / "hooks")
    hooks = [hook("UserPromptSubmit", script.command("deny-json", "This project does not take prompts on Fridays."))]
    write_config(share, ["text: the model was called"], hooks=hooks)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "hello")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        assert texts(updates) == "This project does not take prompts on Fridays."
        assert not of_kind(updates, "tool_call")
    assert script.payloads()[0]["prompt"] == "hello"
