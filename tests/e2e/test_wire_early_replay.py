"""`replay` right after `initialize`, served from the session file before the session is loaded
(`kimi_acp/frontends/wire/early_replay.py`): the same lines as the loaded server's replay, and the server
works normally afterwards. The session is recorded by a server in this process (`start_wire`); the
early path is a process's first line (`start_wire_process`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kimi_acp.frontends.wire.early_replay import replay_output
from kimi_acp.sessions import work_dir_key
from tests.support.wire_client import event_types, text_of, tool_call

pytestmark = pytest.mark.smoke  # also run in CI's smoke jobs (.ci/run)

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


def only_session(share_dir: Path, work_dir: Path) -> Path:
    (directory,) = list((share_dir / "sessions" / work_dir_key(work_dir)).iterdir())
    return directory


async def record_a_session(start_wire, share_dir: Path, work_dir: Path) -> tuple[str, list[dict], dict]:
    """A turn with an approved Shell call; returns (session id, replayed messages, replay result)
    as the loaded server replays it."""
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo hi"}), "text: done ünïcode"])
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve"})
    await wire.response(prompt_id)
    response, replayed = await wire.call("replay")
    assert await wire.close() == 0
    return only_session(share_dir, work_dir).name, replayed, response["result"]


async def test_replay_after_initialize_matches_the_loaded_servers(start_wire, start_wire_process, share_dir, work_dir):
    session_id, server_replay, server_result = await record_a_session(start_wire, share_dir, work_dir)
    assert server_result["requests"] == 1  # the approval request is part of the history

    wire = await start_wire_process(["text: again"], "--session", session_id)
    # both lines in one write, as a client reopening a thread sends them
    await wire.send_raw(
        json.dumps({"jsonrpc": "2.0", "method": "initialize", "id": "i", "params": INIT})
        + "\n"
        + json.dumps({"jsonrpc": "2.0", "method": "replay", "id": "r"})
    )
    init, _ = await wire.response("i")
    assert init["result"]["protocol_version"] == "1.10"
    response, replayed = await wire.response("r")
    assert response["result"] == server_result
    assert replayed == server_replay
    assert "ApprovalRequest" in [m["params"]["type"] for m in replayed if m.get("method") == "request"]

    # the loaded server takes over: a prompt continues the same session
    answer, live = await wire.call("prompt", {"user_input": "once more"})
    assert answer["result"] == {"status": "finished"}
    assert text_of(live) == "again"
    assert await wire.close() == 0


async def test_early_output_is_the_servers_replay_byte_for_byte_as_json(start_wire, share_dir, work_dir):
    """The early path, called directly on the recorded file, gives the loaded server's messages."""
    session_id, server_replay, server_result = await record_a_session(start_wire, share_dir, work_dir)
    path = only_session(share_dir, work_dir) / "wire.jsonl"
    output = replay_output(path, "r")
    assert output is not None
    lines = [json.loads(line) for line in output.decode().splitlines()]
    assert lines[:-1] == server_replay
    assert lines[-1] == {"jsonrpc": "2.0", "id": "r", "result": server_result}
    assert event_types(lines[:-1])[0] == "TurnBegin"


async def test_replay_of_a_new_session_goes_to_the_server(start_wire_process):
    wire = await start_wire_process([])
    await wire.send_raw(
        json.dumps({"jsonrpc": "2.0", "method": "initialize", "id": "i", "params": INIT})
        + "\n"
        + json.dumps({"jsonrpc": "2.0", "method": "replay", "id": "r"})
    )
    await wire.response("i")
    response, replayed = await wire.response("r")
    assert response["result"] == {"status": "finished", "events": 0, "requests": 0}
    assert replayed == []
    assert await wire.close() == 0


async def test_replay_with_params_is_left_to_the_server(start_wire, start_wire_process, share_dir, work_dir):
    session_id, server_replay, server_result = await record_a_session(start_wire, share_dir, work_dir)
    wire = await start_wire_process([], "--session", session_id)
    await wire.send_raw(
        json.dumps({"jsonrpc": "2.0", "method": "initialize", "id": "i", "params": INIT})
        + "\n"
        + json.dumps({"jsonrpc": "2.0", "method": "replay", "id": "r", "params": {"bogus": 1}})
    )
    await wire.response("i")
    response, replayed = await wire.response("r")
    assert response["result"] == server_result  # the loaded server ignores unknown params
    assert replayed == server_replay
    assert await wire.close() == 0


async def test_input_after_the_early_replay_reaches_the_server_whole(start_wire, start_wire_process, share_dir, work_dir):
    """A prompt line split around the end of the preload: the early reader read its first half,
    the server gets it whole (no byte lost between them)."""
    session_id, server_replay, _ = await record_a_session(start_wire, share_dir, work_dir)
    wire = await start_wire_process(["text: first"], "--session", session_id)
    prompt = json.dumps({"jsonrpc": "2.0", "method": "prompt", "id": "p2", "params": {"user_input": "b"}})
    wire.proc.stdin.write(  # raw: `send_raw` would end the half line
        (
            json.dumps({"jsonrpc": "2.0", "method": "initialize", "id": "i", "params": INIT})
            + "\n"
            + json.dumps({"jsonrpc": "2.0", "method": "replay", "id": "r"})
            + "\n"
        ).encode()
    )
    await wire.proc.stdin.drain()
    _, replayed = await wire.response("r")
    assert replayed[1:] == server_replay  # after the initialize answer
    wire.proc.stdin.write(prompt[:20].encode())  # half a line, while the preload still runs
    await wire.proc.stdin.drain()
    await asyncio.sleep(1.0)  # the preload is long done: the half line was handed to the server
    await wire.send_raw(prompt[20:])
    first, live = await wire.response("p2")
    assert first["result"] == {"status": "finished"}
    assert text_of(live) == "first"
    # and a request sent together with the replay goes to the server too
    await wire.send_raw(json.dumps({"jsonrpc": "2.0", "method": "replay", "id": "r2"}))
    again, _ = await wire.response("r2")
    assert again["result"]["events"] > len(server_replay) - 1  # now with the new turn
    assert await wire.close() == 0
