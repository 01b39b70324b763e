"""`kimi acp`: the tokens each prompt used (`PromptResponse.usage`, subagents included) and what the
session cost (`usage_update.cost`: the provider's own figure, else the model's `price` from
config.toml), on the ACP Python SDK client, every message schema-checked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeLLMServer, Stream, chunk, text_reply, usage_chunk
from tests.support.acp_fixtures import acp_env, fake_model_config, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

REPORT = ("Found it. " + "The project has a single file named a.txt that greets the reader. " * 4).strip()
PRICE = {"input": 2.0, "output": 10.0, "cache_read": 0.5, "currency": "EUR"}  # per million tokens


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def raw_prompt_results(agent: Any) -> list[dict[str, Any]]:
    """The results of every session/prompt, as the agent sent them."""
    prompts = {m["id"] for m in agent.recorder.outgoing if m.get("method") == "session/prompt"}
    return [m["result"] for m in agent.recorder.incoming if m.get("id") in prompts and "result" in m]


async def two_prompts(share: Path, project: Path) -> tuple[str, list[Any]]:
    """A new session, two prompts; its id and the cost each usage_update said."""
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await agent.prompt(session_id, "one")
        await agent.prompt(session_id, "two")
        return session_id, [u["cost"] for u in of_kind(agent.recorder.updates(session_id), "usage_update")]


def stored_cost(share: Path, session_id: str) -> Any:
    return json.loads(next(share.glob(f"sessions/*/{session_id}/state.json")).read_text()).get("cost")


async def test_each_prompt_reports_the_tokens_its_requests_used_subagents_included(share, project):
    write_config(share, [
        tool_call("sub", "Agent", {"description": "look around", "prompt": "Describe it.", "subagent_type": "explore"})
        + "\nusage: input_other=100 output=20 input_cache_read=400",
        f"text: {REPORT}\nusage: input_other=30 output=60",  # the subagent's reply
        "text: All done.\nusage: input_other=50 output=5 input_cache_read=500 input_cache_creation=7",
        "text: again\nusage: input_other=1 output=2",
    ])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        first = await agent.prompt(session_id, "what is here?")
        second = await agent.prompt(session_id, "once more")
        third = await agent.prompt(session_id, "/help")  # no model request at all
    assert first.stop_reason == "end_turn"
    assert first.usage.model_dump(by_alias=True, exclude_none=True) == {
        "inputTokens": 180, "outputTokens": 85, "cachedReadTokens": 900, "cachedWriteTokens": 7,
        "totalTokens": 180 + 85 + 900 + 7,
    }
    assert (second.usage.input_tokens, second.usage.output_tokens, second.usage.total_tokens) == (1, 2, 3)
    assert third.usage.total_tokens == 0
    assert [r["usage"]["totalTokens"] for r in raw_prompt_results(agent)] == [1172, 3, 0]
    assert all("thoughtTokens" not in r["usage"] for r in raw_prompt_results(agent))
    updates = of_kind(agent.recorder.updates(session_id), "usage_update")
    assert updates and all("cost" not in u for u in updates)  # no price, no provider figure: no cost
    assert stored_cost(share, session_id) is None


async def test_a_cancelled_prompt_still_reports_its_usage(share, project):
    write_config(share, [tool_call("c1", "Shell", {"command": "sleep 30"}) + "\nusage: input_other=9 output=4"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "cancelled"
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        running = asyncio.create_task(agent.prompt(session_id, "run it"))
        await asyncio.wait_for(agent.client.permission_event.wait(), 5)
        await agent.conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(running, 5)
    assert response.stop_reason == "cancelled"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (9, 4, 13)


async def test_the_cost_follows_the_models_price_and_survives_a_restart(share, project):
    write_config(
        share,
        ["text: one\nusage: input_other=1000 output=100 input_cache_read=2000", "text: two\nusage: input_other=500 output=0"],
        models={"scripted": {"provider": "scripted_provider", "model": "scripted_echo", "max_context_size": 100_000, "price": PRICE}},
        default_model="scripted",
    )
    first_cost = (1000 * 2.0 + 2000 * 0.5 + 100 * 10.0) / 1e6
    session_id, costs = await two_prompts(share, project)
    total = first_cost + 500 * 2.0 / 1e6
    assert costs == [{"amount": pytest.approx(first_cost), "currency": "EUR"}, {"amount": pytest.approx(total), "currency": "EUR"}]
    assert stored_cost(share, session_id) == {"EUR": pytest.approx(total)}
    async with serve_acp(acp_env(share)) as agent:  # a new process: session/load shows the cost so far
        await agent.initialize()
        await agent.conn.load_session(cwd=str(project), session_id=session_id, mcp_servers=[])
        (replayed,) = of_kind(agent.recorder.updates(session_id), "usage_update")
    assert replayed["cost"] == {"amount": pytest.approx(total), "currency": "EUR"} and replayed["used"] == 500


def reply_with_cost(text: str, cost: float) -> Stream:
    """An OpenRouter-style reply: its usage says what the request cost."""
    final = usage_chunk(100, 10)
    final["usage"]["cost"] = cost
    return Stream([chunk(content=text), chunk(finish_reason="stop"), final])


async def test_a_cost_the_provider_reports_wins_over_the_config_price(share, project, server):
    server.enqueue(reply_with_cost("priced by the server", 0.0125), text_reply("no figure", usage=(1000, 0)))
    fake_model_config(share, server, model={"price": {"input": 1.0, "output": 1.0, "currency": "USD"}})
    _, costs = await two_prompts(share, project)
    assert costs == [{"amount": 0.0125, "currency": "USD"}, {"amount": pytest.approx(0.0125 + 1000 / 1e6), "currency": "USD"}]
