"""One session open in two processes at once (an IDE's `kimi acp` and `kimi --wire` / `kimi web`).

A turn in one process holds the session: the other's prompt is refused with a message naming the
holder, and nothing it sent reaches the files. Once the turn is over, the other process's next
turn is built on the whole history, the first process's turn included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import acp
import pytest

from kimi_acp.sessions import work_dir_key
from tests.fakes.openai_server import FakeLLMServer, text_reply, tool_call_reply
from tests.support.acp_client import spawn_acp
from tests.support.acp_fixtures import acp_env, fake_model_config, texts
from tests.support.wire_client import WireProcess

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def user_texts(messages: list[dict]) -> list[str]:
    found = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        parts = [content] if isinstance(content, str) else [p.get("text", "") for p in content or []]
        found += [p for p in parts if p and not p.startswith("<system")]
    return found


async def test_a_turn_in_one_process_holds_the_session_and_the_other_catches_up(
    share: Path, project: Path, server: FakeLLMServer
) -> None:
    fake_model_config(share, server)
    server.enqueue(
        text_reply("one"),
        tool_call_reply(("call-1", "Shell", json.dumps({"command": "echo from-the-wire"}))),
        text_reply("wire done"),
        text_reply("caught up"),
    )
    async with spawn_acp(acp_env(share)) as ide:
        await ide.initialize()
        session_id = (await ide.new_session(project)).session_id
        assert (await ide.prompt(session_id, "first from the IDE")).stop_reason == "end_turn"

        wire = await WireProcess.start("--work-dir", str(project), "--session", session_id, env=acp_env(share))
        try:
            await wire.call("initialize", INIT)
            prompt_id = await wire.request("prompt", {"user_input": "from the wire"})
            approval, _ = await wire.next_request()  # the wire's turn is now waiting on its user

            with pytest.raises(acp.RequestError) as refused:
                await ide.prompt(session_id, "refused while the wire runs")
            message = str(refused.value)
            assert f"running a turn in another kimi process (pid {wire.proc.pid})" in message
            assert "fork the session" in message
            assert refused.value.data["holderPid"] == wire.proc.pid

            payload = approval["params"]["payload"]
            await wire.respond(approval["id"], {"request_id": payload["id"], "response": "approve"})
            done, _ = await wire.response(prompt_id)
            assert done["result"] == {"status": "finished"}
        finally:
            assert await wire.close() == 0

        assert (await ide.prompt(session_id, "third from the IDE")).stop_reason == "end_turn"
        assert texts(ide.recorder.updates(session_id)).endswith("caught up")

    first, wire_first, wire_second, caught_up = server.requests
    seen = caught_up.body["messages"]
    assert user_texts(seen) == ["first from the IDE", "from the wire", "third from the IDE"]
    assert any("from-the-wire" in json.dumps(m) for m in seen if m.get("role") == "tool")  # the wire's tool result
    assert [m.get("content") for m in seen if m.get("role") == "assistant"][-1] == "wire done"

    session_dir = share / "sessions" / work_dir_key(project) / session_id
    lines = (session_dir / "context.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line whole
    stored = [r for r in records if not str(r.get("role", "")).startswith("_")]
    assert user_texts(stored) == ["first from the IDE", "from the wire", "third from the IDE"]
    assert "refused while the wire runs" not in (session_dir / "wire.jsonl").read_text()


async def test_a_wire_prompt_to_a_session_busy_elsewhere_gets_invalid_state(
    share: Path, project: Path, server: FakeLLMServer
) -> None:
    fake_model_config(share, server)
    server.enqueue(tool_call_reply(("call-1", "Shell", json.dumps({"command": "echo one"}))), text_reply("done"))
    first = await WireProcess.start("--work-dir", str(project), "--session", "shared-1", env=acp_env(share))
    second = await WireProcess.start("--work-dir", str(project), "--session", "shared-1", env=acp_env(share))
    try:
        await first.call("initialize", INIT)
        await second.call("initialize", INIT)
        prompt_id = await first.request("prompt", {"user_input": "go"})
        approval, _ = await first.next_request()
        refused, _ = await second.call("prompt", {"user_input": "me too"})
        assert refused["error"]["code"] == -32000
        assert f"another kimi process (pid {first.proc.pid})" in refused["error"]["message"]
        payload = approval["params"]["payload"]
        await first.respond(approval["id"], {"request_id": payload["id"], "response": "approve"})
        done, _ = await first.response(prompt_id)
        assert done["result"] == {"status": "finished"}
    finally:
        assert await first.close() == 0
        assert await second.close() == 0
    assert len(server.requests) == 2  # the refused prompt never reached the model
