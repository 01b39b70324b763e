"""The skills bundled with the package (`/skill:kimi-cli-help`, `/skill:skill-creator`): listed by
both servers like any skill, sent to the model when run, and replaced by a project or user skill of
the same name."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.sessions import work_dir_key
from kimi_acp.skills.sources import BUILTIN_SKILLS_DIR
from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import events

BUNDLED = ("kimi-cli-help", "skill-creator")


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """A HOME without skills, so ~/.claude/skills of whoever runs the tests is not seen."""
    directory = tmp_path / "home"
    directory.mkdir()
    return {"HOME": str(directory)}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def bundled_text(name: str) -> str:
    return (BUILTIN_SKILLS_DIR / name / "SKILL.md").read_text(encoding="utf-8").strip()


def add_skill(root: Path, name: str, description: str, body: str) -> None:
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")


def user_texts(share_dir: Path, work_dir: Path) -> list[str]:
    (session,) = list((share_dir / "sessions" / work_dir_key(work_dir)).iterdir())
    lines = [json.loads(line) for line in (session / "context.jsonl").read_text().splitlines()]
    return [line["content"] for line in lines if line["role"] == "user" and isinstance(line["content"], str)]


def message_text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


async def test_wire_lists_both_and_running_one_sends_its_text_to_the_model(
    start_wire, server: FakeLLMServer, tmp_path: Path, home: dict[str, str]
) -> None:
    config = {
        "default_model": "fake",
        "models": {"fake": {"provider": "p", "model": "fake-model", "max_context_size": 100_000}},
        "providers": {"p": {"type": "openai_legacy", "base_url": server.base_url, "api_key": "sk-test"}},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    server.enqueue(text_reply("Run `kimi mcp add`."))
    wire = await start_wire(config=tmp_path / "config.json", env=home)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    listed = {c["name"]: c for c in init["result"]["slash_commands"]}
    for name in BUNDLED:
        assert listed[f"skill:{name}"]["description"].startswith(("Answer questions about this agent", "Write or improve a skill"))
        assert listed[f"skill:{name}"]["aliases"] == []
    response, seen = await wire.call("prompt", {"user_input": "/skill:kimi-cli-help how do I add an MCP server?"})
    assert response["result"] == {"status": "finished"}
    assert events(seen, "TurnBegin")[0]["payload"]["user_input"] == "/skill:kimi-cli-help how do I add an MCP server?"
    (request,) = server.wait_for_requests(1)
    last = request.body["messages"][-1]
    assert last["role"] == "user"
    assert message_text(last) == bundled_text("kimi-cli-help") + "\n\nUser request:\nhow do I add an MCP server?"
    system = message_text(request.body["messages"][0])
    assert "skill-creator" in system and str(BUILTIN_SKILLS_DIR / "skill-creator" / "SKILL.md") in system
    assert await wire.close() == 0


@pytest.mark.processes
async def test_a_users_skill_replaces_a_bundled_one_and_a_projects_replaces_neither(
    start_wire, share_dir: Path, work_dir: Path, home: dict[str, str]
) -> None:
    """Issue #30: a cloned repository's `.kimi/skills/<name>` named like one of your skills or a
    bundled one is left out, so typing `/skill:<name>` never sends the repository's text as yours."""
    add_skill(work_dir / ".kimi" / "skills", "kimi-cli-help", "The repository's help", "PROJECT-HELP-BODY")
    add_skill(work_dir / ".kimi" / "skills", "deploy", "The repository's deploy", "PROJECT-DEPLOY-BODY")
    add_skill(work_dir / ".kimi" / "skills", "lint", "The repository's lint", "PROJECT-LINT-BODY")
    add_skill(share_dir / "skills", "deploy", "My deploy", "USER-DEPLOY-BODY")
    add_skill(share_dir / "skills", "skill-creator", "My way of writing skills", "USER-CREATOR-BODY")
    wire = await start_wire(["text: one", "text: two", "text: three", "text: four"], env=home)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    listed = {c["name"]: c["description"] for c in init["result"]["slash_commands"]}
    assert listed["skill:kimi-cli-help"] != "The repository's help"  # the bundled one
    assert listed["skill:deploy"] == "My deploy"
    assert listed["skill:skill-creator"] == "My way of writing skills"
    assert listed["skill:lint"] == "The repository's lint"  # a name of its own: added
    for command in ("/skill:kimi-cli-help", "/skill:deploy", "/skill:skill-creator", "/skill:lint"):
        await wire.call("prompt", {"user_input": command})
    texts = user_texts(share_dir, work_dir)
    assert texts[0] == bundled_text("kimi-cli-help")
    assert [t.splitlines()[-1] for t in texts[1:]] == ["USER-DEPLOY-BODY", "USER-CREATOR-BODY", "PROJECT-LINT-BODY"]
    assert await wire.close() == 0


async def test_acp_lists_both_in_the_available_commands_and_runs_them(share: Path, project: Path, tmp_path: Path) -> None:
    write_config(share, ["text: here is how"])
    home = tmp_path / "home"
    home.mkdir()
    async with serve_acp({**acp_env(share), "HOME": str(home)}) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await asyncio.sleep(0.2)
        (update, *_) = of_kind(agent.recorder.updates(session.session_id), "available_commands_update")
        commands = {c["name"]: c for c in update["availableCommands"]}
        for name in BUNDLED:
            assert commands[f"skill:{name}"]["input"] == {"hint": "optional request"}
        answer = await agent.prompt(session.session_id, "/skill:skill-creator a skill for release notes")
        assert answer.stop_reason == "end_turn"
    assert user_texts(share, project) == [bundled_text("skill-creator") + "\n\nUser request:\na skill for release notes"]
