"""Every request gets exactly one answer, whatever arrives around it — on both servers.

Raw JSON-RPC lines to `kimi acp` and `kimi --wire`: a cancel in the same write as its prompt,
cancel storms around the permission request, absurdly nested lines, malformed envelopes (the
servers in this process, tests/support/inmemory.py), and, with real processes, a nested first
line (the early handshake reads it) and stdin closing while requests are open.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_fixtures import write_config
from tests.support.inmemory import WireMemory
from tests.support.wire_client import WireClientMixin, WireProcess, event_types, scripted_config, tool_call

SHELL_CALL = tool_call("c1", "Shell", {"command": "echo storm"})
STORM_ROUNDS = 200


# --------------------------------------------------------------------------- helpers


async def start_acp(share: Path, scripts: list[str], *, process: bool = False) -> Any:
    """`kimi acp` with raw lines: in this process, or (`process`) a real one."""
    write_config(share, scripts)
    env = {"KIMI_SHARE_DIR": str(share)}
    return await (WireProcess.spawn("acp", env=env) if process else WireMemory.acp(env=env))


async def acp_session(agent: WireClientMixin, project: Path) -> str:
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    response, _ = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    return response["result"]["sessionId"]


async def start_wire(tmp_path: Path, project: Path, scripts: list[str], *, process: bool = False) -> Any:
    """`kimi --wire`, initialized: in this process, or (`process`) a real one."""
    config = scripted_config(tmp_path, scripts)
    kind = WireProcess if process else WireMemory
    wire = await kind.start("--work-dir", str(project), "--config-file", str(config))
    await wire.call("initialize", {"protocol_version": "1.10"})
    return wire


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def acp_prompt(request_id: Any, session_id: str, text: str = "go") -> bytes:
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    return line({"jsonrpc": "2.0", "id": request_id, "method": "session/prompt", "params": params})


def acp_cancel(session_id: str) -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}})


def wire_prompt(request_id: Any, text: str = "go") -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "method": "prompt", "params": {"user_input": text}})


def wire_cancel(request_id: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "method": "cancel"})


async def answers(proc: WireClientMixin, ids: set[Any], timeout: float = 5.0) -> dict[Any, dict[str, Any]]:
    """Read until every id in `ids` is answered; fails on a second answer to any of them."""
    got: dict[Any, dict[str, Any]] = {}
    deadline = asyncio.get_running_loop().time() + timeout
    while set(got) != ids:
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, f"unanswered: {ids - set(got)}"
        message = await proc.recv(remaining)
        if "method" not in message and message.get("id") in ids:
            assert message["id"] not in got, f"two answers to {message['id']}"
            got[message["id"]] = message
    return got


async def quiet(proc: WireClientMixin, seconds: float = 0.3) -> list[dict[str, Any]]:
    """Whatever arrives within `seconds` (to check that nothing more is said)."""
    seen = []
    try:
        while True:
            seen.append(await proc.recv(seconds))
    except TimeoutError:
        return seen


# --------------------------------------------------------------------------- cancel in the same write


async def test_acp_prompt_and_cancel_in_one_write_is_answered_cancelled(share, project):
    agent = await start_acp(share, ["text: never streamed"] * 3)
    session_id = await acp_session(agent, project)
    await agent.send_raw(acp_prompt("p1", session_id) + acp_cancel(session_id))
    response = (await answers(agent, {"p1"}))["p1"]
    assert response["result"]["stopReason"] == "cancelled" and "usage" in response["result"]
    # The session is not wedged: the next prompt runs normally.
    await agent.send_raw(acp_prompt("p2", session_id))
    assert (await answers(agent, {"p2"}))["p2"]["result"]["stopReason"] == "end_turn"
    assert await agent.close() == 0


async def test_wire_prompt_and_cancel_in_one_write_is_answered_cancelled(tmp_path, project):
    wire = await start_wire(tmp_path, project, ["text: never streamed", "text: second"])
    seen_before = len(wire.received)
    await wire.send_raw(wire_prompt("p1") + wire_cancel("c1"))
    got = await answers(wire, {"p1", "c1"})
    assert got["p1"]["result"] == {"status": "cancelled"}
    assert "result" in got["c1"]
    turn = event_types(wire.received[seen_before:])
    assert turn.count("TurnBegin") == 1 and turn.count("TurnEnd") == 1  # the record stays whole
    response, _ = await wire.call("prompt", {"user_input": "again"})
    assert response["result"] == {"status": "finished"}
    assert await wire.close() == 0


# --------------------------------------------------------------------------- cancel storms


async def test_acp_cancel_storm_around_the_permission_request(share, project):
    agent = await start_acp(share, [SHELL_CALL] * (STORM_ROUNDS + 5))
    session_id = await acp_session(agent, project)
    rng = random.Random(7)
    stop_reasons = []
    for n in range(STORM_ROUNDS):
        request_id = f"p{n}"
        delay = rng.choice([0.0, 0.0, rng.uniform(0, 0.004), rng.uniform(0, 0.03)])
        if delay == 0.0:
            await agent.send_raw(acp_prompt(request_id, session_id) + acp_cancel(session_id))
        else:
            await agent.send_raw(acp_prompt(request_id, session_id))
            await asyncio.sleep(delay)
            await agent.send_raw(acp_cancel(session_id))
        stop_reasons.append((await answers(agent, {request_id}))[request_id]["result"]["stopReason"])
    # A cancel may land after the turn already ended (it then has nothing to cancel), but
    # never on a turn that waits for the user: with no permission answer, every turn is cancelled.
    assert stop_reasons == ["cancelled"] * STORM_ROUNDS
    assert await agent.close() == 0


async def test_wire_cancel_storm_around_the_approval_request(tmp_path, project):
    wire = await start_wire(tmp_path, project, [SHELL_CALL] * (STORM_ROUNDS + 5))
    rng = random.Random(11)
    statuses = []
    for n in range(STORM_ROUNDS):
        prompt_id, cancel_id = f"p{n}", f"c{n}"
        delay = rng.choice([0.0, 0.0, rng.uniform(0, 0.004), rng.uniform(0, 0.03)])
        if delay == 0.0:
            await wire.send_raw(wire_prompt(prompt_id) + wire_cancel(cancel_id))
        else:
            await wire.send_raw(wire_prompt(prompt_id))
            await asyncio.sleep(delay)
            await wire.send_raw(wire_cancel(cancel_id))
        got = await answers(wire, {prompt_id, cancel_id})
        statuses.append(got[prompt_id]["result"]["status"])
        assert "result" in got[cancel_id], got[cancel_id]  # a turn was always running to cancel
    assert statuses == ["cancelled"] * STORM_ROUNDS
    assert await wire.close() == 0


# --------------------------------------------------------------------------- nesting


def nested(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "0" + "}" * depth


@pytest.mark.parametrize("server", ["acp", "wire"])
async def test_any_nesting_depth_gets_an_error_and_the_server_lives(server, share, tmp_path, project):
    if server == "acp":
        proc = await start_acp(share, ["text: alive"])
        probe_id = "alive"
        probe = line({"jsonrpc": "2.0", "id": probe_id, "method": "session/list", "params": {}})
    else:
        proc = await start_wire(tmp_path, project, ["text: alive"])
        probe_id = "alive"
        probe = wire_prompt(probe_id, "hello")
    for depth in (10, 100, 500, 900, 1000, 5000, 100_000):
        for kind in ("array", "object"):
            deep = nested(depth, kind)
            lines = [
                deep,  # the whole line
                '{"jsonrpc":"2.0","id":"d","method":"session/list","params":{"x":' + deep + "}}",
                '{"jsonrpc":"2.0","id":' + deep + ',"method":"session/list"}',
            ]
            for text in lines:
                await proc.send_raw(text)
                reply = await proc.recv(10)
                assert "error" in reply or "result" in reply, reply
                if "error" in reply:
                    assert reply["error"]["code"] in (-32700, -32600, -32601, -32602), reply
    await proc.send_raw(probe)
    assert "result" in (await answers(proc, {probe_id}))[probe_id]
    assert await proc.close() == 0


async def test_a_deeply_nested_first_line_does_not_kill_acp(share):
    proc = await start_acp(share, [], process=True)  # the first line: the early handshake reads it
    await proc.send_raw(nested(100_000, "array"))
    assert (await proc.recv(10))["error"]["code"] == -32700
    response, _ = await proc.call("initialize", {"protocolVersion": 1})
    assert response["result"]["protocolVersion"] == 1
    assert await proc.close() == 0


async def test_a_deeply_nested_first_line_does_not_kill_wire(tmp_path, project):
    config = scripted_config(tmp_path, [])
    wire = await WireProcess.start("--work-dir", str(project), "--config-file", str(config))
    await wire.send_raw(nested(100_000, "object"))
    assert (await wire.recv(10))["error"]["code"] == -32700
    response, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    assert "result" in response
    assert await wire.close() == 0


# --------------------------------------------------------------------------- envelopes


ACP_BAD_ENVELOPES = [
    ({"jsonrpc": "2.0", "id": True, "method": "session/list", "params": {}}, None, -32600),
    ({"jsonrpc": "2.0", "id": False, "method": "session/list", "params": {}}, None, -32600),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "session/list", "params": {}}, None, -32600),
    ({"jsonrpc": "2.0", "id": [1], "method": "session/list", "params": {}}, None, -32600),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "session/list", "params": {}}, None, -32600),
    ({"jsonrpc": "2.0", "id": 5, "method": 5, "params": {}}, 5, -32600),
    ({"jsonrpc": "2.0", "id": 6, "method": ["session/list"], "params": {}}, 6, -32600),
    ({"jsonrpc": "2.0", "id": 7, "method": {"m": 1}}, 7, -32600),
    ({"jsonrpc": "2.0", "id": 8}, 8, -32600),  # an id and no method
    ({"jsonrpc": "1.0", "id": 9, "method": "session/list", "params": {}}, 9, -32600),
    ({"jsonrpc": "2.0", "id": 10, "method": "session/list", "params": [1]}, 10, -32602),
    ({"jsonrpc": "2.0", "id": 11, "method": "initialize", "params": {"protocolVersion": {}}}, 11, -32602),
    ({"jsonrpc": "2.0", "id": 12, "method": "initialize", "params": {"protocolVersion": True}}, 12, -32602),
    ({"jsonrpc": "2.0", "id": 13, "method": "initialize", "params": {}}, 13, -32602),
    ({"jsonrpc": "2.0", "id": 14, "method": "no/such/method", "params": {}}, 14, -32601),
]


async def test_acp_malformed_envelopes_get_the_right_error(share):
    agent = await start_acp(share, [])
    await agent.call("initialize", {"protocolVersion": 1})
    for message, expected_id, code in ACP_BAD_ENVELOPES:
        await agent.send(message)
        reply = await agent.recv()
        assert reply["id"] == expected_id and reply["error"]["code"] == code, (message, reply)
        assert reply["error"]["message"] not in ("Invalid request", "Invalid params"), reply  # says what is wrong
    # Responses are never answered, not even broken ones; notifications neither.
    await agent.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "yours"}})
    await agent.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": [1]})
    await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "none"}})
    assert await quiet(agent) == []
    assert await agent.close() == 0


@pytest.mark.parametrize(
    "params",
    [
        {"mcpServers": [{"bogus": 1}]},
        {"mcpServers": [{"name": "x"}]},
        {"mcpServers": [{"name": "x", "command": "/bin/x", "args": [1]}]},
        {"mcpServers": [{"name": "x", "command": "/bin/x", "env": [{"name": "A"}]}]},
        {"mcpServers": [{"name": "x", "type": "http"}]},
        {"mcpServers": [{"name": "x", "type": "sse", "url": "ftp://h"}]},
        {"mcpServers": [{"name": "x", "type": "ws", "url": "http://h"}]},
        {"mcpServers": "none"},
    ],
)
async def test_acp_invalid_mcp_servers_are_refused_by_name(share, project, params):
    agent = await start_acp(share, [])
    await agent.call("initialize", {"protocolVersion": 1})
    response, _ = await agent.call("session/new", {"cwd": str(project), **params})
    error = response["error"]
    assert error["code"] == -32602
    assert "mcpServers" in error["message"]
    assert await agent.close() == 0


async def test_acp_lone_surrogates_get_an_answer(share, project):
    agent = await start_acp(share, [])
    await agent.call("initialize", {"protocolVersion": 1})
    await agent.send_raw('{"jsonrpc":"2.0","id":1,"method":"\\ud800x","params":{}}')
    reply = await agent.recv()
    assert reply["id"] == 1 and reply["error"]["code"] == -32601
    await agent.send_raw('{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp/\\udc00x","mcpServers":[]}}')
    reply = await agent.recv()
    assert reply["id"] == 2 and reply["error"]["code"] == -32602
    assert await agent.close() == 0


async def test_wire_never_answers_a_response(tmp_path, project):
    wire = await start_wire(tmp_path, project, [])
    await wire.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}})
    await wire.send({"jsonrpc": "2.0", "error": {"code": -32600, "message": "no id"}})
    await wire.send({"jsonrpc": "2.0", "id": "zz", "result": 1, "error": {"code": 1, "message": "both"}})
    await wire.send({"jsonrpc": "2.0", "id": "unknown", "result": {}})
    assert await quiet(wire) == []
    assert await wire.close() == 0


# --------------------------------------------------------------------------- stdin closing


async def test_acp_eof_while_a_prompt_waits_for_permission_still_answers_it(share, project):
    agent = await start_acp(share, [SHELL_CALL], process=True)
    session_id = await acp_session(agent, project)
    await agent.send_raw(acp_prompt("p1", session_id))
    await agent.until(lambda m: m.get("method") == "session/request_permission")
    assert agent.proc.stdin is not None
    agent.proc.stdin.close()
    response = (await answers(agent, {"p1"}))["p1"]
    assert response["result"]["stopReason"] == "cancelled" and "usage" in response["result"]
    assert await asyncio.wait_for(agent.proc.wait(), 10) == 0


# --------------------------------------------------------------------------- initialize and prompt text


BAD_INITIALIZE = [
    ({"protocolVersion": 1, "clientInfo": "zed"}, "clientInfo"),
    ({"protocolVersion": 1, "clientInfo": 7}, "clientInfo"),
    ({"protocolVersion": 1, "clientInfo": ["zed", "1.0"]}, "clientInfo"),
    ({"protocolVersion": 1, "clientInfo": {"name": 3, "version": "1.0"}}, "clientInfo.name"),
    ({"protocolVersion": 1, "clientInfo": {"name": "zed", "version": "1", "title": ["Zed"]}}, "clientInfo.title"),
    ({"protocolVersion": "1"}, "protocolVersion"),
    ({"protocolVersion": "2025-01-01"}, "protocolVersion"),
]


@pytest.mark.parametrize(("params", "field"), BAD_INITIALIZE)
async def test_acp_initialize_with_a_wrong_type_is_refused_naming_the_field(share, params, field):
    """The first line (answered by the early handshake, startup/early.py) and a later one (the
    request guard) get the same -32602, and a good initialize after it still works."""
    agent = await start_acp(share, [])
    bad = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    await agent.send(bad)
    first = await agent.recv()
    response, _ = await agent.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "t", "version": "1"}})
    assert response["result"]["protocolVersion"] == 1
    await agent.send({**bad, "id": 4})
    later = await agent.recv()
    for reply in (first, later):
        assert "result" not in reply, reply
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["message"].startswith(f"Invalid params: {field}:"), reply
        assert reply["error"]["data"][field], reply
    assert await agent.close() == 0


async def test_acp_a_lone_surrogate_in_a_prompt_is_stored_as_a_replacement_character(share, project):
    agent = await start_acp(share, ["text: seen"])
    session_id = await acp_session(agent, project)
    await agent.send_raw(
        f'{{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{{"sessionId":"{session_id}",'
        '"prompt":[{"type":"text","text":"a\\ud800b"}]}}'
    )
    assert (await answers(agent, {"p"}))["p"]["result"]["stopReason"] == "end_turn"
    (session_dir,) = share.glob(f"sessions/*/{session_id}")
    for name in ("wire.jsonl", "context.jsonl"):
        text = (session_dir / name).read_text(encoding="utf-8")  # UTF-8 throughout: no surrogate escaped in
        assert "a\\ufffdb" in text or "a\ufffdb" in text, name
    wire_types = [json.loads(line).get("message", {}).get("type") for line in (session_dir / "wire.jsonl").read_text().splitlines()]
    assert wire_types.count("TurnBegin") == wire_types.count("TurnEnd") == 1  # one whole turn
    response, updates = await agent.call("session/load", {"sessionId": session_id, "cwd": str(project), "mcpServers": []})
    assert "result" in response, response
    shown = [u["params"]["update"] for u in updates if u.get("method") == "session/update"]
    assert [u["content"]["text"] for u in shown if u["sessionUpdate"] == "user_message_chunk"] == ["a\ufffdb"]
    assert await agent.close() == 0


async def test_wire_a_lone_surrogate_in_a_prompt_is_stored_as_a_replacement_character(tmp_path, project):
    wire = await start_wire(tmp_path, project, ["text: seen"])
    await wire.send_raw('{"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"a\\ud800b"}}')
    reply = (await answers(wire, {"p"}))["p"]
    assert reply["result"]["status"] == "finished", reply
    response, events = await wire.call("replay", {})
    begins = [e["params"]["payload"] for e in events if e.get("method") == "event" and e["params"]["type"] == "TurnBegin"]
    assert begins == [{"user_input": "a\ufffdb"}]
    assert await wire.close() == 0
