"""`kimi acp`: skills in available_commands_update, additionalDirectories, agent_file, reads Zed refuses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import acp
import pytest

from kimi_acp.core.slash_commands import code_spans
from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

SKILL = "---\nname: review\ndescription: Review the code for bugs\n---\nReview carefully.\n"


def add_skill(project: Path, name: str, description: str) -> None:
    path = project / ".kimi" / "skills" / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\nDo {name}.\n")


def env(share: Path, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**acp_env(share), "HOME": str(home)}


def command_lists(agent: Any, session_id: str) -> list[dict[str, str]]:
    lists = of_kind(agent.recorder.updates(session_id), "available_commands_update")
    return [{c["name"]: c["description"] for c in u["availableCommands"]} for u in lists]


def tool_updates(agent: Any, session_id: str) -> dict[str, dict[str, Any]]:
    """The final state of each tool card, by the model's call id."""
    cards: dict[str, dict[str, Any]] = {}
    for update in agent.recorder.updates(session_id):
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            cards.setdefault(update["toolCallId"].split("/")[-1], {}).update(update)
    return cards


def card_text(card: dict[str, Any]) -> str:
    return "".join(c.get("content", {}).get("text", "") for c in card.get("content") or [])


async def test_skills_are_in_the_commands_after_new_load_and_resume(share, project, tmp_path):
    add_skill(project, "review", "Review the code for bugs")
    write_config(share, ["text: reviewed"])
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await asyncio.sleep(0.2)
        (first,) = command_lists(agent, session.session_id)
        assert first["skill:review"] == "Review the code for bugs"
        assert {"help", "afk", "add-dir", "export", "import", "plan", "clear"} <= set(first)
        await agent.prompt(session.session_id, "/skill:review a.py")
        await agent.conn.resume_session(session_id=session.session_id, cwd=str(project), mcp_servers=[])
        await asyncio.sleep(0.2)
        assert command_lists(agent, session.session_id)[-1] == first
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        await agent.conn.load_session(session_id=session.session_id, cwd=str(project), mcp_servers=[])
        await asyncio.sleep(0.2)
        assert command_lists(agent, session.session_id)[-1] == first


async def test_commands_are_sent_again_when_the_skills_change_between_turns(share, project, tmp_path):
    write_config(share, ["text: one", tool_call("w1", "WriteFile", {"path": ".kimi/skills/made/SKILL.md", "content": "---\ndescription: Made by the agent\n---\nx\n"}), "text: wrote it"], default_yolo=True)
    (project / ".kimi" / "skills" / "made").mkdir(parents=True)  # WriteFile needs the parent folder
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await asyncio.sleep(0.2)
        assert len(command_lists(agent, session.session_id)) == 1
        await agent.prompt(session.session_id, "hi")
        await asyncio.sleep(0.1)
        assert len(command_lists(agent, session.session_id)) == 1  # nothing changed: not sent again
        add_skill(project, "review", "Review the code")  # the user adds one between turns
        await agent.prompt(session.session_id, "make a skill")  # ... and the agent adds another
        await asyncio.sleep(0.2)
        lists = command_lists(agent, session.session_id)
        assert lists[1]["skill:review"] == "Review the code" and "skill:made" not in lists[1]
        assert lists[2]["skill:made"] == "Made by the agent"


async def test_additional_directories_are_advertised_and_honoured(share, project, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "lib.py").write_text("x = 1\n")
    write_config(share, [tool_call("g1", "Glob", {"pattern": "*.py", "directory": str(extra)}), "text: done",
                         tool_call("g2", "Glob", {"pattern": "*.py", "directory": str(extra)}), "text: done"])  # fmt: skip
    (project / "tmp").mkdir()  # the system temp dir is readable unasked: tmp_path must not be in it
    async with serve_acp({**env(share, tmp_path), "TMPDIR": str(project / "tmp")}) as agent:
        agent.client.permission_policy = lambda request: "reject"
        init = await agent.initialize()
        assert init.agent_capabilities.session_capabilities.additional_directories is not None
        session = await agent.conn.new_session(cwd=str(project), mcp_servers=[], additional_directories=[str(extra)])
        await agent.prompt(session.session_id, "find python files")
        card = tool_updates(agent, session.session_id)["g1"]
        assert card["status"] == "completed" and "lib.py" in card_text(card)
        # resumed without the list: the root is no longer part of the workspace
        await agent.conn.resume_session(session_id=session.session_id, cwd=str(project), mcp_servers=[])
        await agent.prompt(session.session_id, "again")
        card = tool_updates(agent, session.session_id)["g2"]
        assert card["status"] == "failed"  # outside the workspace now: asked, and the user said no
        (asked,) = agent.client.permission_requests
        assert asked["options"][1].name == f"Always allow reads in `{extra}` in this session"
        for bad in (["relative/dir"], [str(tmp_path / "missing")]):
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.new_session(cwd=str(project), mcp_servers=[], additional_directories=bad)
            assert caught.value.code == -32602 and "additionalDirectories" in str(caught.value)


