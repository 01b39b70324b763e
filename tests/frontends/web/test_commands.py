"""Commands and failures in `kimi web` (headless Chromium, see test_browser.py): a cut output says
so; a running command's output shows as it comes and stays after Cancel (Esc), also after a
reload; Enter while the agent works says it steers; a failed turn's error survives a reload; a
send that fails keeps the typed prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.frontends.web.conftest import StartWeb
from tests.support.wire_client import tool_call

LIVE = "for i in 1 2 3; do echo live-$i; sleep 0.2; done; sleep 60"


def approve_last(page: Any) -> None:
    page.get_by_test_id("approval").last.get_by_role("button", name="Approve", exact=True).click()


@pytest.mark.timeout(180)
def test_outputs_cancel_steer_and_errors(start_web: StartWeb, browser_page: Any, work_dir: Path) -> None:
    from playwright.sync_api import expect

    server = start_web([
        tool_call("s1", "Shell", {"command": "seq 1 100000"}),
        "text: Printed.",
        tool_call("s2", "Shell", {"command": LIVE}),
        "error: 400 the model refused the request",
    ])  # fmt: skip
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    expect(page.locator("#send")).to_have_text("Send")

    # A long output is cut by the tool: the card says so.
    page.fill("#prompt", "Count")
    page.press("#prompt", "Enter")
    approve_last(page)
    expect(page.get_by_test_id("answer").last).to_have_text("Printed.")
    card = page.locator('.tool[data-tool-call-id="s1"]')
    expect(card.get_by_test_id("truncated")).to_contain_text("Output was truncated.")
    expect(card.locator(".tool-output")).to_contain_text("10000\n")

    # A running command: its output as it comes; Enter now steers, and says so; Esc cancels.
    page.fill("#prompt", "Run it")
    page.press("#prompt", "Enter")
    approve_last(page)
    live = page.locator('.tool[data-tool-call-id="s2"] .live-output')
    expect(live).to_contain_text("live-3")
    expect(page.locator("#state")).to_have_text("working")
    expect(page.locator("#send")).to_have_text("Steer")
    expect(page.locator("#composer-hint")).to_contain_text("Enter steers it")
    page.fill("#prompt", "also check the logs")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("steer-note")).to_contain_text("also check the logs")
    expect(page.locator("#prompt")).to_have_value("")
    page.locator("#transcript").click()  # Esc works wherever the focus is
    page.keyboard.press("Escape")
    expect(page.locator("#state")).to_have_text("idle")
    expect(page.locator('.tool[data-tool-call-id="s2"] .tool-output')).to_contain_text("cancelled")
    expect(live).to_contain_text("live-1\nlive-2\nlive-3")  # kept

    # A failed turn: its error is shown, and again after a reload.
    page.fill("#prompt", "Fail now")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("error").last).to_contain_text("the model refused the request")
    page.reload()
    expect(page.get_by_test_id("user-message")).to_have_count(3)
    expect(page.get_by_test_id("error")).to_have_count(1)
    expect(page.get_by_test_id("error")).to_contain_text("the model refused the request")
    after_fail = page.get_by_test_id("error").evaluate("e => e.previousElementSibling.previousElementSibling.textContent")
    assert after_fail == "Fail now"  # in its place: after the turn that failed
    expect(page.locator('.tool[data-tool-call-id="s2"] .live-output')).to_contain_text("live-3")
    expect(page.locator('.tool[data-tool-call-id="s1"]').get_by_test_id("truncated")).to_be_visible()

    # The server is gone: a send fails, the text stays in the box.
    server.stop()
    page.fill("#prompt", "my carefully typed prompt")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("error").last).to_contain_text("Not sent")
    expect(page.locator("#prompt")).to_have_value("my carefully typed prompt")
    expect(page.locator("#banner")).to_contain_text("not running")
