"""Read-only commands run without a question (issue #29), on real `kimi --wire` and `kimi acp`
processes with the default config: an exploration of 20 commands in a repository whose own
`.git/config` names a marker program as its fsmonitor, pager, textconv and clean filter asks
nothing and never runs the marker; the cards say why they ran unasked; "always ask" asks them all."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import events, scripted_config, tool_call

pytestmark = pytest.mark.processes

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
EXPLORATION = [
    "ls", "ls -la src", "cat README.md", "head -n 2 src/app.py", "tail -1 src/app.py", "wc -l src/app.py README.md",
    "grep -rn print src", "rg -n def src", "find . -name '*.py' -not -path './.git/*'", "pwd", "echo exploring",
    "git status", "git status -s", "git log --oneline -3", "git diff", "git diff --stat HEAD", "git show --stat HEAD",
    "git branch", "cd src && ls && cat app.py", "sed -n 1p README.md | cat -n",
]  # fmt: skip


@pytest.fixture
def hostile_repository(work_dir: Path, tmp_path: Path) -> Path:
    """A repository as a clone could arrive: its config names a program that leaves a marker."""
    marker = tmp_path / "marker"
    program = tmp_path / "plant.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    program.chmod(0o755)
    (work_dir / "src").mkdir()
    (work_dir / "src" / "app.py").write_text("def main():\n    print('hi')\n")
    (work_dir / "README.md").write_text("# project\nmore\n")
    (work_dir / ".gitattributes").write_text("*.py diff=plant filter=plant\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work_dir)], check=True)
    subprocess.run([*git, "-C", str(work_dir), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(work_dir), "commit", "-qm", "init"], check=True)
    with open(work_dir / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(
            f'[core]\n\tfsmonitor = "{program}"\n\tpager = "{program}"\n[diff "plant"]\n\ttextconv = "{program} <"\n'
            f'[filter "plant"]\n\tclean = "{program}"\n'
        )
    (work_dir / "src" / "app.py").write_text("def main():\n    print('changed')\n")  # git diff has work to do
    return marker


async def test_an_exploration_asks_nothing_and_runs_no_program_of_the_repository(
    start_wire, hostile_repository: Path, tmp_path: Path
) -> None:
    scripts = [tool_call(f"c{i}", "Shell", {"command": command}) for i, command in enumerate(EXPLORATION)] + ["text: done"]
    config = scripted_config(tmp_path, scripts, always_ask=False)  # the default of a real config
    wire = await start_wire(config=config)
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "look around"}, timeout=60)
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]  # 0 questions
    results = [e["payload"]["return_value"] for e in events(seen, "ToolResult")]
    assert len(results) == len(EXPLORATION)
    for command, result in zip(EXPLORATION, results):
        assert {"type": "kimi/read_only", "data": {"text": "Ran without asking: it only reads."}} in result["display"], command
    outputs = {command: result["output"] for command, result in zip(EXPLORATION, results)}
    assert "print('changed')" in outputs["git diff"] and "app.py" in outputs["git status -s"]
    assert not hostile_repository.exists()  # the repository's fsmonitor, pager, textconv and filter never ran
    subprocess.run(["git", "status"], cwd=tmp_path / "project", capture_output=True, check=False)
    assert hostile_repository.exists()  # (they are real: plain git runs them)


async def test_in_always_ask_mode_every_command_asks(start_wire, tmp_path: Path, work_dir: Path) -> None:
    (work_dir / "README.md").write_text("# r\n")
    scripts = [tool_call("c1", "Shell", {"command": "cat README.md"}), "text: done"]
    wire = await start_wire((), "--always-ask", config=scripted_config(tmp_path, scripts, always_ask=False))
    await wire.call("initialize", INIT)
    response, _, asked = await wire.call_approving("prompt", {"user_input": "read"}, timeout=30)
    assert response["result"] == {"status": "finished"} and [a["description"] for a in asked] == ["Run command `cat README.md`"]


async def test_a_read_only_command_outside_the_workspace_or_naming_credentials_asks(
    start_wire, tmp_path: Path, work_dir: Path
) -> None:
    (work_dir / ".env").write_text("KEY=1\n")
    commands = ["cat /etc/hostname", "cat .env", "ls; (touch X)"]
    scripts = [tool_call(f"c{i}", "Shell", {"command": c}) for i, c in enumerate(commands)] + ["text: done"]
    wire = await start_wire(config=scripted_config(tmp_path, scripts, always_ask=False))
    await wire.call("initialize", INIT)
    response, _, asked = await wire.call_approving("prompt", {"user_input": "go"}, timeout=30)
    assert [a["description"] for a in asked] == [f"Run command `{c}`" for c in commands]
    assert "holds credentials" in asked[1]["warning"]


async def test_the_ide_card_of_a_read_only_command_runs_at_once_and_says_why(share: Path, project: Path) -> None:
    (project / "README.md").write_text("# r\n")
    write_config(share, [tool_call("c1", "Shell", {"command": "cat README.md"}), "text: done"], permissions={"always_ask": False})
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "read")
        assert response.stop_reason == "end_turn" and agent.client.permission_requests == []
        updates = agent.recorder.updates(session.session_id)
        statuses = [u.get("status") for u in of_kind(updates, "tool_call_update") if u.get("status")]
        assert statuses[0] == "in_progress" and statuses[-1] == "completed"  # running at once, never "pending"
        final = [u for u in of_kind(updates, "tool_call_update") if u.get("status") == "completed"][-1]
        assert "Ran without asking: it only reads." in json.dumps(final["content"])


async def test_the_ide_s_always_ask_mode_makes_a_read_only_command_ask(share: Path, project: Path) -> None:
    (project / "README.md").write_text("# r\n")
    scripts = [tool_call("c1", "Shell", {"command": "cat README.md"}), "text: done"]
    write_config(share, scripts, permissions={"always_ask": False})
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        assert session.modes.current_mode_id == "default"
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="ask")
        response = await agent.prompt(session.session_id, "read")
        assert response.stop_reason == "end_turn"
        (asked,) = agent.client.permission_requests
        assert asked["tool_call"].title == "Shell: cat README.md"
    state = json.loads(next(share.glob(f"sessions/*/{session.session_id}/state.json")).read_text())
    assert state["always_ask"] is True  # the mode is the session's: a reload keeps it
