"""`kimi web`'s Hub without a server: its sessions' cores are root cores like every front end's
(kimi_acp/root_core.py), so the config's `agent_file` and skills apply. Real files on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimi_acp.config import load_config
from kimi_acp.frontends.web.hub import Hub, WebError
from kimi_acp.hooks import engine_of
from tests.support.wire_client import scripted_config

AGENT = "agent:\n  extend: default\n  system_prompt_path: ./system.md\n  tools: [kimi_cli.tools.file:ReadFile, kimi_cli.tools.file:Glob, AskUserQuestion]\n"


def config_with(directory: Path, **keys: object) -> Path:
    config = scripted_config(directory, [])
    config.write_text(json.dumps({**json.loads(config.read_text()), **keys}))
    return config


async def test_a_hub_session_runs_the_configs_agent_file(tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no skills of whoever runs the tests
    (tmp_path / "system.md").write_text("Only read in ${KIMI_WORK_DIR}.")
    (tmp_path / "agent.yaml").write_text(AGENT)
    skill = work_dir / ".kimi" / "skills" / "review" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: Review it\n---\nReview.\n")
    hub = Hub(work_dir, load_config(config_with(tmp_path, agent_file="agent.yaml")))
    try:
        core = hub.new_session().core
        assert sorted(core.toolset.names()) == ["AskUserQuestion", "Glob", "ReadFile"]
        assert core.front_end.questions == "full" and core.front_end.plan_mode  # the page shows questions and plans
        assert engine_of(core) is not None  # [[hooks]] attached
        assert "skill:review" in [c.name for c in core.slash.commands()]
        reopened = hub.driver(core.session.id).core
        assert reopened is core
    finally:
        await hub.close()


async def test_a_bad_agent_file_refuses_a_new_hub_session(tmp_path: Path, work_dir: Path) -> None:
    (tmp_path / "agent.yaml").write_text("agent:\n  extend: nowhere.yaml\n")
    hub = Hub(work_dir, load_config(config_with(tmp_path, agent_file="agent.yaml")))
    with pytest.raises(WebError) as caught:
        hub.new_session()
    assert caught.value.status == 500 and str(caught.value).startswith("Invalid configuration: agent_file: ")
    assert hub.list_sessions() == []  # nothing was created


async def test_a_failed_turns_error_is_kept_private(tmp_path: Path, work_dir: Path) -> None:
    """web-errors.jsonl holds the words of a failed turn (which may quote a request): 0600 like wire.jsonl."""
    hub = Hub(work_dir, load_config(config_with(tmp_path)))
    try:
        driver = hub.new_session()
        driver._save_error("the provider said no")
        assert (driver.errors_file.stat().st_mode & 0o777) == 0o600
        assert [m for _, m in driver._saved_errors()] == ["the provider said no"]
    finally:
        await hub.close()
