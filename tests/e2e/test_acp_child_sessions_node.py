"""Subagents as child sessions on the official TypeScript SDK client (`@agentclientprotocol/sdk` 2.4.0,
its unstable entry point: tests/node/subagents.mjs), with and without `clientCapabilities.subagents`,
and the same children after a `session/load` in a fresh process. Every line the agent wrote is
checked against the vendored unstable schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_acp_node import NODE_DIR, _node_ready
from tests.e2e.test_acp_subagents import REPORT, agent_call
from tests.support.acp_client import REQUEST_DEFS, RESPONSE_DEFS, load_schemas
from tests.support.acp_fixtures import write_config
from tests.support.wire_client import tool_call

pytestmark = pytest.mark.requires_tool("node", "npm")  # skipped without them, but a failure in CI (tests/conftest.py)


def run_node(share: Path, project: Path, *flags: str) -> dict[str, Any]:
    completed = subprocess.run(
        ["node", str(NODE_DIR / "subagents.mjs"), sys.executable, str(project), *flags],
        cwd=NODE_DIR, env={**os.environ, "KIMI_SHARE_DIR": str(share)}, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert schema_problems(result["agentLines"], result["sent"]) == []
    return result


def schema_problems(agent_lines: list[str], sent: list[str]) -> list[str]:
    """Every request, notification and result the agent wrote, against the schema (unstable, and stable where defined)."""
    methods = {m["id"]: m["method"] for m in map(json.loads, sent) if "method" in m and "id" in m}
    schemas = load_schemas()
    problems, checked = [], 0
    for message in map(json.loads, agent_lines):
        if "method" in message:
            problems += schemas.validate(REQUEST_DEFS[message["method"]], message.get("params"))
        elif "result" in message and message["id"] in methods:
            problems += schemas.validate(RESPONSE_DEFS[methods[message["id"]]], message["result"])
        else:
            continue
        checked += 1
    assert checked >= 10
    return problems


def of(updates: list[list[Any]], session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [u for sid, u in updates if sid == session_id and (kind is None or u["sessionUpdate"] == kind)]


def child_view(updates: list[list[Any]], child: str) -> list[tuple[str, str]]:
    """What a child session shows, comparable between a live turn and a replay: its messages (by id)
    and its cards' titles."""
    shown = []
    for update in of(updates, child):
        kind = update["sessionUpdate"]
        if kind in ("agent_message_chunk", "session_message"):
            shown.append((kind, update["messageId"]))
        elif kind == "tool_call":
            shown.append((kind, update["title"]))
    return shown


def test_typescript_sdk_client_sees_subagents_as_child_sessions_and_again_after_a_load(tmp_path: Path) -> None:
    _node_ready()
    share, project = tmp_path / "share", tmp_path / "project"
    share.mkdir()
    project.mkdir()
    (project / "a.txt").write_text("hello\n")
    write_config(share, [
        agent_call("one", subagent_type="explore"),
        tool_call("g1", "Glob", {"pattern": "*.txt"}),
        f"text: {REPORT}",
        agent_call("two", description="run it"),
        tool_call("s1", "Shell", {"command": "echo never"}),  # its permission request: the child is cancelled
        "text: One agent reported, the other was stopped.",
    ])
    live = run_node(share, project)
    parent, updates = live["sessionId"], live["updates"]
    assert live["stopReason"] == "end_turn"
    announced = [u for u in of(updates, parent, "subagent_update") if "title" in u]
    assert [u["title"] for u in announced] == ["look around", "run it"]
    first, second = (u["sessionId"] for u in announced)
    assert first.startswith(f"{parent}/subagents/") and second.startswith(f"{parent}/subagents/")
    order = [sid for sid, _ in updates]
    assert order.index(first) > updates.index([parent, announced[0]]) and order.index(second) > updates.index([parent, announced[1]])
    # the parent's thread: two Agent cards, the second failed with the stop
    cards = of(updates, parent, "tool_call")
    assert [c["title"] for c in cards] == ["Agent: look around", "Agent: run it"]
    ends = {u["toolCallId"]: u for u in of(updates, parent, "tool_call_update") if u.get("status") in ("completed", "failed")}
    assert ends[cards[0]["toolCallId"]]["status"] == "completed" and ends[cards[1]["toolCallId"]]["status"] == "failed"
    assert "The user stopped this agent" in json.dumps(ends[cards[1]["toolCallId"]]["content"])
    # the children's threads and the cancelled question
    assert child_view(updates, first)[1:] == [("tool_call", "Glob: *.txt"), ("agent_message_chunk", child_view(updates, first)[2][1]),
                                             ("session_message", child_view(updates, first)[3][1])]
    (asked,) = live["permissions"]
    assert asked["sessionId"] == second and asked["withdrawn"] is True
    assert asked["toolCallId"] == of(updates, second, "tool_call")[0]["toolCallId"]
    idle = [u["state"] for u in of(updates, parent, "subagent_update") if u.get("state", {}).get("state") == "idle"]
    assert [s["stopReason"] for s in idle] == ["end_turn", "cancelled"]

    loaded = run_node(share, project, "--load", parent)  # a fresh process
    again = [u for u in of(loaded["updates"], parent, "subagent_update") if "title" in u]
    assert [u["sessionId"] for u in again] == [first, second]
    for child in (first, second):
        assert child_view(loaded["updates"], child) == child_view(updates, child)
    assert [c["title"] for c in of(loaded["updates"], parent, "tool_call")] == ["Agent: look around", "Agent: run it"]


def test_typescript_sdk_client_without_the_capability_gets_the_cards_in_the_parents_thread(tmp_path: Path) -> None:
    _node_ready()
    share, project = tmp_path / "share", tmp_path / "project"
    share.mkdir()
    project.mkdir()
    write_config(share, [
        agent_call("two", description="run it"),
        tool_call("s1", "Shell", {"command": "echo approved"}),
        f"text: {REPORT}",
        "text: done",
    ])
    result = run_node(share, project, "--without")
    parent = result["sessionId"]
    assert result["stopReason"] == "end_turn" and {sid for sid, _ in result["updates"]} == {parent}
    assert not [u for _, u in result["updates"] if u["sessionUpdate"] in ("subagent_update", "session_message")]
    assert [c["title"] for c in of(result["updates"], parent, "tool_call")] == ["Agent: run it", "[coder] Shell: echo approved"]
    assert [p["sessionId"] for p in result["permissions"]] == [parent]
