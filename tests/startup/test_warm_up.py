"""The first turn's costs are paid after start-up, on the event loop (warm_up.warm_up_in_background):
never beside a request in another thread, and with the tool schemas really built."""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from types import SimpleNamespace

import pytest

from kimi_acp.config import ALIAS_PROVIDER_TYPES, PUBLIC_PROVIDER_TYPES, TEST_PROVIDER_TYPES
from kimi_acp.llm import provider_module
from kimi_acp.startup import warm_up


async def test_the_steps_run_on_the_loop_after_the_delay(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(warm_up, "WARM_DELAY_S", 0.05)
    ran: list[tuple[str, threading.Thread]] = []
    steps = [lambda: ran.append(("a", threading.current_thread())), lambda: ran.append(("b", threading.current_thread()))]
    monkeypatch.setattr(warm_up, "core_warm_ups", lambda: list(steps))
    http: list[str] = []
    monkeypatch.setattr(warm_up, "_warm_http", http.append)
    resolved: list[str] = []

    def model() -> None:
        resolved.append("config read")
        return  # a model that does not talk HTTP

    warm_up.warm_up_in_background(model=model)
    await asyncio.sleep(0.01)
    assert ran == []  # not before the delay: the first requests come first
    await asyncio.sleep(0.2)
    assert ran == [("a", threading.current_thread()), ("b", threading.current_thread())]
    assert resolved == ["config read"] and http == []


async def test_a_failing_step_stops_the_warm_up_quietly(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(warm_up, "WARM_DELAY_S", 0.0)
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(warm_up, "core_warm_ups", lambda: [broken, lambda: ran.append("after")])
    warm_up.warm_up_in_background(model=lambda: None)
    await asyncio.sleep(0.1)
    assert ran == []  # nothing raised into the loop, nothing more done


@pytest.mark.parametrize("ptype", [*PUBLIC_PROVIDER_TYPES, *ALIAS_PROVIDER_TYPES, *TEST_PROVIDER_TYPES])
async def test_every_model_that_talks_http_has_its_provider_and_http_stack_warmed(ptype: str, monkeypatch: pytest.MonkeyPatch):
    """Each provider type but the test ones (openai_responses, gemini and vertexai too): its module,
    the HTTP stack and the TLS context are loaded in a thread before the first prompt needs them."""
    monkeypatch.setattr(warm_up, "WARM_DELAY_S", 0.0)
    monkeypatch.setattr(warm_up, "core_warm_ups", list)
    warmed: list[str] = []
    monkeypatch.setattr(warm_up, "_warm_http", warmed.append)
    warm_up.warm_up_in_background(SimpleNamespace(provider=SimpleNamespace(type=ptype)))
    for _ in range(50):
        await asyncio.sleep(0.01)
        if warmed:
            break
    if ptype in TEST_PROVIDER_TYPES:
        assert warmed == []
    else:
        assert warmed == [provider_module(ptype)] and importlib.import_module(warmed[0])


def test_the_http_warm_up_loads_the_provider_module(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delitem(sys.modules, "kimi_acp.llm.gemini", raising=False)
    warm_up._warm_http("kimi_acp.llm.gemini")
    assert "kimi_acp.llm.gemini" in sys.modules


def test_the_core_steps_build_every_tool_schema():
    from kimi_acp.tools import base, builtin_tools

    for step in warm_up.core_warm_ups():
        step()
    assert {type(t) for t in builtin_tools()} <= set(base._SPECS)
