"""The first turn's costs are paid after start-up, on the event loop (warm_up.warm_up_in_background):
never beside a request in another thread, and with the tool schemas really built."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kimi_acp.startup import warm_up


async def test_the_steps_run_on_the_loop_after_the_delay(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(warm_up, "WARM_DELAY_S", 0.05)
    ran: list[tuple[str, threading.Thread]] = []
    steps = [lambda: ran.append(("a", threading.current_thread())), lambda: ran.append(("b", threading.current_thread()))]
    monkeypatch.setattr(warm_up, "core_warm_ups", lambda: list(steps))
    http: list[str] = []
    monkeypatch.setattr(warm_up, "_warm_http", lambda: http.append("http"))
    resolved: list[str] = []

    def model() -> None:
        resolved.append("config read")
        return None  # a model that does not talk HTTP

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


def test_the_core_steps_build_every_tool_schema():
    from kimi_acp.tools import base, builtin_tools

    warm_up.warm_up_core()
    assert {type(t) for t in builtin_tools()} <= set(base._SPECS)
