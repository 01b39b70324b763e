"""SearchWeb and FetchURL through Kimi's web services, end to end: a `kimi --wire`
configured with `[services.moonshot_search]` / `[services.moonshot_fetch]` pointing at loopback
stand-ins; the tool call id reaches the service, each asks once for the host it sends to (the
user approves), and the key never appears in what the client receives or in the session's files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.web_server import FakeWebServer
from tests.fakes.web_services import FETCHED_MARKDOWN, FakeWebServices, Reply
from tests.support.wire_client import events, scripted_config_data, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
KEY = "sk-wire-web-secret-4242"


@pytest.fixture
def services() -> Iterator[FakeWebServices]:
    with FakeWebServices() as fake:
        yield fake


@pytest.fixture
def web() -> Iterator[FakeWebServer]:
    with FakeWebServer() as server:
        yield server


def web_config(directory: Path, scripts: list[str], services: dict[str, Any]) -> Path:
    data = scripted_config_data(directory, scripts)
    data["services"] = services
    path = directory / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


async def run_turn(start_wire: Any, config: Path) -> list[dict[str, Any]]:
    """One turn, approving each network request; every one names its host for the session."""
    wire = await start_wire(config=config)
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    seen: list[dict[str, Any]] = []
    while True:
        message = await wire.recv()
        seen.append(message)
        if message.get("method") == "request":
            payload = message["params"]["payload"]
            assert payload["sender"] in ("SearchWeb", "FetchURL") and payload["session_scope"].startswith("`")
            await wire.respond(message["id"], {"request_id": payload["id"], "response": "approve"})
        elif message.get("id") == prompt_id and "method" not in message:
            break
    assert seen[-1]["result"] == {"status": "finished"}
    return seen


async def test_search_web_through_the_service(start_wire, services, tmp_path):
    scripts = [tool_call("s1", "SearchWeb", {"query": "widgets", "limit": 2}), "text: searched"]
    service = {"base_url": f"{services.url}/search", "api_key": KEY, "custom_headers": {"X-Team": "blue"}}
    seen = await run_turn(start_wire, web_config(tmp_path, scripts, {"moonshot_search": service}))
    (result,) = events(seen, "ToolResult")
    value = result["payload"]["return_value"]
    assert not value["is_error"], value
    assert value["output"].startswith("Title: Installing widgets\nDate: 2025-01-02\n")
    assert "---\n\nTitle: Widgets 2.0 released" in value["output"]
    (request,) = services.of("/search")
    assert request.body["text_query"] == "widgets" and request.body["limit"] == 2
    assert request.headers["x-msh-tool-call-id"] == "s1"
    assert request.headers["authorization"] == f"Bearer {KEY}" and request.headers["x-team"] == "blue"
    assert KEY not in json.dumps(seen)


async def test_search_web_failure_is_a_tool_error_without_the_key(start_wire, services, tmp_path, share_dir):
    services.replies["/search"] = Reply(403, json.dumps({"error": f"key {KEY} is not allowed"}).encode())
    scripts = [tool_call("s1", "SearchWeb", {"query": "widgets"}), "text: failed"]
    service = {"base_url": f"{services.url}/search", "api_key": KEY}
    seen = await run_turn(start_wire, web_config(tmp_path, scripts, {"moonshot_search": service}))
    (result,) = events(seen, "ToolResult")
    value = result["payload"]["return_value"]
    assert value["is_error"] and "Status: 403" in value["message"]
    assert KEY not in json.dumps(seen)
    stored = [p for p in share_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in stored)  # the session was recorded
    assert not [p for p in stored if KEY.encode() in p.read_bytes()]  # not in session files or logs


async def test_search_web_without_the_service_says_it_is_not_configured(start_wire, tmp_path):
    scripts = [tool_call("s1", "SearchWeb", {"query": "widgets"}), "text: no search"]
    seen = await run_turn(start_wire, web_config(tmp_path, scripts, {}))
    (result,) = events(seen, "ToolResult")
    value = result["payload"]["return_value"]
    assert value["is_error"] and value["message"].startswith("Search service is not configured.")


async def test_fetch_url_through_the_service_then_falling_back(start_wire, services, web, tmp_path):
    scripts = [
        tool_call("f1", "FetchURL", {"url": f"{web.url}/page"}),
        tool_call("f2", "FetchURL", {"url": f"{web.url}/text"}),
        "text: fetched",
    ]
    service = {"base_url": f"{services.url}/fetch", "api_key": KEY}
    config = web_config(tmp_path, scripts, {"moonshot_fetch": service})
    # The first call is answered by the service; then the service breaks and the second is fetched locally.
    services.queued["/fetch"] = [Reply(200, FETCHED_MARKDOWN.encode(), "text/markdown"), Reply(500, b"down", "text/plain")]
    seen = await run_turn(start_wire, config)
    results = {r["payload"]["tool_call_id"]: r["payload"]["return_value"] for r in events(seen, "ToolResult")}
    assert results["f1"]["output"] == FETCHED_MARKDOWN
    assert not results["f2"]["is_error"] and results["f2"]["output"].startswith("plain text")
    assert [r.headers["x-msh-tool-call-id"] for r in services.of("/fetch")] == ["f1", "f2"]
    assert [r.headers["accept"] for r in services.of("/fetch")] == ["text/markdown"] * 2
    assert web.paths == ["/text"]  # only the second was fetched from here
