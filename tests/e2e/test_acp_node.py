"""`kimi acp` driven from Node: by the official TypeScript SDK (`@agentclientprotocol/sdk`), and by
acpx, the headless ACP command line client (both pinned in tests/node/package-lock.json)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_client import REQUEST_DEFS, RESPONSE_DEFS, load_schemas
from tests.support.acp_fixtures import write_config
from tests.support.wire_client import tool_call

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
SCRIPTED_MODEL = {"provider": "scripted_provider", "model": "scripted_echo", "max_context_size": 100_000}
ACPX = NODE_DIR / "node_modules" / "acpx" / "dist" / "cli.js"


def _node_ready() -> None:
    """Make sure the pinned SDK is installed (the marker already skipped, or failed in CI, without node/npm)."""
    if not all((NODE_DIR / "node_modules" / name).exists() for name in ("@agentclientprotocol/sdk", "acpx")):
        subprocess.run(  # the lock's versions (npm ci refuses acpx's lock: see .ci/run)
            ["npm", "install", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, capture_output=True, timeout=300
        )


@pytest.mark.requires_tool("node", "npm")  # skipped without them, but a failure in CI (tests/conftest.py)
def test_typescript_sdk_client_runs_a_session(tmp_path: Path) -> None:
    _node_ready()
    share = tmp_path / "share"
    share.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    write_config(
        share,
        ["text: Hello, Node", tool_call("s1", "Shell", {"command": "echo node-ok"}), "text: ran it"],
        models={"scripted": {**SCRIPTED_MODEL, "capabilities": ["thinking"]}},  # so it has a thought level
    )
    env = {**os.environ, "KIMI_SHARE_DIR": str(share)}
    completed = subprocess.run(
        ["node", str(NODE_DIR / "client.mjs"), sys.executable, str(project)],
        cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["protocolVersion"] == 1 and result["agentName"] == "kimi-acp"
    assert result["modes"] == ["default", "ask", "yolo", "plan"]
    assert result["stopReasons"] == ["end_turn", "end_turn"]
    assert result["text"] == "Hello, Noderan it"
    assert result["toolCalls"] == [{"title": "Shell: echo node-ok", "kind": "execute"}]
    assert result["finalStatuses"][-1] == "completed"
    assert result["permissions"] == [{"title": "Shell: echo node-ok", "options": ["approve", "approve_for_session", "reject"]}]
    assert result["listed"] == [result["sessionId"]]
    assert result["modeAfterSet"] == "yolo"
    assert result["steeringSupported"] is True and result["steering"] == {"outcome": "injected"}
    assert result["userChunks"] == ["steer from node"]  # shown when the model got it, after the Shell call
    assert result["thinkingOption"] == {"id": "thinking", "type": "boolean", "currentValue": False}
    assert result["thinkingAfterSet"] is True


def _agent_messages(lines: list[str]) -> list[tuple[str, Any]]:
    """(schema definition, value) of each message the agent sent, from acpx's JSON-RPC log."""
    pending: dict[Any, str] = {}  # the client's open requests, by id
    found = []
    for line in lines:
        message = json.loads(line)
        method = message.get("method")
        if method in REQUEST_DEFS:
            found.append((REQUEST_DEFS[method], message.get("params")))
        elif method is not None and "id" in message:
            pending[message["id"]] = method
        elif message.get("id") in pending and "result" in message:
            found.append((RESPONSE_DEFS[pending.pop(message["id"])], message["result"]))
    return found


