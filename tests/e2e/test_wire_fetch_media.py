"""FetchURL and ReadMediaFile through both servers (in this process): a `kimi --wire` turn fetching a loopback
page (no approval asked, Markdown back); in `kimi acp`, the FetchURL card's kind `fetch` and a
ReadMediaFile card showing the image (messages validated against the ACP schema)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.web_server import PNG_BYTES, FakeWebServer
from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import events, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


@pytest.fixture
def web() -> Iterator[FakeWebServer]:
    with FakeWebServer() as server:
        yield server


async def test_wire_fetch_url_returns_the_page_as_markdown(start_wire, web):
    wire = await start_wire([tool_call("f1", "FetchURL", {"url": f"{web.url}/page"}), "text: fetched"])
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "fetch it"})
    request, _ = await wire.next_request()  # FetchURL asks for the host it sends to
    payload = request["params"]["payload"]
    assert payload["sender"] == "FetchURL" and payload["session_scope"] == f"`{web.url.split('//')[1]}`"
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    (result,) = events(seen, "ToolResult")
    value = result["payload"]["return_value"]
    assert not value["is_error"]
    assert "# Main heading" in value["output"] and "do-not-show" not in value["output"]
    assert web.paths == ["/page"]


def _card(updates: list[dict[str, Any]], tool_call_id: str) -> dict[str, Any]:
    card: dict[str, Any] = {}
    for update in updates:
        if update.get("toolCallId") == tool_call_id and update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            card.update({k: v for k, v in update.items() if k != "sessionUpdate"})
    return card


async def test_acp_fetch_card_kind_and_media_card_image(share, project, web):
    (project / "shot.png").write_bytes(PNG_BYTES)
    scripts = [
        tool_call("f1", "FetchURL", {"url": f"{web.url}/text"}),
        tool_call("m1", "ReadMediaFile", {"path": "shot.png"}),
        "text: done",
    ]
    scripted = {"provider": "scripted_provider", "model": "scripted_echo", "max_context_size": 100_000,
                "capabilities": ["image_in"]}
    write_config(share, scripts, models={"scripted": scripted})
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "go")
        assert response.stop_reason == "end_turn"
        (asked,) = agent.recorder.requests("session/request_permission")  # FetchURL, for its host
        assert asked["params"]["toolCall"]["title"].startswith("FetchURL")
        updates = agent.recorder.updates()
        (start,) = [u for u in of_kind(updates, "tool_call") if u["toolCallId"].endswith("f1")]
        assert start["kind"] == "fetch" and start["title"] == f"FetchURL: {web.url}/text"
        fetch_card = _card(updates, start["toolCallId"])
        assert fetch_card["status"] == "completed"
        assert "plain text" in fetch_card["content"][0]["content"]["text"]
        (media_start,) = [u for u in of_kind(updates, "tool_call") if u["toolCallId"].endswith("m1")]
        assert media_start["kind"] == "read"
        media_card = _card(updates, media_start["toolCallId"])
        assert media_card["status"] == "completed"
        assert media_card["content"][0]["content"] == {
            "type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG_BYTES).decode()
        }
