"""Background Shell cards in `kimi acp` after "approve for this session": a background command asks
"run background command", a foreground one "run command", so approving one for the session says
nothing about the other. A card must never say `in_progress` while its permission request is
still to come (clients show "running"); the timelines are read from the raw messages in order."""

from __future__ import annotations

import json

from tests.e2e.test_acp_cards import ASK, card_id, final_card, timeline
from tests.support.acp_fixtures import acp_env, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


def answers(*options: str):
    """A permission policy answering the requests in turn."""
    queue = list(options)
    return lambda request: queue.pop(0)


async def test_background_shell_after_run_command_was_approved_for_the_session(share, project):
    write_config(share, [
        tool_call("fg", "Shell", {"command": "echo foreground"}),
        tool_call("bg", "Shell", {"command": "echo background", "run_in_background": True, "description": "echo bg"}),
        "text: done",
    ])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = answers("approve_for_session", "approve")
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "go")
        assert response.stop_reason == "end_turn"
        assert len(agent.client.permission_requests) == 2  # "run command" for the session does not cover it
        background = card_id(agent.recorder, "Shell: echo background")
        assert timeline(agent.recorder, background) == ["pending", ASK, "in_progress", "completed"]
        card = final_card(agent.recorder, background)
        assert "echo bg (`bash-1`, bash)" in json.dumps(card["content"])  # the task's state, not the model's text


async def test_background_commands_approved_for_the_session_run_unasked_but_a_foreground_one_asks(share, project):
    write_config(share, [
        tool_call("bg1", "Shell", {"command": "ls -l", "run_in_background": True, "description": "first"}),
        tool_call("bg2", "Shell", {"command": "ls -a", "run_in_background": True, "description": "second"}),
        tool_call("fg", "Shell", {"command": "sleep 0.3"}),
        "text: done",
    ])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = answers("approve_for_session", "approve")
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "go")
        assert response.stop_reason == "end_turn"
        assert len(agent.client.permission_requests) == 2  # bg1, then fg; bg2 (`ls …` in the background) was approved for the session
        recorder = agent.recorder
        assert timeline(recorder, card_id(recorder, "Shell: ls -l")) == ["pending", ASK, "in_progress", "completed"]
        assert timeline(recorder, card_id(recorder, "Shell: ls -a")) == ["pending", "in_progress", "completed"]
        assert timeline(recorder, card_id(recorder, "Shell: sleep 0.3")) == ["pending", ASK, "in_progress", "completed"]
