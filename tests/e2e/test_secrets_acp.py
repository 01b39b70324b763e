"""The agent's credentials over `kimi acp` (issue #21, items 4 and 12): the IDE's tool cards never
show a known secret, and the commands the agent runs never get `KIMI_API_KEY`, the sign-in an IDE
passes in the agent's environment."""

from __future__ import annotations

import json

import pytest

from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

# Security guarantees are checked on real processes, as a user runs the server (not in memory).
pytestmark = pytest.mark.processes

ENV_KEY = "sk-test-acp-env-51c2e7a9"
CONFIG_KEY = "sk-test-acp-config-08d4b6f3"


async def test_cards_show_no_secret_and_commands_get_no_key(share, project) -> None:
    (project / "notes.txt").write_text(f"the key is {CONFIG_KEY}\n")
    scripts = [
        tool_call("s1", "Shell", {"command": f"echo {CONFIG_KEY}; echo kimi=${{#KIMI_API_KEY}}"})
        + "\n" + tool_call("r1", "ReadFile", {"path": "notes.txt"}),
        "text: done",
    ]
    write_config(
        share, scripts, default_yolo=True,
        providers={"other": {"type": "openai_legacy", "base_url": "https://llm.example/v1", "api_key": CONFIG_KEY}},
    )
    async with serve_acp({**acp_env(share), "KIMI_API_KEY": ENV_KEY}) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        assert (await agent.prompt(session_id, "go")).stop_reason == "end_turn"
        updates = agent.recorder.updates(session_id)
    finished = [u for u in of_kind(updates, "tool_call_update") if u.get("status") == "completed"]
    shown = json.dumps([u.get("content") for u in finished])
    assert "[redacted]" in shown and "kimi=0" in shown and "the key is [redacted]" in shown
    assert CONFIG_KEY not in shown and ENV_KEY not in shown
