"""Long sessions in `kimi web` (headless Chromium, see test_browser.py): a generated session of
5,000 tool calls and one of 20,000 wire.jsonl records open, their last message painted soon after
navigation (timed in the page: `window.kimiTimings.painted`, ms since navigation started).

The issue's targets are 2 s and 5 s; the tests allow three times that (CI shares two cores), and
print the figure (docs/web.md has the measured ones). The hub's queue limit counts live
notifications only, so a history far above it still ends with `HistoryEnd`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.config import load_config
from kimi_acp.frontends.web import hub as hub_module
from kimi_acp.frontends.web.hub import Hub
from tests.frontends.web.conftest import StartWeb
from tests.frontends.web.long_session import LAST_ANSWER, tool_call_messages, varied_messages, write_session
from tests.support.wire_client import scripted_config

SLACK = 3  # the bound asserted is the target times this


def open_and_time(page: Any, url: str, session_id: str) -> float:
    from playwright.sync_api import expect

    page.goto(f"{url}#{session_id}")
    page.wait_for_function("() => window.kimiTimings && window.kimiTimings.painted", timeout=60_000)
    last = page.get_by_test_id("answer").last
    expect(last).to_have_text(LAST_ANSWER)
    expect(last).to_be_in_viewport()
    return float(page.evaluate("window.kimiTimings.painted"))


@pytest.mark.timeout(180)
def test_a_session_of_5000_tool_calls_opens_in_2_seconds(start_web: StartWeb, browser_page: Any, work_dir: Path) -> None:
    session_id, records = write_session(work_dir, tool_call_messages(5000))
    server = start_web([])
    painted = open_and_time(browser_page, server.url, session_id)
    print(f"\n5,000 tool calls ({records} records): last message painted {painted:.0f} ms after navigation")
    assert browser_page.locator("[data-testid=tool-card]").count() == 5000
    assert painted < 2000 * SLACK


@pytest.mark.timeout(180)
def test_a_session_of_20000_records_opens_in_5_seconds(start_web: StartWeb, browser_page: Any, work_dir: Path) -> None:
    session_id, records = write_session(work_dir, varied_messages(20_000))
    assert records >= 20_000
    server = start_web([])
    painted = open_and_time(browser_page, server.url, session_id)
    print(f"\n{records} records: last message painted {painted:.0f} ms after navigation")
    assert browser_page.locator("[data-testid=diff]").count() > 1000
    assert painted < 5000 * SLACK


async def test_the_queue_limit_does_not_count_the_history(tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A history of far more notifications than the limit is replayed whole, then HistoryEnd."""
    monkeypatch.setattr(hub_module, "QUEUE_LIMIT", 100)
    session_id, _ = write_session(work_dir, tool_call_messages(200))
    hub = Hub(work_dir, load_config(scripted_config(tmp_path, [])))
    try:
        page = hub.driver(session_id).attach()
        batches = list(page.history_batches())
        methods = [n["method"] for batch in batches for n in batch]
        assert len(methods) > 500 and methods[0] == "Reset" and methods[-1] == "HistoryEnd"
        assert methods.count("ToolDisplay") == 200 and not page.dropped
        assert all(len(batch) <= hub_module.HISTORY_BATCH for batch in batches) and len(batches) > 1
        assert list(page.history_batches()) == []  # handed out once
        await asyncio.sleep(0)
    finally:
        await hub.close()
