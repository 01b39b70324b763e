"""The in-memory harness (tests/support/inmemory.py) is the servers as a process runs them.

The same session through `serve_acp` and `spawn_acp`, and through `WireMemory` and `WireProcess`,
says the same messages in the same order (ids made at random and clocks aside); the schema check
still fails a test; each server gets its process's environment and fresh state, and gives the
test process back as it was; a second server at once, or a server left running, is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.llm import echo
from kimi_acp.util import secrets
from tests.support import acp_client, inmemory
from tests.support.acp_client import spawn_acp
from tests.support.acp_fixtures import acp_env, write_config
from tests.support.inmemory import WireMemory, serve_acp
from tests.support.wire_client import WireProcess, scripted_config, tool_call

SCRIPTS = [
    tool_call("r1", "Shell", {"command": "echo hi"}),
    "think: hmm\ntext: done\nusage: input_other=5 output=2",
]

pytestmark = pytest.mark.skipif(not inmemory.in_memory(), reason="KIMI_TEST_SERVERS=process: nothing runs in memory")


def normalized(messages: list[dict[str, Any]], *replace: tuple[str, str]) -> list[Any]:
    """Messages with what differs between any two runs made the same: session ids and paths
    (`replace`), random ids and timestamps."""
    text = json.dumps(messages)
    for old, new in replace:
        text = text.replace(old, new)
    text = re.sub(r"[0-9a-f]{8}/", "ID/", text)  # tool call ids: a per-turn prefix
    text = re.sub(r'"messageId": "[0-9a-f]+-', '"messageId": "ID-', text)
    text = re.sub(r'"(updatedAt|timestamp|created_at)": "[^"]*"', r'"\1": "T"', text)
    text = re.sub(r'"(id|request_id|tool_call_id|source_id)": "[0-9a-f-]{32,36}"', r'"\1": "UUID"', text)
    return json.loads(text)


async def test_an_acp_session_says_the_same_in_memory_and_as_a_process(tmp_path: Path) -> None:
    said = {}
    for name, serve in (("memory", serve_acp), ("process", spawn_acp)):
        share, project = tmp_path / name / "share", tmp_path / name / "project"
        share.mkdir(parents=True)
        project.mkdir()
        write_config(share, SCRIPTS)
        async with serve(acp_env(share)) as agent:
            await agent.initialize()
            session_id = (await agent.new_session(project)).session_id
            assert (await agent.prompt(session_id, "go")).stop_reason == "end_turn"
            assert agent.client.permission_requests  # the Shell call asked
            said[name] = normalized(agent.recorder.incoming, (session_id, "SID"), (str(tmp_path / name), "ROOT"))
    assert said["memory"] == said["process"]
    assert len(said["memory"]) > 10


async def test_a_wire_session_says_the_same_in_memory_and_as_a_process(tmp_path: Path, work_dir: Path) -> None:
    said = {}
    for name, kind in (("memory", WireMemory), ("process", WireProcess)):
        config = scripted_config(tmp_path, SCRIPTS)
        wire = await kind.start("--work-dir", str(work_dir), "--config-file", str(config), "--session", name)
        try:
            await wire.call("initialize", {"protocol_version": "1.10", "client": {"name": "t", "version": "1"}})
            prompt_id = await wire.request("prompt", {"user_input": "go"})
            request, _ = await wire.next_request()
            await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve"})
            response, _ = await wire.response(prompt_id)
            assert response["result"] == {"status": "finished"}
            await wire.call("replay")
        finally:
            assert await wire.close() == 0
        said[name] = normalized(wire.received, (str(tmp_path), "ROOT"))
    assert said["memory"] == said["process"]
    assert len(said["memory"]) > 10


async def test_a_schema_violation_still_fails_the_test(share: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(share, [])
    bad = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "nope"}}}
    with pytest.raises(AssertionError, match="ACP schema check failed"):
        async with serve_acp(acp_env(share)) as agent:
            await agent.initialize()
            agent.server.stdout.write(json.dumps(bad).encode() + b"\n")  # as if the server had said it
            await asyncio.sleep(0.05)
    monkeypatch.setattr(acp_client, "SCHEMA_DIR", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="ACP schema not found"):
        async with serve_acp(acp_env(share)):
            pytest.fail("the agent must not start without a schema")


async def test_the_server_gets_its_processs_environment_and_fresh_state(share: Path, tmp_path: Path) -> None:
    write_config(share, ["text: hi"])
    before_env, before_cwd = dict(os.environ), os.getcwd()
    queue_key = ("test-queue", "s")
    echo._SESSION_QUEUES[queue_key] = echo._ScriptQueue(["left by an earlier server"])
    secrets.register(["sk-known-to-the-test-process"])
    async with serve_acp({**acp_env(share), "KIMI_PROBE": "1"}, cwd=tmp_path) as agent:
        # what `spawn_acp` gives a process: the SDK's trimmed environment and `env`, nothing else
        assert os.environ["KIMI_SHARE_DIR"] == str(share) and os.environ["KIMI_PROBE"] == "1"
        assert "PYTEST_XDIST_WORKER" not in os.environ and "PYTEST_CURRENT_TEST" not in os.environ
        assert os.getcwd() == str(tmp_path)
        assert queue_key not in echo._SESSION_QUEUES and not secrets.holds_secret("sk-known-to-the-test-process")
        await agent.initialize()
        session_id = (await agent.new_session(tmp_path)).session_id
        assert (await agent.prompt(session_id, "hi")).stop_reason == "end_turn"
    assert "acp starting" in (share / "logs" / "kimi.log").read_text()  # its own log, in its share dir
    assert dict(os.environ) == before_env and os.getcwd() == before_cwd
    assert queue_key in echo._SESSION_QUEUES and secrets.holds_secret("sk-known-to-the-test-process")
    del echo._SESSION_QUEUES[queue_key]


async def test_tasks_the_server_left_are_cancelled_as_at_a_process_exit(share: Path) -> None:
    write_config(share, [])
    started: list[asyncio.Task[Any]] = []

    async def linger() -> None:
        started.append(asyncio.create_task(asyncio.sleep(60)))  # a task of its task: the server's too
        await asyncio.sleep(60)

    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        outer = agent.server.tasks.start(linger(), name="left behind")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    assert outer.cancelled() and started and started[0].cancelled()


async def test_two_servers_at_once_are_refused_and_one_left_running_is_reported(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, [])
    environment = dict(os.environ)
    first = await WireMemory.start("--work-dir", str(work_dir), "--config-file", str(config))
    with pytest.raises(RuntimeError, match="two servers at once"):
        await WireMemory.start("--work-dir", str(work_dir), "--config-file", str(config))
    assert inmemory.left_running() == "kimi --wire (in memory)"  # what tests/conftest.py checks after each test
    assert inmemory.left_running() is None
    assert dict(os.environ) == environment
    first.kill()
    await first.aclose()


async def test_an_option_error_is_exit_code_2_and_one_line(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, [])
    wire = await WireMemory.start("--work-dir", str(tmp_path / "missing"), "--config-file", str(config))
    assert await wire.wait(10) == 2
    assert (await wire.stderr_text()).startswith(f"kimi: error: work dir {tmp_path / 'missing'} does not exist")
    assert await wire.close() == 2


@pytest.mark.processes
async def test_the_processes_marker_starts_real_processes(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, [])
    wire = await WireMemory.start("--work-dir", str(work_dir), "--config-file", str(config))
    try:
        assert isinstance(wire, WireProcess) and wire.proc.pid > 0
    finally:
        await wire.close()
