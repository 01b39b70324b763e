"""The page's Undo control in headless Chromium: each run that can be undone has one; it lists
what it would restore before it acts, then takes the turn back (files and conversation), and the
runs it undid are marked — also after a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.frontends.web.conftest import StartWeb
from tests.support.wire_client import tool_call

SCRIPTS = [
    tool_call("w1", "WriteFile", {"path": "notes.md", "content": "first turn\n"}),
    "text: Wrote notes.md.",
    tool_call("s1", "Shell", {"command": "rm keep.txt && echo made > made.txt"}),
    "text: Removed keep.txt.",
]


@pytest.mark.timeout(180)
def test_the_undo_control_shows_what_it_restores_then_takes_the_turns_back(
    start_web: StartWeb, browser_page: Any, work_dir: Path
) -> None:
    from playwright.sync_api import expect

    (work_dir / "notes.md").write_text("notes before\n")
    (work_dir / "keep.txt").write_text("keep me\n")
    server = start_web(SCRIPTS, "--yolo")
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    page.fill("#prompt", "Write the notes")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("answer").last).to_have_text("Wrote notes.md.")
    page.fill("#prompt", "Tidy up")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("answer").last).to_have_text("Removed keep.txt.")
    expect(page.locator("#state")).to_have_text("idle")
    bars = page.get_by_test_id("undo-bar")
    expect(bars.locator("button.undo")).to_have_count(2)
    assert (work_dir / "made.txt").exists()

    # The first run's control: both turns, and what undoing them restores, before anything happens.
    bars.nth(0).get_by_role("button", name="Undo").click()
    panel = page.get_by_test_id("undo-panel")
    expect(panel).to_contain_text("Undo this turn and the 1 after it?")
    expect(panel.locator(".undo-list").nth(0)).to_contain_text("Restores (2)")
    expect(panel).to_contain_text("keep.txt")
    expect(panel).to_contain_text("notes.md")
    expect(panel).to_contain_text("Removes (created by the turns) (1)")
    expect(panel).to_contain_text("made.txt")
    assert (work_dir / "notes.md").read_text() == "first turn\n"  # nothing done yet
    panel.get_by_role("button", name="Cancel").click()
    expect(panel).to_have_count(0)

    # The second run's control takes back that turn only.
    bars.nth(1).get_by_role("button", name="Undo").click()
    panel = page.get_by_test_id("undo-panel")
    expect(panel).to_contain_text("Undo this turn?")
    panel.get_by_role("button", name="Undo", exact=True).click()
    expect(page.get_by_test_id("answer").last).to_contain_text("Undid 1 turn (“Tidy up”).")
    expect(page.locator("#state")).to_have_text("idle")
    assert (work_dir / "keep.txt").read_text() == "keep me\n" and not (work_dir / "made.txt").exists()
    assert (work_dir / "notes.md").read_text() == "first turn\n"
    expect(bars.nth(1)).to_have_text("Undone")
    expect(page.get_by_test_id("user-message").nth(1)).to_have_class("msg user undone")
    expect(bars.locator("button.undo")).to_have_count(1)  # the first turn still can be

    # After a reload the marks come back from the session's files.
    page.reload()
    expect(page.get_by_test_id("user-message")).to_have_count(3)
    expect(page.get_by_test_id("undo-bar").nth(1)).to_have_text("Undone")
    page.get_by_test_id("undo-bar").nth(0).get_by_role("button", name="Undo").click()
    panel = page.get_by_test_id("undo-panel")
    expect(panel).to_contain_text("Undo this turn?")
    panel.get_by_role("button", name="Undo", exact=True).click()
    expect(page.get_by_test_id("answer").last).to_contain_text("Undid 1 turn (“Write the notes”).")
    assert (work_dir / "notes.md").read_text() == "notes before\n"
