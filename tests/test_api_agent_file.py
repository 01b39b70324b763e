"""The Python API builds its core like the other front ends (kimi_acp/root_core.py): the config's
`agent_file` chooses the tools and the system prompt, and skills are slash commands.

Real files on disk (config, agent file, prompt template, SKILL.md), the scripted model."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import Agent
from kimi_acp.agent_file import AgentFileError
from kimi_acp.sessions import find, sessions_root, work_dir_key
from kimi_acp.wire.types import ToolCall, ToolResult
from tests.support.wire_client import scripted_config_data, tool_call

REVIEWER = "version: 1\nagent:\n  extend: default\n  system_prompt_path: ./system.md\n  exclude_tools: [kimi_cli.tools.shell:Shell]\n"
SKILL = "---\nname: review\ndescription: Review the code for bugs\n---\nReview the code carefully. SKILL-BODY-51c2\n"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HOME without skills, so ~/.claude/skills of whoever runs the tests is not seen."""
    directory = tmp_path / "home"
    directory.mkdir()
    monkeypatch.setenv("HOME", str(directory))


@pytest.fixture
async def agents() -> AsyncIterator[list[Agent]]:
    made: list[Agent] = []
    yield made
    for agent in made:
        await agent.aclose()


def write_config(directory: Path, scripts: list[str], **keys: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.json"
    path.write_text(json.dumps({**scripted_config_data(directory, scripts), **keys}), encoding="utf-8")
    return path


def context_lines(work_dir: Path, session_id: str) -> list[dict[str, Any]]:
    session = find(work_dir, session_id)
    assert session is not None
    return [json.loads(line) for line in session.context_file.read_text(encoding="utf-8").splitlines()]


def add_skill(root: Path, name: str, text: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(text, encoding="utf-8")


@pytest.mark.parametrize("form", ["config file, relative path", "dict, absolute path"])
async def test_the_configs_agent_file_sets_the_api_agents_prompt_and_tools(
    tmp_path: Path, work_dir: Path, agents: list[Agent], form: str
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "system.md").write_text("You are the API reviewer of ${KIMI_WORK_DIR}.", encoding="utf-8")
    (conf / "reviewer.yaml").write_text(REVIEWER, encoding="utf-8")
    scripts = [tool_call("s1", "Shell", {"command": "echo hi"}) + "\n" + tool_call("r1", "ReadFile", {"path": "a.txt"}), "text: ok"]
    (work_dir / "a.txt").write_text("alpha\n")
    if form.startswith("config file"):
        config: Any = write_config(conf, scripts, agent_file="reviewer.yaml")  # relative to the config's folder
    else:
        config = {**scripted_config_data(conf, scripts), "agent_file": str(conf / "reviewer.yaml")}
    agent = Agent(work_dir=work_dir, config=config)
    agents.append(agent)
    assert "Shell" not in agent.core.toolset.names() and "ReadFile" in agent.core.toolset.names()
    messages = [m async for m in agent.arun_events("go")]
    order = [m.id for m in messages if isinstance(m, ToolCall)]
    results = {m.tool_call_id: m.return_value for m in messages if isinstance(m, ToolResult)}
    shell, read = (results[i] for i in order)
    assert shell.is_error and shell.message == "Tool `Shell` not found"
    assert not read.is_error and "alpha" in str(read.output)
    system = context_lines(work_dir, agent.session_id)[0]
    assert system["role"] == "_system_prompt" and system["content"] == f"You are the API reviewer of {work_dir}."
    assert agent.core.subagents is not None  # the Agent tool is still offered (the default's types)


async def test_skills_are_the_api_agents_slash_commands(tmp_path: Path, work_dir: Path, agents: list[Agent]) -> None:
    add_skill(work_dir / ".kimi" / "skills", "review", SKILL)  # the project's skills
    add_skill(tmp_path / "extra", "deploy", "---\ndescription: Deploy it\n---\nDeploy now.\n")  # extra_skill_dirs
    config = write_config(tmp_path / "conf", ["text: reviewed"], extra_skill_dirs=[str(tmp_path / "extra")])
    agent = Agent(work_dir=work_dir, config=config)
    agents.append(agent)
    names = {c.name: c.description for c in agent.core.slash.commands()}
    assert names["skill:review"] == "Review the code for bugs" and names["skill:deploy"] == "Deploy it"
    assert await agent.arun("/skill:review check a.py") == "reviewed"
    lines = context_lines(work_dir, agent.session_id)
    users = [line["content"] for line in lines if line["role"] == "user"]
    assert users == [SKILL.strip() + "\n\nUser request:\ncheck a.py"]  # the skill reached the model
    assert "- review: Review the code for bugs (" in lines[0]["content"]  # and the system prompt lists it


async def test_a_bad_agent_file_in_the_config_fails_the_api_agent_at_once(tmp_path: Path, work_dir: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "agent.yaml").write_text("agent:\n  extend: default\n  tools: [nowhere:Teleport]\n", encoding="utf-8")
    config = write_config(conf, [], agent_file="agent.yaml")
    with pytest.raises(AgentFileError) as caught:
        Agent(work_dir=work_dir, config=config)
    assert str(caught.value).startswith("agent_file: ") and "unknown tool 'Teleport'" in str(caught.value)
    assert isinstance(caught.value, ValueError)
    sessions_dir = sessions_root() / work_dir_key(work_dir)
    assert not sessions_dir.exists() or not os.listdir(sessions_dir)  # no empty session left behind
