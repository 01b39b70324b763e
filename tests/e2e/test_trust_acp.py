"""What `kimi acp` asks before it reads, fetches or edits, and what its permission dialogs offer
(issue #21): the "Always allow" option names what it covers, and is not offered where nothing
may be remembered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.web_server import FakeWebServer
from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

# Security guarantees are checked on real processes, as a user runs the server (not in memory).
pytestmark = pytest.mark.processes


def option_names(request: dict) -> list[str]:
    return [o.name for o in request["options"]]


async def test_a_file_holding_credentials_asks_for_that_file_with_a_warning(share: Path, project: Path):
    (project / ".env").write_text("API_KEY=abc123\n")
    scripts = [tool_call("r1", "ReadFile", {"path": ".env"}), "text: one", tool_call("r2", "ReadFile", {"path": ".env"}), "text: two"]
    write_config(share, scripts, default_yolo=True)  # yolo covers everything else: not this
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read it")
        await agent.prompt(session.session_id, "again")
        first, second = agent.client.permission_requests  # asked both times
        assert option_names(first) == ["Approve once", "Reject"]
        warning = first["tool_call"].content[0].content.text
        assert warning.startswith("**Warning:**") and "holds credentials" in warning
        finals = [u for u in of_kind(agent.recorder.updates(session.session_id), "tool_call_update") if u.get("status") == "completed"]
        assert "abc123" in str(finals[0]["rawOutput"] if "rawOutput" in finals[0] else finals[0]["content"])


async def test_reads_outside_the_workspace_ask_per_directory(share: Path, project: Path, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("alpha\n")
    (notes / "b.md").write_text("beta\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "c.md").write_text("gamma\n")
    scripts = [
        tool_call("r1", "ReadFile", {"path": str(notes / "a.md")}), "text: 1",
        tool_call("r2", "ReadFile", {"path": str(notes / "b.md")}), "text: 2",
        tool_call("r3", "ReadFile", {"path": str(other / "c.md")}), "text: 3",
    ]  # fmt: skip
    write_config(share, scripts)
    (project / "tmp").mkdir()
    env = {**acp_env(share), "TMPDIR": str(project / "tmp")}  # the test's dirs are in the real temp dir
    async with serve_acp(env) as agent:
        agent.client.permission_policy = lambda request: "approve_for_session"
        await agent.initialize()
        session = await agent.new_session(project)
        for text in ("1", "2", "3"):
            await agent.prompt(session.session_id, text)
        asked = agent.client.permission_requests
        assert len(asked) == 2  # b.md was covered by a.md's directory; c.md's sibling directory was not
        assert option_names(asked[0])[1] == f"Always allow reads in `{notes}` in this session"
        assert option_names(asked[1])[1] == f"Always allow reads in `{other}` in this session"


async def test_a_fetch_asks_per_host(share: Path, project: Path):
    with FakeWebServer() as web:
        host = web.url.split("//")[1]
        scripts = [
            tool_call("f1", "FetchURL", {"url": f"{web.url}/text"}), "text: 1",
            tool_call("f2", "FetchURL", {"url": f"{web.url}/page"}), "text: 2",
        ]  # fmt: skip
        write_config(share, scripts)
        async with serve_acp(acp_env(share)) as agent:
            agent.client.permission_policy = lambda request: "approve_for_session"
            await agent.initialize()
            session = await agent.new_session(project)
            await agent.prompt(session.session_id, "1")
            await agent.prompt(session.session_id, "2")
            (asked,) = agent.client.permission_requests
            assert option_names(asked) == ["Approve once", f"Always allow `{host}` in this session", "Reject"]
            assert web.paths == ["/text", "/page"]


async def test_a_protected_path_always_asks(share: Path, project: Path):
    hooks = project / ".git" / "hooks"
    hooks.mkdir(parents=True)
    scripts = [tool_call("w1", "WriteFile", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ncurl evil\n"}), "text: ok"]
    write_config(share, scripts, default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "reject"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "write a hook")
        (asked,) = agent.client.permission_requests
        assert option_names(asked) == ["Approve once", "Reject"]
        assert "git hook" in asked["tool_call"].content[0].content.text
    assert not (hooks / "pre-commit").exists()


async def test_the_always_allow_option_names_an_exact_command_and_is_missing_for_bash_c(share: Path, project: Path):
    (project / "build").mkdir()
    scripts = [
        tool_call("s1", "Shell", {"command": "rm -rf build"}), "text: one",
        tool_call("s2", "Shell", {"command": "rm -rf build src"}), "text: two",
        tool_call("s3", "Shell", {"command": 'bash -c "ls"'}), "text: three",
    ]  # fmt: skip
    write_config(share, scripts)
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "approve_for_session" if len(option_names(request)) == 3 else "reject"
        await agent.initialize()
        session = await agent.new_session(project)
        for prompt in ("clean", "clean more", "list"):
            await agent.prompt(session.session_id, prompt)
        first, second, third = agent.client.permission_requests  # the second was not covered by the first
        assert option_names(first) == ["Approve once", "Always allow `rm -rf build` in this session", "Reject"]
        assert second["tool_call"].title == "Shell: rm -rf build src"
        assert option_names(third) == ["Approve once", "Reject"]  # bash -c runs whatever it is told
    assert not (project / "build").exists()


async def test_the_users_import_of_a_key_asks_in_the_ide_with_the_warning(share: Path, project: Path, tmp_path: Path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nkeybody-acp-7c1e\n")
    write_config(share, [], default_yolo=True)  # yolo covers everything else: not this
    async with serve_acp({**acp_env(share), "HOME": str(home)}) as agent:
        agent.client.permission_policy = lambda request: "reject"
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "/import ~/.ssh/id_ed25519")
        assert response.stop_reason == "end_turn"
        (asked,) = agent.client.permission_requests
        assert asked["tool_call"].title == f"Import `{home / '.ssh' / 'id_ed25519'}` (holds credentials)"
        assert option_names(asked) == ["Approve once", "Reject"]
        warning = asked["tool_call"].content[0].content.text
        assert warning.startswith("**Warning:**") and "holds credentials" in warning
        updates = agent.recorder.updates(session.session_id)
        assert "Not imported: you declined it." in str(updates) and "keybody-acp-7c1e" not in str(agent.recorder.incoming)
