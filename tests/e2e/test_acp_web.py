"""SearchWeb and FetchURL (through Kimi's web services) in `kimi acp`: cards of kind `fetch`
titled with the query / URL, running without a permission request, showing what the model got;
every message validated against the ACP schema by the recorder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.web_services import FETCHED_MARKDOWN, FakeWebServices
from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

KEY = "sk-acp-web-secret-777"


@pytest.fixture
def services() -> Iterator[FakeWebServices]:
    with FakeWebServices() as fake:
        yield fake


def _card(updates: list[dict[str, Any]], tool_call_id: str) -> dict[str, Any]:
    card: dict[str, Any] = {}
    for update in updates:
        if update.get("toolCallId") == tool_call_id and update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            card.update({k: v for k, v in update.items() if k != "sessionUpdate"})
    return card


async def test_search_and_service_fetch_cards(share, project, services):
    scripts = [
        tool_call("s1", "SearchWeb", {"query": "install widgets"}),
        tool_call("f1", "FetchURL", {"url": "https://docs.example.com/widgets"}),
        "text: done",
    ]
    write_config(share, scripts, services={
        "moonshot_search": {"base_url": f"{services.url}/search", "api_key": KEY},
        "moonshot_fetch": {"base_url": f"{services.url}/fetch", "api_key": KEY},
    })
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "go")
        assert response.stop_reason == "end_turn"
        asked = [r["params"]["options"][1]["name"] for r in agent.recorder.requests("session/request_permission")]
        host = services.url.split("//")[1]
        assert asked == [f"Always allow `{host}` in this session", "Always allow `docs.example.com` in this session"]
        updates = agent.recorder.updates()
    starts = {u["toolCallId"].rsplit("/", 1)[-1]: u for u in of_kind(updates, "tool_call")}
    assert starts["s1"]["kind"] == "fetch" and starts["s1"]["title"] == "SearchWeb: install widgets"
    assert starts["f1"]["kind"] == "fetch" and starts["f1"]["title"] == "FetchURL: https://docs.example.com/widgets"
    search_card = _card(updates, starts["s1"]["toolCallId"])
    assert search_card["status"] == "completed"
    shown = search_card["content"][0]["content"]["text"]
    assert "Title: Installing widgets" in shown and "URL: https://blog.example.com/widgets-2" in shown
    fetch_card = _card(updates, starts["f1"]["toolCallId"])
    assert fetch_card["status"] == "completed"
    assert fetch_card["content"][0]["content"]["text"].strip() == FETCHED_MARKDOWN.strip()
    assert [r.headers["x-msh-tool-call-id"] for r in services.requests] == ["s1", "f1"]
    assert KEY not in json.dumps(updates)
