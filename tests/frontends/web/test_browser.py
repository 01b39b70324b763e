"""`kimi web` in headless Chromium (Debian's `chromium`, driven by Playwright through the system
browser, never a downloaded one): prompt, streamed answer, approval, cancel, reload, token.

Without the browser or Playwright the test is skipped on a developer's machine and fails in CI
(`.ci/run` installs both). `KIMI_WEB_SCREENSHOT=path.png` also saves the page (docs/web.png).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.frontends.web.conftest import StartWeb
from tests.support.wire_client import tool_call

SCRIPTS = [
    "text: Hello from the scripted model!",
    "think: The user wants the files listed; Shell needs their approval.\n"
    + tool_call("sh1", "Shell", {"command": "echo approved-output && ls"}),
    "text: The shell printed **approved-output**.\n"
    + tool_call("w1", "WriteFile", {"path": "notes.md", "content": "# Notes\n\nWritten from the browser.\n"}),
    "text: Wrote notes.md.",
    tool_call("sh2", "Shell", {"command": "sleep 60"}),
]


@pytest.mark.timeout(180)
def test_the_page_drives_a_session(start_web: StartWeb, browser_page: Any, work_dir: Path) -> None:
    from playwright.sync_api import expect

    (work_dir / "README.md").write_text("demo\n", encoding="utf-8")
    server = start_web(SCRIPTS)
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    # The token leaves the address (history, screenshots) once read; the tab keeps it for a reload.
    assert "token" not in page.url and page.url.startswith(server.base + "/")
    assert page.evaluate("sessionStorage.getItem('kimi-web-token')") == server.token

    # A prompt, and its streamed answer.
    page.fill("#prompt", "Say hello")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("answer").first).to_have_text("Hello from the scripted model!")
    expect(page.locator("#sessions li")).to_have_count(1)
    expect(page.locator("#sessions li").first).to_contain_text("Say hello")

    # A Shell call that needs approval: approve it and see its output in the tool card.
    page.fill("#prompt", "List the files")
    page.click("#send")
    approval = page.get_by_test_id("approval").last
    expect(approval).to_contain_text("echo approved-output")
    approval.get_by_role("button", name="Approve", exact=True).click()
    shell = page.locator('[data-tool-call-id="sh1"]')
    expect(shell.locator(".tool-output")).to_contain_text("approved-output")
    expect(shell.locator(".tool-output")).to_contain_text("README.md")
    expect(page.locator("[data-testid=answer] strong")).to_have_text("approved-output")  # Markdown (test_markdown.py has the rest)
    write = page.get_by_test_id("approval").last
    expect(write).to_contain_text("notes.md")
    expect(write.get_by_test_id("diff")).to_contain_text("Written from the browser.")
    if target := os.environ.get("KIMI_WEB_SCREENSHOT"):
        page.screenshot(path=target)
    write.get_by_role("button", name="Always allow edits of files in the workspace in this session").click()
    expect(page.get_by_test_id("answer").last).to_have_text("Wrote notes.md.")
    expect(page.locator("#state")).to_have_text("idle")
    assert (work_dir / "notes.md").read_text(encoding="utf-8").endswith("Written from the browser.\n")

    # A long Shell call: approve it, then cancel the turn.
    page.fill("#prompt", "Wait a minute")
    page.press("#prompt", "Enter")
    page.get_by_test_id("approval").last.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator('[data-tool-call-id="sh2"]')).to_have_class("tool running")
    expect(page.locator("#state")).to_have_text("working")
    page.click("#cancel")
    expect(page.locator('[data-tool-call-id="sh2"] .tool-output')).to_contain_text("cancelled")
    expect(page.locator("#state")).to_have_text("idle")

    # Reload (the address has no token now): the whole history is back, from the session's files.
    assert "token" not in page.url
    page.reload()
    expect(page.get_by_test_id("user-message")).to_have_count(3)
    expect(page.get_by_test_id("user-message").nth(1)).to_have_text("List the files")
    expect(page.get_by_test_id("answer").first).to_have_text("Hello from the scripted model!")
    expect(page.locator('[data-tool-call-id="sh1"] .tool-output')).to_contain_text("approved-output")
    expect(page.locator('[data-tool-call-id="sh2"] .tool-output')).to_contain_text("cancelled")
    expect(page.get_by_test_id("approval")).to_have_count(0)  # history is not answerable
    assert "token" not in page.url

    # Without the token, nothing: not the page, not the API.
    assert page.request.get(server.base + "/").status == 401
    assert page.request.post(server.base + "/api/sessions", data="{}").status == 401
    bare = page.context.browser.new_page()
    bare.goto(server.base + "/")
    expect(bare.locator("body")).to_contain_text("needs the token")
