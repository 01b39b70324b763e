"""The servers start and serve when another project's private names are gone (a release that renamed
them) and with every start-up trick off (`KIMI_PLAIN_STARTUP=1`): _compat/ falls back to the plain
way and says so in one log line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_client import spawn_acp
from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.private_names import hiding_env
from tests.support.wire_client import event_types, text_of, tool_call

pytestmark = pytest.mark.smoke  # also run in CI's smoke jobs (.ci/run)

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
GONE = "pydantic.type_adapter:_type_has_config"  # acp-deferred-defaults reads it


def log_text(share: Path) -> str:
    return (share / "logs" / "kimi.log").read_text()


async def run_acp_turn(share: Path, project: Path, env: dict[str, str]) -> None:
    (project / "notes.txt").write_text("alpha\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": "notes.txt"}), "text: read it"], default_yolo=True)
    async with spawn_acp({**acp_env(share), **env}) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "read notes")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        assert texts(updates) == "read it"
        finals = [u for u in of_kind(updates, "tool_call_update") if u.get("status") == "completed"]
        assert len(finals) == 1 and "alpha" in str(finals[0]["content"])


async def test_acp_serves_with_a_pydantic_that_renamed_its_private_helpers(share: Path, project: Path, tmp_path: Path):
    await run_acp_turn(share, project, {**hiding_env(tmp_path, GONE), "KIMI_PLAIN_STARTUP": "0"})  # tricks on
    log = log_text(share)
    assert "compat: acp-sdk-import failed (ImportError: cannot import name '_type_has_config'" in log
    assert "the plain way instead" in log


async def test_acp_serves_with_every_trick_off(share: Path, project: Path):
    await run_acp_turn(share, project, {"KIMI_PLAIN_STARTUP": "1"})
    log = log_text(share)
    for trick in ("asyncio-without-ssl", "pydantic-plugin-loader", "acp-defer-build", "acp-deferred-defaults", "pydantic-annotation-memo"):
        assert f"compat: {trick} not used (KIMI_PLAIN_STARTUP is set)" in log


async def test_wire_serves_with_every_trick_off(start_wire_process, share_dir: Path, work_dir: Path):
    (work_dir / "notes.txt").write_text("beta\n")
    wire = await start_wire_process(
        [tool_call("r1", "ReadFile", {"path": "notes.txt"}), "text: done"], "--yolo", env={"KIMI_PLAIN_STARTUP": "1"}
    )
    init, _ = await wire.call("initialize", INIT)
    assert init["result"]["protocol_version"] == "1.10"
    response, seen = await wire.call("prompt", {"user_input": "read"})
    assert response["result"] == {"status": "finished"}
    assert "ToolResult" in event_types(seen) and text_of(seen) == "done"
    assert "compat: asyncio-without-ssl not used (KIMI_PLAIN_STARTUP is set)" in log_text(share_dir)
