"""A session's controls (core/session_controls.py) and a core built from its front end's description.

A subagent's controls refuse every setter — the list of setters is read from the class, so a new
one that forgot to refuse fails here — and a core takes what its front end supports and the modes it
starts in (kimi_acp/front_end.py) at construction: approvals, sandbox and the tools offered follow
it, and a Wire client's later `initialize` replaces it whole.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.agent_core import AgentCore
from kimi_acp.core.session_controls import SessionControls
from kimi_acp.errors import PermissionDenied
from kimi_acp.front_end import FrontEnd
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.subagents.child import SubagentCore

CONFIG = {
    "default_model": "a",
    "models": {"a": {"provider": "p", "model": "kimi-for-coding", "max_context_size": 100000}},
    "providers": {"p": {"type": "_scripted_echo"}},
}
# What each setter is tried with; every public method of SessionControls is a setter or a reader.
SETTERS: dict[str, tuple[Any, ...]] = {
    "set_model": ("a",),
    "set_thinking": (True,),
    "set_mode": ("yolo",),
    "set_plan_mode": (True,),
    "set_yolo": (True,),
    "set_afk": (True,),
    "set_always_ask": (True,),
    "set_sandbox": ("read-only",),
    "add_dir": (Path("/"),),
    "set_extra_dirs": ([Path("/")],),
    "rename": ("owned",),
    "clear_plan": (),
}
READERS = {
    "plan_mode", "mode", "current_model", "resolved_model", "wanted_thinking", "thinking_on", "workspace_dirs",
    "plan_file_path",
    "name_automatically",  # the core's own titles (the first prompt's, the model's): the child's own session
}


@pytest.fixture
def root(tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AgentCore:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    return AgentCore.open(session=sessions.create(work_dir), loaded_config=load_config(config_text=json.dumps(CONFIG)), kaos=LocalKaos())


def test_the_setters_are_the_ones_tried_here() -> None:
    public = {name for name, _ in inspect.getmembers(SessionControls) if not name.startswith("_")}
    assert public == set(SETTERS) | READERS


def test_a_subagents_controls_refuse_every_setter(root: AgentCore) -> None:
    child = SubagentCore.open(
        session=sessions.child_session(root.session, "a0000001"), loaded_config=root.loaded_config, kaos=LocalKaos(),
        sandbox=root.sandbox, extra_dirs=root.workspace_dirs(),
        approvals=root.approvals.for_subagent(agent_id="a0000001", subagent_type="coder", description="help", background=False,
                                              send=lambda message: None),
    )
    files = {p: p.read_text() for p in (root.session.dir, child.session.dir) for p in p.glob("*.json")}
    signals: list[Any] = []
    child.stream.subscribe(signals.append)
    for name, arguments in SETTERS.items():
        with pytest.raises(PermissionDenied, match=r"A subagent cannot change the user's session \(.+\): only the user can"):
            result = getattr(child.controls, name)(*arguments)
            if inspect.isawaitable(result):
                asyncio.run(result)
    assert signals == []
    assert {p: p.read_text() for p in files} == files  # neither session's state changed
    assert not root.approvals.yolo and not root.approvals.afk and root.sandbox.mode == "off" and not root.plan_mode
    assert root.controls.mode == "default" and child.controls.extra_dirs == root.workspace_dirs()


def test_the_root_controls_take_the_same_calls(root: AgentCore, tmp_path: Path) -> None:
    """The table above is a working one: the user's own controls accept each call."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name, arguments in SETTERS.items():
        arguments = tuple(outside if a == Path("/") else [outside] if a == [Path("/")] else a for a in arguments)
        result = getattr(root.controls, name)(*arguments)
        if inspect.isawaitable(result):
            asyncio.run(result)
    assert root.controls.mode == "plan" and root.approvals.yolo and root.approvals.afk and root.sandbox.mode == "read-only"
    assert root.session.title() == "owned" and root.workspace_dirs() == [outside]


def test_a_core_is_built_from_its_front_ends_description(tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    config = {**CONFIG, "default_yolo": True, "permissions": {"always_ask": True}}
    loaded = load_config(config_text=json.dumps(config))

    def core(front_end: FrontEnd) -> AgentCore:
        return AgentCore.open(session=sessions.create(work_dir), loaded_config=loaded, kaos=LocalKaos(), front_end=front_end)

    def offered(built: AgentCore) -> set[str]:
        return {spec.name for spec in built.toolset.specs()}

    plain = core(FrontEnd())  # the config's modes, everything shown
    assert plain.approvals.yolo and plain.approvals.always_ask and not plain.approvals.afk and plain.sandbox.mode == "off"
    assert {"AskUserQuestion", "EnterPlanMode", "ExitPlanMode"} <= offered(plain)
    wire = core(FrontEnd(questions="none", plan_mode=False, afk=True, sandbox="read-only", yolo=False, always_ask=False))
    assert not wire.approvals.yolo and not wire.approvals.always_ask and wire.approvals.afk
    assert wire.sandbox.mode == "read-only" and wire.controls.mode == "default" and wire.toolset.offers("Shell")
    assert not {"AskUserQuestion", "EnterPlanMode", "ExitPlanMode"} & offered(wire)
    assert {"Shell", "ReadFile"} <= offered(wire)
    wire.controls.set_plan_mode(True)  # `--plan`: the model is not told of a tool it is not offered
    assert "present the plan and wait for the user" in wire.plan_reminder()
    wire.client_declared(questions="full", plan_mode=True)  # a Wire client's `initialize`, after the build
    assert "call ExitPlanMode for the user's approval" in wire.plan_reminder()
    assert {"AskUserQuestion", "EnterPlanMode", "ExitPlanMode"} <= offered(wire)
    assert wire.front_end == FrontEnd(afk=True, sandbox="read-only", yolo=False, always_ask=False)  # the rest kept
    acp = core(FrontEnd(questions="single_choice"))
    (ask,) = [spec for spec in acp.toolset.specs() if spec.name == "AskUserQuestion"]
    assert ask.parameters["properties"]["questions"]["maxItems"] == 1
    # the session's own choices win over the process's modes; yolo and afk add to them
    chosen = sessions.create(work_dir)
    chosen.state.sandbox, chosen.state.always_ask = "workspace-write", False
    chosen.save_state()
    again = AgentCore.open(session=chosen, loaded_config=loaded, kaos=LocalKaos(), front_end=FrontEnd(sandbox="read-only", always_ask=True))
    assert again.sandbox.mode == "workspace-write" and not again.approvals.always_ask
