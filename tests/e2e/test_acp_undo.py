"""`/undo` in the IDE (`kimi acp`): listed among the session's commands, and it takes a turn back,
its files (the commands ran in the IDE's terminal) and its part of the conversation."""

from __future__ import annotations

import asyncio

from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


async def test_undo_takes_back_the_last_turn_in_the_ide(share, project):
    (project / "kept.txt").write_text("kept\n")
    (project / "edited.txt").write_text("edited before\n")
    scripts = [
        tool_call("w1", "WriteFile", {"path": "edited.txt", "content": "edited by the turn\n"}),
        tool_call("s1", "Shell", {"command": "rm kept.txt && echo new > made.txt"}),
        "text: changed",
    ]
    write_config(share, scripts, default_yolo=True)
    async with serve_acp(acp_env(share), terminal=True) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await asyncio.sleep(0)
        assert (await agent.prompt(session_id, "change the files")).stop_reason == "end_turn"
        lists = of_kind(agent.recorder.updates(session_id), "available_commands_update")
        (undo,) = [c for c in lists[-1]["availableCommands"] if c["name"] == "undo"]
        assert undo["input"]["hint"] == "N turns (default 1), --force, --dry-run"
        assert agent.client.terminals  # the command ran in the IDE's terminal
        assert not (project / "kept.txt").exists()

        before = len(agent.recorder.updates(session_id))
        assert (await agent.prompt(session_id, "/undo")).stop_reason == "end_turn"
        said = texts(agent.recorder.updates(session_id)[before:])
        assert "Undid 1 turn (“change the files”)." in said
        assert (
            "Restored: `edited.txt`, `kept.txt`" in said
            and "Removed (created by the turns): `made.txt`" in said
        )
        assert (project / "kept.txt").read_text() == "kept\n"
        assert (project / "edited.txt").read_text() == "edited before\n"
        assert not (project / "made.txt").exists()