async def test_fork_and_load_take_additional_directories(share, project, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "lib.py").write_text("x = 1\n")
    # Each session's model starts the scripts afresh: the source session only runs a command.
    write_config(share, [tool_call("g1", "Glob", {"pattern": "*.py", "directory": str(extra)}), "text: done"])
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "/help")
        fork = await agent.conn.fork_session(session_id=session.session_id, cwd=str(project), mcp_servers=[], additional_directories=[str(extra)])
        await agent.prompt(fork.session_id, "look")
        assert tool_updates(agent, fork.session_id)["g1"]["status"] == "completed"
        await agent.conn.close_session(session_id=fork.session_id)
    async with serve_acp(env(share, tmp_path)) as agent:  # a load with the list: the root is back
        await agent.initialize()
        await agent.conn.load_session(session_id=fork.session_id, cwd=str(project), mcp_servers=[], additional_directories=[str(extra)])
        replayed = len(agent.recorder.updates(fork.session_id))
        await agent.prompt(fork.session_id, "look again")
        live = [u for u in agent.recorder.updates(fork.session_id)[replayed:] if u.get("toolCallId", "").endswith("/g1")]
        assert live[-1]["status"] == "completed" and "lib.py" in card_text(live[-1])


async def test_readfile_outside_the_project_works_when_the_editor_refuses(share, project, tmp_path):
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("outside notes\n")
    (project / "inside.txt").write_text("inside\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": str(outside)}) + "\n" + tool_call("r2", "ReadFile", {"path": "inside.txt"}), "text: read"])
    async with serve_acp(env(share, tmp_path), fs=True) as agent:
        agent.client.project_root = project  # like Zed: fs/read_text_file only inside the project
        agent.client.buffers[str(project / "inside.txt")] = "unsaved inside\n"
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "read both")
        assert response.stop_reason == "end_turn"
        cards = tool_updates(agent, session.session_id)
        assert cards["r1"]["status"] == "completed" and "outside notes" in card_text(cards["r1"])
        assert "unsaved inside" in card_text(cards["r2"])  # inside the project the editor still serves it
        assert str(outside) in agent.client.fs_reads  # it was asked first


async def test_agent_file_from_the_config_excludes_a_tool(share, project, tmp_path):
    agent_file = share / "reviewer.yaml"
    agent_file.write_text("agent:\n  extend: default\n  exclude_tools: [kimi_cli.tools.shell:Shell]\n")
    write_config(share, [tool_call("s1", "Shell", {"command": "echo hi"}), "text: ok"], agent_file="reviewer.yaml", default_yolo=True)
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "run it")
        card = tool_updates(agent, session.session_id)["s1"]
        assert card["status"] == "failed" and "Tool `Shell` not found" in card_text(card)
    (share / "reviewer.yaml").write_text("agent:\n  extend: default\n  tools: [x:Teleport]\n")
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        with pytest.raises(acp.RequestError) as caught:
            await agent.new_session(project)
        assert "agent_file" in str(caught.value) and "Teleport" in str(caught.value)


async def test_help_lists_what_available_commands_lists(share, project, tmp_path):
    add_skill(project, "review", "Review the code for bugs")
    write_config(share)
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await asyncio.sleep(0.2)
        (listed,) = command_lists(agent, session.session_id)
        seen = len(agent.recorder.updates(session.session_id))
        await agent.prompt(session.session_id, "/help")
        text = texts(agent.recorder.updates(session.session_id)[seen:])
        for name, description in listed.items():  # arguments in backticks: Markdown keeps `<path>`
            assert f"- `/{name}`" in text and code_spans(description) in text


FLOW = """---
name: ship
description: Write, then ship
type: flow
---
```mermaid
flowchart TD
A([BEGIN]) --> B[Write the notes]
B --> C[Ship the release]
C --> D([END])
```
"""


async def test_a_flow_shows_each_node_prompt_in_the_ide(share, project, tmp_path):
    """The agent sends a flow node's prompt itself: the IDE must show it, live and after a load."""
    path = project / ".kimi" / "skills" / "ship" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(FLOW)
    write_config(share, ["text: notes written", "text: shipped"])
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "/flow:ship")
        assert response.stop_reason == "end_turn"
        live = texts(agent.recorder.updates(session.session_id), "user_message_chunk")
        assert live.index("Write the notes") < live.index("Ship the release")
        assert "/flow:ship" not in live  # the client shows what it sent itself
        assert texts(agent.recorder.updates(session.session_id)) == "notes writtenshipped"


async def test_session_list_reports_directories_added_with_add_dir(share, project, tmp_path):
    extra = tmp_path / "lib"
    extra.mkdir()
    write_config(share, ["text: hello"])
    async with serve_acp(env(share, tmp_path)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "hello")
        await agent.prompt(session.session_id, f"/add-dir {extra}")
        listed = await agent.conn._conn.send_request("session/list", {"cwd": str(project)})
    (entry,) = listed["sessions"]
    assert entry["additionalDirectories"] == [str(extra)]
