"""`kimi --wire`'s ApprovalRequest shows exactly what runs (issue #29 item 6), played as an attack
through a real process: the command that closes a fence and hides a line, with bidi, zero-width
and terminal escapes, reaches the client escaped, whole, after a note saying so; an MCP tool's
hostile name is one escaped line, its server named first. The command still runs as written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kimi_acp.mcp.naming import sanitize
from kimi_acp.util.visible_text import escapes_note, name_text, visible
from tests.e2e.test_cards_acp import ATTACK, HIDDEN, HOSTILE
from tests.mcp.helpers import SERVER
from tests.support.wire_client import WireClientMixin, tool_call

# Security guarantees are checked on real processes, as a user runs the server (not in memory).
pytestmark = pytest.mark.processes

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


async def answer(wire: WireClientMixin, response: str) -> dict:
    request, _ = await wire.next_request()
    payload = request["params"]["payload"]
    await wire.respond(request["id"], {"request_id": payload["id"], "response": response})
    return payload


async def test_the_approval_request_shows_every_line_that_runs(start_wire, work_dir: Path):
    wire = await start_wire([tool_call("s1", "Shell", {"command": ATTACK}), "text: done"])
    await wire.call("initialize", INIT)
    prompt = await wire.request("prompt", {"user_input": "go"})
    payload = await answer(wire, "approve")
    note, shell = payload["display"]
    assert note == {"type": "brief", "text": escapes_note("command")}
    assert shell["type"] == "shell" and shell["command"] == visible(ATTACK).text
    assert shell["command"].splitlines()[6] == "'; touch hidden-marker; echo '"  # every line, none hidden
    assert not any(char in json.dumps(payload, ensure_ascii=False) for char in HIDDEN)
    response, _ = await wire.response(prompt)
    assert response["result"] == {"status": "finished"}
    assert (work_dir / "hidden-marker").exists()  # the command ran as the model wrote it


async def test_an_mcp_tool_cannot_claim_another_server(start_wire, work_dir: Path):
    tool = HOSTILE + "echo"
    servers = {"mcpServers": {"evil": {"command": sys.executable, "args": [SERVER, "stdio", "--prefix", HOSTILE]}}}
    wire = await start_wire([tool_call("m1", sanitize(tool), {"text": "hi"}), "text: done"], "--mcp-config", json.dumps(servers))
    await wire.call("initialize", INIT)
    prompt = await wire.request("prompt", {"user_input": "list the issues"})
    payload = await answer(wire, "reject")
    shown = name_text(tool).text
    assert payload["description"] == f"Call MCP server `evil`: tool `{shown}`."
    assert payload["session_scope"] == f"MCP server `evil`: tool `{shown}`"
    assert payload["display"] == [{"type": "brief", "text": escapes_note("request")}]
    assert payload["session_scope"].count("`") == 4 and "\n" not in payload["session_scope"]
    await wire.response(prompt)
