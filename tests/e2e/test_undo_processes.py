"""`/undo` across processes: a restart between the turns and their undo, the model's next request
after it (a real loopback provider shows what it is sent), and two processes on one session."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.sessions import work_dir_key
from tests.e2e.test_session_two_processes import user_texts
from tests.fakes.openai_server import FakeLLMServer, text_reply, tool_call_reply
from tests.support.acp_fixtures import acp_env, fake_model_config
from tests.support.wire_client import WireProcess, events, text_of

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


async def wire_process(share: Path, project: Path, session: str) -> WireProcess:
    wire = await WireProcess.start(
        "--work-dir", str(project), "--session", session, "--yolo", env=acp_env(share)
    )
    await wire.call("initialize", INIT)
    return wire


async def test_undo_two_turns_after_a_restart_and_the_model_no_longer_sees_them(
    share: Path, project: Path, server: FakeLLMServer
) -> None:
    fake_model_config(share, server)
    (project / "kept.txt").write_text("kept before\n")
    (project / "edited.txt").write_text("edited before\n")
    (project / "moved.txt").write_text("moved before\n")
    server.enqueue(
        tool_call_reply(("c1", "WriteFile", json.dumps({"path": "kept.txt", "content": "turn one\n"}))),
        text_reply("one done"),
        tool_call_reply(
            (
                "c2",
                "StrReplaceFile",
                json.dumps({"path": "edited.txt", "edit": {"old": "before", "new": "turn two"}}),
            )
        ),
        text_reply("two done"),
        tool_call_reply(("c3", "Shell", json.dumps({"command": "mv moved.txt gone.txt"}))),
        text_reply("three done"),
    )
    first = await wire_process(share, project, "undo-restart")
    try:
        for prompt in ("turn one", "turn two", "turn three"):
            done, _ = await first.call("prompt", {"user_input": prompt})
            assert done["result"] == {"status": "finished"}
    finally:
        assert await first.close() == 0
    assert not (project / "moved.txt").exists()

    server.enqueue(text_reply("after the undo"))
    second = await wire_process(share, project, "undo-restart")
    try:
        done, seen = await second.call("prompt", {"user_input": "/undo 2"})
        assert done["result"] == {"status": "finished"}
        notice = [e["payload"] for e in events(seen, "Notification")][0]
        assert notice["payload"]["turns"] == [3, 2] and notice["payload"]["left"] == []
        assert "Undid 2 turns (“turn three”, “turn two”)." in text_of(seen)
        await second.call("prompt", {"user_input": "what now"})
    finally:
        assert await second.close() == 0

    assert (project / "kept.txt").read_text() == "turn one\n"  # the first turn stays
    assert (project / "edited.txt").read_text() == "edited before\n"
    assert (project / "moved.txt").read_text() == "moved before\n" and not (project / "gone.txt").exists()
    last = server.requests[-1].body["messages"]
    assert user_texts(last) == ["turn one", "what now"]
    assert "two done" not in json.dumps(last) and "three done" not in json.dumps(last)
    assert "one done" in json.dumps(last)
    session_dir = share / "sessions" / work_dir_key(project) / "undo-restart"
    kept = (session_dir / "context_1.jsonl").read_text()  # the record of the undone turns
    assert "turn two" in kept and "three done" in kept
    assert "/undo 2" in (session_dir / "wire.jsonl").read_text()


async def test_undo_in_a_second_process_waits_for_the_turn_lock(
    share: Path, project: Path, server: FakeLLMServer
) -> None:
    fake_model_config(share, server)
    (project / "a.txt").write_text("before\n")
    server.enqueue(
        tool_call_reply(("c1", "Shell", json.dumps({"command": "echo changed > a.txt"}))), text_reply("done")
    )
    first = await WireProcess.start("--work-dir", str(project), "--session", "undo-two", env=acp_env(share))
    second = await wire_process(share, project, "undo-two")
    try:
        await first.call("initialize", INIT)
        prompt_id = await first.request("prompt", {"user_input": "change a"})
        approval, _ = await first.next_request()
        refused, _ = await second.call("prompt", {"user_input": "/undo"})
        assert refused["error"]["code"] == -32000
        assert f"another kimi process (pid {first.proc.pid})" in refused["error"]["message"]
        payload = approval["params"]["payload"]
        await first.respond(approval["id"], {"request_id": payload["id"], "response": "approve"})
        done, _ = await first.response(prompt_id)
        assert done["result"] == {"status": "finished"}
        assert (project / "a.txt").read_text() == "changed\n"
        done, seen = await second.call("prompt", {"user_input": "/undo"})
        assert "Restored: `a.txt`" in text_of(seen)
    finally:
        assert await first.close() == 0
        assert await second.close() == 0
    assert (project / "a.txt").read_text() == "before\n"
