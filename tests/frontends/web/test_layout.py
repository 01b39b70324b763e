"""The page around the conversation (headless Chromium, see test_browser.py): the session list
with dates, search, rename and delete; the phone drawer at 390 px; the dark scheme and its toggle;
axe-core's default rules at both widths, light and dark; titles the model makes; what a tab says
after `kimi web` restarted.

`KIMI_WEB_SCREENSHOTS=docs` also saves docs/web-light.png, docs/web-dark.png and docs/web-phone.png.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from kimi_acp import sessions
from tests.fakes.openai_server import FakeLLMServer, Stream, chunk
from tests.frontends.web.axe import axe_violations
from tests.frontends.web.conftest import StartWeb
from tests.frontends.web.long_session import tool_call_messages, varied_messages, write_session

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def shoot(page: Any, name: str) -> None:
    if directory := os.environ.get("KIMI_WEB_SCREENSHOTS"):
        page.screenshot(path=str(Path(directory) / f"web-{name}.png"))


def background(page: Any) -> str:
    return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))


@pytest.mark.timeout(180)
def test_sessions_drawer_theme_and_axe(
    start_web: StartWeb, browser_page: Any, work_dir: Path, unavailable: Callable[[str], NoReturn]
) -> None:
    from playwright.sync_api import expect

    checks, _ = write_session(work_dir, tool_call_messages(15))
    parser, _ = write_session(work_dir, varied_messages(30))  # the newest: opened first
    server = start_web(["text: Hello from a new session."])
    page = browser_page
    page.set_viewport_size(DESKTOP)
    page.emulate_media(color_scheme="light")
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    assert page.evaluate("state.session") == parser
    items = page.locator("#sessions li")
    expect(items).to_have_count(2)
    expect(items.locator("time")).to_have_count(2)  # each with its date
    assert all(items.locator("time").evaluate_all("ts => ts.map((t) => !!Date.parse(t.dateTime))"))

    # Search, then rename.
    page.fill("#session-search", "parser")
    expect(page.locator("#sessions li:visible")).to_have_count(1)
    expect(page.locator("#sessions li:visible")).to_contain_text("Question 1: fix the parser")
    page.fill("#session-search", "")
    expect(page.locator("#sessions li:visible")).to_have_count(2)
    other = page.locator(f'#sessions li[data-session-id="{checks}"]')
    other.get_by_role("button", name="Rename").click()
    page.fill("#sessions .rename-input", "Nightly checks")
    page.press("#sessions .rename-input", "Enter")
    expect(other).to_contain_text("Nightly checks")
    session = sessions.find(work_dir, checks)
    assert session is not None and session.state.custom_title == "Nightly checks"

    # Code blocks: coloured, and reachable by keyboard to scroll them.
    code = page.locator(".md-code pre").last
    expect(code.locator(".hl-kw").first).to_have_text("def")
    expect(code.locator(".hl-kw").nth(1)).to_have_text("return")
    expect(code.locator(".hl-str")).to_have_text("','")
    expect(code).to_have_attribute("tabindex", "0")

    # axe at 1280 px, light then dark; the system's dark scheme applies, and the toggle overrides it.
    expect(page.get_by_test_id("diff").first).to_be_visible()
    assert axe_violations(page, unavailable) == []
    shoot(page, "light")
    light = background(page)
    page.emulate_media(color_scheme="dark")
    dark = background(page)
    assert light == "rgb(247, 247, 248)" and dark == "rgb(20, 20, 24)"
    assert axe_violations(page, unavailable) == []
    shoot(page, "dark")
    page.click("#theme")  # to light, whatever the system says
    assert background(page) == light and page.evaluate("document.documentElement.dataset.theme") == "light"
    page.reload()
    expect(page.locator("#state")).to_have_text("idle")
    assert background(page) == light  # the choice is remembered
    page.click("#theme")  # back to following the system (dark)
    assert background(page) == dark and page.evaluate("document.documentElement.dataset.theme") is None

    # A phone: the list is a drawer with the other session and "New session".
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(PHONE)
    expect(page.locator("#sidebar")).to_be_hidden()
    toggle = page.get_by_role("button", name="Sessions")
    expect(toggle).to_be_visible()
    assert axe_violations(page, unavailable) == []
    shoot(page, "phone")
    toggle.click()
    expect(page.locator("#sidebar")).to_be_visible()
    assert axe_violations(page, unavailable) == []
    other.locator("a").click()
    expect(page.locator("#sidebar")).to_be_hidden()  # the drawer closes on a choice
    expect(page.locator("#session-title")).to_have_text("Nightly checks")
    assert page.evaluate("state.session") == checks
    toggle.click()
    page.get_by_role("button", name="+ New session").click()
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(page.locator("#state")).to_have_text("idle")
    fresh = page.evaluate("state.session")
    assert fresh not in (checks, parser)
    page.fill("#prompt", "Hi")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("answer").last).to_have_text("Hello from a new session.")

    # Delete (asked first): gone from the list and from disk.
    page.set_viewport_size(DESKTOP)
    expect(page.locator("#sessions li")).to_have_count(3)
    doomed = page.locator(f'#sessions li[data-session-id="{checks}"]')
    doomed.get_by_role("button", name="Delete").click()
    doomed.get_by_role("button", name="Delete", exact=True).click()
    expect(page.locator("#sessions li")).to_have_count(2)
    assert sessions.find(work_dir, checks) is None


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.mark.timeout(120)
def test_the_title_the_model_makes_shows(start_web: StartWeb, browser_page: Any, llm: FakeLLMServer) -> None:
    from playwright.sync_api import expect

    llm.enqueue(
        Stream([chunk(content="Hello!"), chunk(finish_reason="stop")]),
        Stream([chunk(content="Greeting the user"), chunk(finish_reason="stop")]),  # the title request
    )
    server = start_web([], config_keys={
        "default_model": "fake",
        "models": {"fake": {"provider": "fake", "model": "fake-model", "max_context_size": 100_000}},
        "providers": {"fake": {"type": "openai_legacy", "base_url": llm.base_url, "api_key": "sk-test"}},
    })  # fmt: skip
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    page.fill("#prompt", "hey, can you say hello to me please")
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("answer").last).to_have_text("Hello!")
    expect(page.locator("#session-title")).to_have_text("Greeting the user")
    expect(page.locator("#sessions li.current")).to_contain_text("Greeting the user")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(120)
def test_a_tab_after_a_restart_says_how_to_get_the_new_url(start_web: StartWeb, browser_page: Any) -> None:
    from playwright.sync_api import expect

    port = str(free_port())
    server = start_web(["text: hi"], "--port", port)
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    server.stop()
    restarted = start_web(["text: hi"], "--port", port)
    assert restarted.token != server.token
    expect(page.locator("#banner")).to_contain_text("kimi web was restarted")
    expect(page.locator("#banner")).to_contain_text("kimi web: open http://")
    page.reload()
    expect(page.locator("body")).to_contain_text("makes a new token each time it starts")
    expect(page.locator("body")).to_contain_text("kimi web: open http://")
