"""Who a turn comes from (issue #30): only a prompt the user typed (`FromUser`) runs a slash
command, and a subagent's core cannot change the user's session, whoever asks it to."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.agent_core import AgentCore, FromUser
from kimi_acp.errors import PermissionDenied
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.subagents.child import SubagentCore


def scripted(tmp_path: Path, scripts: list[str]) -> str:
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps(scripts))
    return json.dumps({
        "default_model": "a",
        "models": {"a": {"provider": "p", "model": "scripted_echo", "max_context_size": 100000}},
        "providers": {"p": {"type": "_scripted_echo", "env": {"KIMI_SCRIPTED_ECHO_SCRIPTS": str(path)}}},
    })


@pytest.fixture
def session(tmp_path: Path) -> sessions.Session:
    work_dir = tmp_path / "project"
    work_dir.mkdir()
    return sessions.create(work_dir)


def user_words(core: AgentCore) -> list[str]:
    return [m.text() for m in core.context.history if m.role == "user"]


def test_only_a_prompt_the_user_typed_runs_a_slash_command(tmp_path: Path, session: sessions.Session) -> None:
    core = AgentCore.open(session=session, loaded_config=load_config(config_text=scripted(tmp_path, ["text: as text"])), kaos=LocalKaos())
    assert asyncio.run(core.run_turn("/rename owned")).status == "finished"
    assert user_words(core) == ["/rename owned"]  # the model's input: text, answered by the model
    assert core.context.history[-1].text() == "as text"
    assert session.state.title_generated is False and session.state.custom_title == "/rename owned"
    asyncio.run(core.run_turn(FromUser("/rename mine")))
    assert session.state.title_generated is True and session.state.custom_title == "mine"
    assert user_words(core) == ["/rename owned"]  # the command ran: nothing went to the model


def test_a_subagents_core_refuses_every_change_of_the_users_session(tmp_path: Path, session: sessions.Session) -> None:
    loaded = load_config(config_text=scripted(tmp_path, ["text: read /yolo as text"]))
    root = AgentCore.open(session=session, loaded_config=loaded, kaos=LocalKaos())
    child = SubagentCore.open(
        session=sessions.child_session(session, "a0000001"), loaded_config=loaded, kaos=LocalKaos(), sandbox=root.sandbox,
        extra_dirs=root.workspace_dirs(),
    )
    child.approvals = root.approvals.for_subagent(
        agent_id="a0000001", subagent_type="coder", description="help", background=False, send=lambda message: None
    )
    state_file = session.dir / "state.json"
    before = state_file.read_text() if state_file.exists() else ""
    controls = child.controls
    attempts = {
        "yolo mode": lambda: controls.set_yolo(True),
        "afk mode": lambda: controls.set_afk(True),
        "plan mode": lambda: controls.set_plan_mode(True),
        "its model": lambda: controls.set_model("a"),
        "thinking": lambda: controls.set_thinking(True),
        "the sandbox": lambda: controls.set_sandbox("read-only"),
        "its directories": lambda: controls.set_extra_dirs([tmp_path]),
        "its title": lambda: controls.rename("owned"),
    }
    for what, attempt in attempts.items():
        with pytest.raises(PermissionDenied, match=f"cannot change the user's session \\({what}\\)"):
            attempt()
    for set_mode in (child.approvals.set_yolo, child.approvals.set_afk):  # its approvals refuse too, not forward
        with pytest.raises(PermissionDenied):
            set_mode(True)
    # marked as typed by the user or not, its prompt is the model's text
    assert asyncio.run(child.run_turn(FromUser("/yolo"))).status == "finished"
    assert user_words(child) == ["/yolo"] and child.context.history[-1].text() == "read /yolo as text"
    assert (state_file.read_text() if state_file.exists() else "") == before
    assert not root.approvals.yolo and not root.approvals.afk and root.sandbox.mode == "off"
    assert child.session.state.plan_mode is False and child.session.state.additional_dirs == []
