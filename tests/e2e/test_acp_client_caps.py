"""Client capabilities: files through `fs/*`, commands through `terminal/*` — and local without them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


def tool_messages(share: Path, session_id: str) -> str:
    path = next(share.glob(f"sessions/*/{session_id}/context.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return json.dumps([line for line in lines if line.get("role") == "tool"])


async def test_files_go_through_the_editor_when_it_offers_fs(share, project):
    on_disk = project / "main.py"
    on_disk.write_text("print('saved')\n")
    scripts = [
        tool_call("r1", "ReadFile", {"path": "main.py"}),
        tool_call("w1", "WriteFile", {"path": "out.txt", "content": "héllo\n"}),
        tool_call("e1", "StrReplaceFile", {"path": "main.py", "edit": {"old": "unsaved", "new": "edited"}}),
        "text: done",
    ]
    write_config(share, scripts, default_yolo=True)
    async with serve_acp(acp_env(share), fs=True) as agent:
        agent.client.buffers[str(on_disk)] = "print('unsaved')\n"  # what the editor shows, not yet saved
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "work")
        assert str(on_disk) in agent.client.fs_reads
        written = dict(agent.client.fs_writes)
        assert written[str(project / "out.txt")] == "héllo\n"
        assert written[str(on_disk)] == "print('edited')\n"
    tools = tool_messages(share, session.session_id)
    assert "unsaved" in tools  # the model read the editor buffer
    assert "Current size: 7 bytes" in tools  # the size of what was written (é is two bytes)
    assert not (project / "out.txt").exists()  # edits landed in the editor, not behind its back
    assert on_disk.read_text() == "print('saved')\n"


async def test_without_fs_files_are_local(share, project):
    (project / "main.py").write_text("print('disk')\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": "main.py"}), tool_call("w1", "WriteFile", {"path": "out.txt", "content": "x"}), "text: ok"], default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "work")
        assert agent.client.fs_reads == [] and agent.client.fs_writes == []
        assert not agent.recorder.requests("fs/read_text_file")
    assert (project / "out.txt").read_text() == "x"
    assert "disk" in tool_messages(share, session.session_id)


async def test_shell_runs_in_the_client_terminal(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo from-terminal; pwd; exit 3"}), "text: seen"])
    async with serve_acp(acp_env(share), terminal=True) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "run")
        assert response.stop_reason == "end_turn"
        (create,) = agent.recorder.requests("terminal/create")
        params = create["params"]
        assert params["args"] == ["-c", "echo from-terminal; pwd; exit 3"]
        assert params["cwd"] == str(project) and params["outputByteLimit"] > 0
        methods = [m["method"] for m in agent.recorder.incoming if m.get("method", "").startswith("terminal/")]
        assert methods == ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]
        incoming = agent.recorder.incoming
        embedded_at = next(
            i for i, m in enumerate(incoming)
            if any(c.get("type") == "terminal" for c in m.get("params", {}).get("update", {}).get("content") or [])
        )
        released_at = next(i for i, m in enumerate(incoming) if m.get("method") == "terminal/release")
        assert embedded_at < released_at  # the card showed the terminal before it was released
        updates = agent.recorder.updates(session.session_id)
        final = [u for u in of_kind(updates, "tool_call_update") if u.get("status") in ("completed", "failed")][-1]
        assert final["status"] == "failed"  # exit code 3
    tools = tool_messages(share, session.session_id)
    assert "from-terminal" in tools and str(project) in tools and "exit code: 3" in tools


async def test_terminal_timeout_kills_and_releases(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "sleep 20", "timeout": 1}), "text: after"], default_yolo=True)
    async with serve_acp(acp_env(share), terminal=True) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "run")
        assert response.stop_reason == "end_turn"
        calls = [c[0] for c in agent.client.terminal_calls]
        assert "kill" in calls and calls[-1] == "release"
    assert "killed by timeout" in tool_messages(share, session.session_id)


async def test_without_terminal_capability_shell_runs_locally(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo local-run"}), "text: ok"], default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "run")
        assert not agent.recorder.requests("terminal/create")
        final = [u for u in of_kind(agent.recorder.updates(session.session_id), "tool_call_update") if u.get("status") == "completed"][-1]
        assert "local-run" in json.dumps(final["content"])