@pytest.mark.requires_tool("node", "npm")
def test_acpx_sets_the_thought_level_and_every_message_validates(tmp_path: Path) -> None:
    """acpx 0.19.1 has no `_session/steering` call (it queues a second prompt instead); it does set
    config options, and re-applies them when it resumes the session for the next prompt."""
    _node_ready()
    share, project, home = (tmp_path / name for name in ("share", "project", "home"))
    for directory in (share, project, home):
        directory.mkdir()
    write_config(share, ["text: thought it through"], models={"scripted": {**SCRIPTED_MODEL, "capabilities": ["thinking"]}})
    env = {**os.environ, "KIMI_SHARE_DIR": str(share), "HOME": str(home)}  # acpx keeps its sessions in ~/.acpx
    agent = f"{shlex.quote(sys.executable)} -m kimi_acp acp"

    def acpx(*args: str) -> list[str]:
        completed = subprocess.run(
            ["node", str(ACPX), "--ttl", "1", "--approve-all", "--format", "json", "--agent", agent, *args],
            cwd=project, env=env, capture_output=True, text=True, timeout=60, check=False,
        )
        assert completed.returncode == 0, completed.stderr
        return [line for line in completed.stdout.splitlines() if line.startswith("{")]

    acpx("sessions", "new")
    (set_line,) = acpx("set", "thinking", "on")
    assert json.loads(set_line)["value"] == "on"
    log = acpx("prompt", "think about it")
    options = [m for definition, m in _agent_messages(log) if definition == "SetSessionConfigOptionResponse"]
    assert {o["id"]: o for o in options[-1]["configOptions"]}["thinking"]["currentValue"] == "on"
    chunks = [m["update"] for d, m in _agent_messages(log) if d == "SessionNotification" and m["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(c["content"]["text"] for c in chunks) == "thought it through"
    (state,) = share.glob("sessions/*/*/state.json")
    assert json.loads(state.read_text())["thinking"] is True
    schemas = load_schemas()
    checked = _agent_messages(log)
    assert len(checked) >= 5 and not [p for d, m in checked for p in schemas.validate(d, m)]


@pytest.mark.requires_tool("node", "npm")
def test_typescript_sdk_client_sees_usage_cost_titles_status_and_archive(tmp_path: Path) -> None:
    """The unstable entry point's own calls (session/set_title, status, archive, unarchive, the
    list filter), each answer parsed by the SDK, and every line the agent wrote schema-checked."""
    _node_ready()
    share, project = tmp_path / "share", tmp_path / "project"
    share.mkdir()
    project.mkdir()
    price = {"input": 3.0, "output": 15.0, "currency": "USD"}
    write_config(
        share,
        ["text: Hello\nusage: input_other=1000 output=200 input_cache_read=3000", "text: again\nusage: input_other=10 output=1"],
        models={"scripted": {**SCRIPTED_MODEL, "price": price}},
        default_model="scripted",
    )
    completed = subprocess.run(
        ["node", str(NODE_DIR / "session_admin.mjs"), sys.executable, str(project)],
        cwd=NODE_DIR, env={**os.environ, "KIMI_SHARE_DIR": str(share)}, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    session_id = result["sessionId"]
    assert {"title": {}, "status": {}, "archive": {}}.items() <= result["capabilities"].items()
    assert result["usages"] == [
        {"totalTokens": 4200, "inputTokens": 1000, "outputTokens": 200, "cachedReadTokens": 3000, "cachedWriteTokens": 0},
        {"totalTokens": 11, "inputTokens": 10, "outputTokens": 1, "cachedReadTokens": 0, "cachedWriteTokens": 0},
    ]
    first = (1000 + 3000) * 3.0 / 1e6 + 200 * 15.0 / 1e6  # cached input is priced as input unless set
    assert [c["currency"] for c in result["costs"]] == ["USD", "USD"]
    assert result["costs"][0]["amount"] == pytest.approx(first)
    assert result["costs"][1]["amount"] == pytest.approx(first + (10 * 3.0 + 15.0) / 1e6)
    assert result["titled"] == {"title": "Node title"}
    assert result["statusOpen"] == {"status": "open"} and result["statusArchived"] == {"status": "saved"}
    assert result["unknown"] == {"code": -32002, "data": {"details": "Session not found: no-such-session", "sessionId": "no-such-session"}}
    assert result["listedDefault"] == []
    assert result["listedOnly"] == [{"id": session_id, "title": "Node title", "archived": True}]
    assert result["listedAfter"] == [{"id": session_id, "archived": False}]
    checked, problems = _validate_agent_lines(result)
    assert checked >= 15 and problems == []


def _validate_agent_lines(result: dict[str, Any]) -> tuple[int, list[str]]:
    """How many of the agent's lines (requests, notifications, results) a Node script saw were
    checked against the schema, and the problems found; errors are left to the test."""
    methods = {json.loads(line)["id"]: json.loads(line)["method"] for line in result["sent"] if '"method"' in line and '"id"' in line}
    schemas = load_schemas()
    checked, problems = 0, []
    for line in result["agentLines"]:
        message = json.loads(line)
        if "method" in message:
            definition = REQUEST_DEFS[message["method"]]
            value = message.get("params")
        elif "result" in message:
            definition = RESPONSE_DEFS[methods[message["id"]]]
            value = message["result"]
        else:
            continue
        problems += schemas.validate(definition, value)
        checked += 1
    return checked, problems


@pytest.mark.requires_tool("node", "npm")
def test_typescript_sdk_client_gets_plans_as_files_and_again_after_a_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that advertises `plan` and reads files (as JetBrains Air does): the todo list as one
    checklist, plan mode's plan as its file's URI, updated when the agent edits it; every line
    schema-checked; a session/load in a fresh process gives the same plan updates."""
    from kimi_acp import sessions
    from tests.e2e.test_acp_plans import EDITED, planning_script

    _node_ready()
    share, project = tmp_path / "share", tmp_path / "project"
    share.mkdir()
    project.mkdir()
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    session = sessions.create(project, "node-plans")
    session.state.plan_session_id, session.state.plan_slug = "feedface" * 4, "groot-storm-flash"
    session.save_state()
    plan_file = share / "plans" / "groot-storm-flash.md"
    write_config(share, planning_script(plan_file), models={"scripted": SCRIPTED_MODEL}, permissions={"always_ask": False})

    def node(*prompts: str) -> dict[str, Any]:
        completed = subprocess.run(
            ["node", str(NODE_DIR / "plans.mjs"), sys.executable, str(project), "node-plans", *prompts],
            cwd=NODE_DIR, env={**os.environ, "KIMI_SHARE_DIR": str(share)}, capture_output=True, text=True, timeout=60,
        )
        assert completed.returncode == 0, completed.stderr
        result = json.loads(completed.stdout.strip().splitlines()[-1])
        checked, problems = _validate_agent_lines(result)
        assert checked >= 5 and problems == []
        return result

    def plans(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [u for u in updates if u["sessionUpdate"] in ("plan", "plan_update", "plan_removed")]

    live = node("plan the feature first")
    assert live["stopReasons"] == ["end_turn"] and live["asked"] == ["Yes", "Approve"]
    assert plan_file.read_text() == EDITED
    shown = plans(live["updates"])
    file_plan = {"sessionUpdate": "plan_update", "plan": {"type": "file", "planId": "plan:groot-storm-flash", "uri": plan_file.as_uri()}}
    assert [u["plan"]["planId"] for u in shown] == ["todo", "plan:groot-storm-flash", "plan:groot-storm-flash", "todo"]
    assert shown[1] == shown[2] == file_plan  # written, then edited: the client reads the file again
    assert [e["status"] for e in shown[3]["plan"]["entries"]] == ["completed", "in_progress"]
    loaded = node()
    assert plans(loaded["updates"][: loaded["loaded"]]) == shown  # replayed before session/load's answer
