"""`kimi acp` with a sandbox (issue #24): `[sandbox] mode` and `kimi acp --sandbox`, the picker
(a config option), commands run unasked inside it (also in the IDE's own terminal, which runs
bwrap), an `ask` rule that still asks with the sandbox on the card, and a machine without a
sandbox, which says so once (a notice, or a line of the agent's message)."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_acp_plan_and_notices import raw_initialize
from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

# Security guarantees are checked on real processes, as a user runs the server (not in memory).
pytestmark = pytest.mark.processes

needs_bwrap = pytest.mark.requires_tool("bwrap")


@pytest.fixture
def home() -> Iterator[Path]:
    """A home outside /tmp (the sandbox's /tmp is its own): there, it is read-only."""
    path = Path("/var/tmp") / f"kimi-sbx-{uuid.uuid4().hex[:8]}" / "home"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path.parent, ignore_errors=True)


def results(updates: list[dict[str, Any]]) -> str:
    return json.dumps(
        [u for u in of_kind(updates, "tool_call_update") if u.get("status") in ("completed", "failed")]
    )


@needs_bwrap
async def test_the_configured_mode_runs_commands_unasked_and_the_picker_turns_it_off(
    share: Path, project: Path, home: Path
):
    scripts = [
        tool_call("t1", "Shell", {"command": "touch inside"}),
        tool_call("t2", "Shell", {"command": "touch ~/outside"}),
        "text: one",
        tool_call("t3", "Shell", {"command": "echo asked > asked.txt"}),  # an ask rule: asks, runs inside
        "text: two",
        tool_call("t4", "Shell", {"command": "touch after-off"}),
        "text: three",
    ]
    write_config(share, scripts, sandbox={"mode": "workspace-write"}, permissions={"ask": ["Shell(echo:*)"]})
    async with serve_acp({**acp_env(share), "HOME": str(home)}) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        option = {o.id: o for o in session.config_options}["sandbox"]
        raw = option.model_dump(by_alias=True)
        assert raw["currentValue"] == "workspace-write" and [o["value"] for o in raw["options"]] == [
            "off",
            "workspace-write",
            "read-only",
        ]
        await agent.prompt(session.session_id, "one")
        assert agent.client.permission_requests == []
        assert (project / "inside").exists() and not (home / "outside").exists()
        done = results(agent.recorder.updates(session.session_id))
        assert (
            "Read-only file system" in done
            and "this command ran in the workspace-write sandbox (bubblewrap)" in done
        )

        await agent.prompt(session.session_id, "two")
        (asked,) = agent.client.permission_requests
        lines = [c.content.text for c in asked["tool_call"].content]
        assert "**Sandbox:** Runs inside the sandbox: workspace-write (bubblewrap, no network)." in lines
        assert (project / "asked.txt").read_text() == "asked\n"

        result = await agent.conn.set_config_option(
            config_id="sandbox", session_id=session.session_id, value="off"
        )
        assert {o.id: o for o in result.config_options}["sandbox"].current_value == "off"
        await agent.prompt(session.session_id, "three")
        assert len(agent.client.permission_requests) == 2  # off: asks as before, no sandbox line
        assert not any(
            "Sandbox" in c.content.text for c in agent.client.permission_requests[1]["tool_call"].content
        )


@needs_bwrap
async def test_the_ides_terminal_runs_the_command_in_the_sandbox(share: Path, project: Path, home: Path):
    # the IDE runs the terminal in its own environment (its HOME): the path is spelled out
    scripts = [tool_call("t1", "Shell", {"command": "touch inside"}), tool_call("t2", "Shell", {"command": f"touch {home}/outside"}),
               "text: done"]  # fmt: skip
    write_config(share, scripts)
    env = {**acp_env(share), "HOME": str(home)}
    async with serve_acp(env, terminal=True, args=["--sandbox", "workspace-write"]) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        assert {o.id: o for o in session.config_options}["sandbox"].current_value == "workspace-write"
        await agent.prompt(session.session_id, "go")
        assert agent.client.permission_requests == []
        commands = [t["command"] for t in agent.client.terminals.values()]
        assert len(commands) == 2 and all(c.endswith("/bwrap") for c in commands)
        assert (project / "inside").exists() and not (home / "outside").exists()
        assert "Read-only file system" in results(agent.recorder.updates(session.session_id))


@pytest.mark.parametrize("notices", [True, False], ids=["notice", "message"])
async def test_without_a_sandbox_the_session_says_so_once_and_asks(share: Path, project: Path, notices: bool):
    scripts = [tool_call("t1", "Shell", {"command": "touch one"}), "text: one",
               tool_call("t2", "Shell", {"command": "touch two"}), "text: two"]  # fmt: skip
    write_config(share, scripts, sandbox={"mode": "workspace-write"})
    async with serve_acp({**acp_env(share), "KIMI_SANDBOX_BACKENDS": "none"}) as agent:
        if notices:
            await raw_initialize(agent, {"notices": {}})
        else:
            await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "1")
        await agent.prompt(session.session_id, "2")
        updates = agent.recorder.updates(session.session_id)
        assert len(agent.client.permission_requests) == 2  # asked as before
        card = [c.content.text for c in agent.client.permission_requests[0]["tool_call"].content]
        assert any(line.startswith("**Sandbox:** Runs unconfined") for line in card)
    title = "No sandbox: the workspace-write sandbox cannot be used here"
    if notices:
        (notice,) = of_kind(updates, "notice")
        assert notice["severity"] == "warning" and notice["title"] == title
        assert "ask for approval as before" in notice["description"]
    else:
        assert texts(updates).count(title) == 1 and not of_kind(updates, "notice")
    assert (project / "one").exists() and (project / "two").exists()
