"""`kimi web` over HTTP, without a browser: the token guard, the event stream, the controls."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from kimi_acp.sessions import find
from kimi_acp.simple_stream import EVENT_CLASSES, rpc_to_event
from tests.frontends.web.conftest import StartWeb, WebServer
from tests.support.wire_client import scripted_config, tool_call

TIMEOUT = httpx.Timeout(30.0)


def events(server: WebServer, session_id: str) -> Iterator[dict[str, Any]]:
    """The page's notifications of a session, one per SSE `data:` line, or a JSON-RPC batch of
    them (a replayed history) flattened (30 s read limit)."""
    url = f"{server.base}/api/sessions/{session_id}/events"
    with httpx.stream("GET", url, params={"token": server.token}, timeout=TIMEOUT) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                data = json.loads(line[len("data: "):])
                yield from data if isinstance(data, list) else [data]


def until(stream: Iterator[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    seen = []
    for message in stream:
        seen.append(message)
        if message["method"] == method:
            return seen
    raise AssertionError(f"the stream ended before {method}: {[m['method'] for m in seen]}")


def post(server: WebServer, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return httpx.post(server.base + path, json=body, headers=server.headers, timeout=TIMEOUT, **kwargs)


def new_session(server: WebServer) -> str:
    response = post(server, "/api/sessions", {})
    assert response.status_code == 201
    return response.json()["id"]


def test_every_route_refuses_a_request_without_the_right_token(start_web: StartWeb) -> None:
    server = start_web(["text: hi"])
    session_id = new_session(server)
    routes = [
        ("GET", "/"), ("GET", "/static/app.js"), ("GET", "/api/sessions"), ("POST", "/api/sessions"),
        ("GET", f"/api/sessions/{session_id}/events"), ("POST", f"/api/sessions/{session_id}/prompt"),
        ("POST", f"/api/sessions/{session_id}/cancel"), ("POST", f"/api/sessions/{session_id}/rename"),
        ("POST", f"/api/sessions/{session_id}/delete"), ("GET", "/static/cards.js"), ("GET", "/nope"),
    ]  # fmt: skip
    # the token with its last character changed (a token may end in "x" already)
    almost = server.token[:-1] + ("y" if server.token.endswith("x") else "x")
    for method, path in routes:
        bare = httpx.request(method, server.base + path, json={"text": "x"}, timeout=TIMEOUT)
        assert bare.status_code == 401, (method, path)
        assert "token" in bare.text
        wrong = httpx.request(method, server.base + path, params={"token": almost}, timeout=TIMEOUT)
        assert wrong.status_code == 403, (method, path)
        wrong_header = httpx.request(method, server.base + path, headers={"X-Kimi-Token": "nope"}, timeout=TIMEOUT)
        assert wrong_header.status_code == 403, (method, path)
    page = httpx.get(server.url, timeout=TIMEOUT)
    assert page.status_code == 200 and "<title>kimi web</title>" in page.text
    # `/` without the token: the page that brings back a reloaded tab's token (test_browser.py),
    # holding no token, its one inline script allowed by its hash and nothing else
    bare_page = httpx.get(server.base + "/", timeout=TIMEOUT)
    assert bare_page.status_code == 401 and server.token not in bare_page.text
    policy = bare_page.headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; script-src 'sha256-") and "'self'" not in policy
    assert page.headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert server.url.startswith("http://127.0.0.1:")  # loopback by default


def test_a_prompt_streams_the_simple_stream_and_the_shell_approval(start_web: StartWeb) -> None:
    server = start_web([
        "think: let me run it\n" + tool_call("s1", "Shell", {"command": "echo from-the-shell"}),
        "text: The shell said from-the-shell.",
    ])  # fmt: skip
    session_id = new_session(server)
    stream = events(server, session_id)
    assert [m["method"] for m in until(stream, "HistoryEnd")] == ["Reset", "HistoryEnd"]
    assert post(server, f"/api/sessions/{session_id}/prompt", {"text": "run it"}).status_code == 200
    busy = post(server, f"/api/sessions/{session_id}/prompt", {"text": "again"})
    assert busy.status_code == 409 and "already running" in busy.json()["error"]
    before = until(stream, "ApprovalRequest")
    approval = before[-1]["params"]
    assert approval["sender"] == "Shell" and approval["display"][0]["command"] == "echo from-the-shell"
    wrong = post(server, f"/api/sessions/{session_id}/approval", {"request_id": "nope", "response": "approve"})
    assert wrong.status_code == 404
    answer = {"request_id": approval["id"], "response": "approve"}
    assert post(server, f"/api/sessions/{session_id}/approval", answer).status_code == 200
    after = until(stream, "RunEnd")
    simple = [m for m in before + after if m["method"] in EVENT_CLASSES]
    assert [m["method"] for m in simple] == [
        "RunBegin", "TurnBegin", "ReasoningDelta", "ToolCallBegin", "StepEnd", "ToolResult", "TurnEnd",
        "TurnBegin", "TextDelta", "StepEnd", "TurnEnd", "RunEnd",
    ]  # fmt: skip
    decoded = [rpc_to_event(m) for m in simple]  # each one is the note's notification, exactly
    assert decoded[5].content.strip() == "from-the-shell" and decoded[-1].content == "The shell said from-the-shell."
    assert any(m["method"] == "RequestResolved" and m["params"]["response"] == "approve" for m in after)
    # A second page (a reload) gets the same run back from the session's history.
    replay = until(events(server, session_id), "HistoryEnd")
    replayed = [m["method"] for m in replay if m["method"] in EVENT_CLASSES]
    assert replayed[0] == "RunBegin" and replayed[-1] == "RunEnd" and "ToolResult" in replayed
    assert "ApprovalRequest" not in [m["method"] for m in replay]  # history is not answerable
    listed = httpx.get(server.base + "/api/sessions", headers=server.headers, timeout=TIMEOUT).json()
    assert listed["sessions"][0]["id"] == session_id and listed["sessions"][0]["title"] == "run it"


def test_cancel_steer_plan_mode_model_and_bad_input(start_web: StartWeb) -> None:
    server = start_web([tool_call("s1", "Shell", {"command": "sleep 60"})], "--yolo")
    session_id = new_session(server)
    base = f"/api/sessions/{session_id}"
    stream = events(server, session_id)
    until(stream, "HistoryEnd")
    assert post(server, base + "/cancel", {}).status_code == 409  # nothing running
    assert post(server, base + "/steer", {"text": "x"}).status_code == 409
    assert post(server, base + "/prompt", {"text": "sleep"}).status_code == 200
    until(stream, "ToolCallBegin")
    assert post(server, base + "/steer", {"text": "hurry"}).status_code == 200
    assert post(server, base + "/cancel", {}).status_code == 200
    end = until(stream, "RunEnd")
    result = next(m for m in end if m["method"] == "ToolResult")
    assert "cancelled" in result["params"]["content"]
    plan = post(server, base + "/plan_mode", {"enabled": True})
    assert plan.status_code == 200 and plan.json()["status"]["plan_mode"] is True
    model = post(server, base + "/model", {"alias": "scripted"})
    assert model.status_code == 200 and model.json()["status"]["model"] == "scripted"
    assert post(server, base + "/model", {"alias": "nope"}).status_code == 400
    assert post(server, base + "/prompt", {"text": 5}).status_code == 400
    assert post(server, base + "/prompt", {"text": "  "}).status_code == 400
    raw = httpx.post(server.base + base + "/prompt", content=b"{not json", headers=server.headers, timeout=TIMEOUT)
    assert raw.status_code == 400 and "JSON" in raw.json()["error"]
    assert post(server, "/api/sessions/../../etc/prompt", {"text": "x"}).status_code in (404, 405)
    missing = post(server, "/api/sessions/00000000-0000-0000-0000-000000000000/prompt", {"text": "x"})
    assert missing.status_code == 404 and "no session" in missing.json()["error"]


def test_without_the_web_extra_kimi_web_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['starlette'] = None; sys.argv = ['kimi', 'web']\n"
        "from kimi_acp.cli.main import main; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "kimi: error: kimi web needs the web extra: pip install 'kimi-acp[web]' (starlette is not installed)"
    ]


def test_a_busy_port_is_a_one_line_error(start_web: StartWeb) -> None:
    server = start_web(["text: hi"])
    port = server.base.rsplit(":", 1)[1]
    done = subprocess.run([sys.executable, "-m", "kimi_acp", "web", "--port", port], capture_output=True, text=True,
                          timeout=30)  # fmt: skip
    assert done.returncode == 2 and "cannot listen on 127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_page_opened_while_an_approval_waits_is_offered_it(start_web: StartWeb) -> None:
    server = start_web([tool_call("s1", "Shell", {"command": "echo late"}), "text: ok"])
    session_id = new_session(server)
    first = events(server, session_id)
    until(first, "HistoryEnd")
    assert post(server, f"/api/sessions/{session_id}/prompt", {"text": "go"}).status_code == 200
    waiting = until(first, "ApprovalRequest")[-1]["params"]
    second = until(events(server, session_id), "HistoryEnd")  # a reload, mid-turn
    offered = [m["params"]["id"] for m in second if m["method"] == "ApprovalRequest"]
    assert offered == [waiting["id"]]
    assert [m["method"] for m in second if m["method"] in EVENT_CLASSES][:3] == ["RunBegin", "TurnBegin", "ToolCallBegin"]
    answer = {"request_id": waiting["id"], "response": "reject", "feedback": "not now"}
    assert post(server, f"/api/sessions/{session_id}/approval", answer).status_code == 200
    end = until(first, "RunEnd")
    assert "not now" in next(m for m in end if m["method"] == "ToolResult")["params"]["content"]
    again = post(server, f"/api/sessions/{session_id}/approval", answer)
    assert again.status_code == 404 and "no longer waiting" in again.json()["error"]


REVIEWER = "agent:\n  extend: default\n  system_prompt_path: ./system.md\n  exclude_tools: [kimi_cli.tools.shell:Shell]\n"


def test_the_configs_agent_file_chooses_the_tools_and_prompt(start_web: StartWeb, tmp_path: Path) -> None:
    conf = tmp_path / "cfg0"  # the folder start_web writes the config to; agent_file is relative to it
    conf.mkdir()
    (conf / "system.md").write_text("You are the web reviewer of ${KIMI_WORK_DIR}.")
    (conf / "reviewer.yaml").write_text(REVIEWER)
    server = start_web([tool_call("s1", "Shell", {"command": "echo hi"}), "text: ok"], config_keys={"agent_file": "reviewer.yaml"})
    session_id = new_session(server)
    stream = events(server, session_id)
    until(stream, "HistoryEnd")
    assert post(server, f"/api/sessions/{session_id}/prompt", {"text": "run it"}).status_code == 200
    end = until(stream, "RunEnd")
    assert "ApprovalRequest" not in [m["method"] for m in end]  # no Shell to approve
    result = next(m for m in end if m["method"] == "ToolResult")["params"]
    assert result["name"] == "Shell" and "Tool `Shell` not found" in result["content"]
    session = find(server.work_dir, session_id)
    assert session is not None
    system = json.loads(session.context_file.read_text().splitlines()[0])
    assert system["content"] == f"You are the web reviewer of {server.work_dir}."

    # an agent file that breaks while the server runs: a new session is refused with the reason
    (conf / "reviewer.yaml").write_text("agent:\n  extend: default\n  tools: [nowhere:Teleport]\n")
    before = {p.name for p in session.dir.parent.iterdir()}
    refused = post(server, "/api/sessions", {})
    assert refused.status_code == 500
    assert refused.json()["error"].startswith("Invalid configuration: agent_file: ") and "Teleport" in refused.json()["error"]
    assert {p.name for p in session.dir.parent.iterdir()} == before  # no empty session left behind


def test_a_bad_agent_file_is_a_one_line_startup_error(tmp_path: Path, work_dir: Path) -> None:
    (tmp_path / "agent.yaml").write_text("agent:\n  extend: default\n  tools: [nowhere:Teleport]\n")
    config = scripted_config(tmp_path, [])
    config.write_text(json.dumps({**json.loads(config.read_text()), "agent_file": "agent.yaml"}))
    argv = [sys.executable, "-m", "kimi_acp", "web", "--work-dir", str(work_dir), "--config-file", str(config)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("kimi: error: agent_file: agent file ") and "unknown tool 'Teleport'" in line


def test_the_always_ask_box_makes_a_read_only_command_ask(start_web: StartWeb) -> None:
    """With a real config's default, `ls` runs at once and its result says why; ticking Always ask
    (kept in the session) makes the same command ask."""
    server = start_web(
        [tool_call("s1", "Shell", {"command": "ls"}), "text: one", tool_call("s2", "Shell", {"command": "ls"}), "text: two"],
        config_keys={"permissions": {"always_ask": False}},
    )
    session_id = new_session(server)
    base = f"/api/sessions/{session_id}"
    stream = events(server, session_id)
    until(stream, "HistoryEnd")
    assert post(server, base + "/prompt", {"text": "list"}).status_code == 200
    first = until(stream, "RunEnd")
    assert "ApprovalRequest" not in [m["method"] for m in first]
    shown = [m for m in first if m["method"] == "ToolDisplay"]
    assert any(b["type"] == "kimi/read_only" for m in shown for b in m["params"]["display"]), shown
    ticked = post(server, base + "/always_ask", {"enabled": True})
    assert ticked.status_code == 200 and ticked.json()["status"]["always_ask"] is True
    assert post(server, base + "/prompt", {"text": "again"}).status_code == 200
    asked = until(stream, "ApprovalRequest")[-1]["params"]
    assert asked["description"] == "Run command `ls`"
    assert post(server, base + "/approval", {"request_id": asked["id"], "response": "approve"}).status_code == 200
    until(stream, "RunEnd")
    assert find(server.work_dir, session_id).state.always_ask is True  # type: ignore[union-attr]
