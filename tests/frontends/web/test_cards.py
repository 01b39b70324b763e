"""Tool cards in `kimi web` (headless Chromium, see test_browser.py): what a person reads, never
raw JSON. The plan is shown above the choices when the user approves it; todo statuses look
different; a question, its answer, a subagent's steps and its answer are rendered as text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from kimi_acp.core.plan_file import plans_dir
from tests.frontends.web.conftest import StartWeb
from tests.support.wire_client import tool_call

RAW_JSON = re.compile(r'[{\[]\s*"|"\s*:\s*["{\[\d]')  # `{"`, `["`, `"key": ` ...
REPORT = ("I looked at the project. " + "It has one file, a.txt, which says hello. " * 6).strip()  # ≥ 200 chars: no follow-up
PLAN = "# Plan: greet\n\n1. Read `a.txt`.\n2. Say **hello**.\n"
TODOS = [{"title": "Read the file", "status": "done"}, {"title": "Write the greeting", "status": "in_progress"},
         {"title": "Ask for review", "status": "pending"}]  # fmt: skip
QUESTION = {"question": "Which greeting should I use?", "header": "Greeting",
            "options": [{"label": "Hello", "description": "plain"}, {"label": "Hi there"}]}  # fmt: skip


def assert_no_raw_json(locator: Any) -> None:
    text = locator.inner_text()
    assert not RAW_JSON.search(text), text


@pytest.mark.timeout(180)
def test_cards_show_plans_todos_questions_and_subagents_as_text(start_web: StartWeb, browser_page: Any, work_dir: Path) -> None:
    from playwright.sync_api import expect

    (work_dir / "a.txt").write_text("hello\n", encoding="utf-8")
    server = start_web([
        tool_call("p1", "ExitPlanMode", {}),
        "text: The plan was approved.",
        tool_call("t1", "SetTodoList", {"todos": TODOS}),
        tool_call("q1", "AskUserQuestion", {"questions": [QUESTION]}),
        tool_call("a1", "Agent", {"description": "look around", "prompt": "Describe the project."}),
        tool_call("c1", "Glob", {"pattern": "*.txt"}),  # the subagent's step
        f"text: {REPORT}",  # the subagent's answer
        "text: All done.",
    ])  # fmt: skip
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")

    # Plan mode: the model wrote its plan (here, the test does) and asks for approval.
    page.check("#plan-mode")
    session_id = page.evaluate("state.session")
    expect(page.locator("#plan-mode")).to_be_checked()
    session = sessions.find(work_dir, session_id)
    assert session is not None and session.state.plan_slug
    plans_dir().mkdir(parents=True, exist_ok=True)
    (plans_dir() / f"{session.state.plan_slug}.md").write_text(PLAN, encoding="utf-8")
    page.fill("#prompt", "Make a plan")
    page.press("#prompt", "Enter")
    question = page.get_by_test_id("question").last
    expect(question).to_contain_text("Approve this plan")
    plan = page.locator('.tool[data-tool-call-id="p1"]').get_by_test_id("plan")
    expect(plan.locator("h1")).to_have_text("Plan: greet")
    expect(plan.locator(".plan-text strong")).to_have_text("hello")
    plan_box, question_box = plan.bounding_box(), question.bounding_box()
    assert plan_box and question_box and plan_box["y"] + plan_box["height"] <= question_box["y"] + 1  # above the choices
    question.get_by_label("Approve").first.check()
    question.get_by_role("button", name="Answer").click()
    expect(page.get_by_test_id("answer").last).to_have_text("The plan was approved.")
    expect(plan).to_be_visible()  # still there after the answer

    # A todo list, a question and a subagent.
    page.fill("#prompt", "Greet me")
    page.press("#prompt", "Enter")
    question = page.get_by_test_id("question").last
    expect(question).to_contain_text("Which greeting should I use?")
    question.get_by_label("Hi there").check()
    question.get_by_role("button", name="Answer").click()
    expect(page.get_by_test_id("answer").last).to_have_text("All done.")

    todo = page.locator('.tool[data-tool-call-id="t1"]')
    expect(todo.locator(".tool-head .tool-args")).to_have_text("3 items: 1 done, 1 in progress")
    items = todo.locator(".tool-display [data-testid=todo] li")
    expect(items).to_have_count(3)
    assert items.evaluate_all("lis => lis.map((li) => li.dataset.status)") == ["done", "in_progress", "pending"]
    looks = items.evaluate_all(
        "lis => lis.map((li) => { const t = getComputedStyle(li.querySelector('.todo-title'));"
        " return [li.querySelector('.todo-mark').textContent, t.textDecorationLine, t.fontWeight]; })"
    )
    assert len({tuple(look) for look in looks}) == 3, looks  # three statuses, three looks
    expect(items.nth(0)).to_contain_text("done")

    asked = page.locator('.tool[data-tool-call-id="q1"]')
    expect(asked.locator(".tool-head .tool-args")).to_have_text("Which greeting should I use?")
    expect(asked.get_by_test_id("answers").locator("dd")).to_have_text("Hi there")

    agent = page.locator('.tool[data-tool-call-id="a1"]')
    expect(agent.locator(".tool-head .tool-args")).to_have_text("look around")
    steps = agent.get_by_test_id("subagent-steps")
    expect(steps.locator(".step .tool-name")).to_have_text("Glob")
    expect(steps.locator(".step .tool-args").first).to_have_text("*.txt")
    expect(agent.get_by_test_id("subagent-answer")).to_contain_text(REPORT)

    for card in (todo, asked, agent, page.locator('.tool[data-tool-call-id="p1"]')):
        assert_no_raw_json(card)

    # The same after a reload (from the history), answers included.
    page.reload()
    expect(page.locator('.tool[data-tool-call-id="q1"]').get_by_test_id("answers")).to_contain_text("Hi there")
    expect(page.locator('.tool[data-tool-call-id="a1"]').get_by_test_id("subagent-steps")).to_contain_text("Glob")
    expect(page.locator('.tool[data-tool-call-id="p1"]').get_by_test_id("plan")).to_contain_text("Say hello")
    for card_id in ("t1", "q1", "a1", "p1"):
        assert_no_raw_json(page.locator(f'.tool[data-tool-call-id="{card_id}"]'))


@pytest.mark.requires_tool("bwrap")
@pytest.mark.timeout(120)
def test_approval_cards_say_what_always_asks_what_is_remembered_and_the_sandbox(
    start_web: StartWeb, browser_page: Any, work_dir: Path
) -> None:
    """A file holding credentials: the warning, and no "always" button; a command leaving the
    sandbox: the sandbox line with the reason; "always" names exactly what it covers."""
    from playwright.sync_api import expect

    (work_dir / ".env").write_text("TOKEN=abc123\n", encoding="utf-8")
    server = start_web([
        tool_call("r1", "ReadFile", {"path": ".env"}),
        tool_call("s1", "Shell", {"command": "git status", "outside_sandbox": True, "reason": "needs the network"}),
        "text: done",
    ], config_keys={"sandbox": {"mode": "workspace-write"}})  # fmt: skip
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    page.fill("#prompt", "go")
    page.press("#prompt", "Enter")
    read = page.get_by_test_id("approval").last
    expect(read.locator(".request-warning")).to_contain_text("holds credentials")
    expect(read.get_by_role("button")).to_have_text(["Approve", "Reject"])
    read.get_by_role("button", name="Approve", exact=True).click()
    shell = page.get_by_test_id("approval").last
    expect(shell.locator(".request-sandbox")).to_contain_text("needs the network")
    expect(shell.get_by_role("button", name="Always allow `git status …` in this session")).to_be_visible()
    shell.get_by_role("button", name="Reject").click()
    expect(page.locator("#state")).to_have_text("idle")


def test_an_approval_card_shows_the_command_as_text_with_its_escapes(start_web: StartWeb, browser_page: Any) -> None:
    """The command that closes a Markdown fence and hides a line in an HTML comment (issue #29 item
    6): the page shows every line as text (no markup, no comment), the invisible characters as
    escapes, and the note saying so first."""
    from playwright.sync_api import expect

    from kimi_acp.util.visible_text import escapes_note, visible
    from tests.e2e.test_cards_acp import ATTACK, HIDDEN

    server = start_web([tool_call("s1", "Shell", {"command": ATTACK}), "text: done"])
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    page.fill("#prompt", "go")
    page.press("#prompt", "Enter")
    card = page.get_by_test_id("approval").last
    shell = card.locator("pre.shell-command")
    expect(shell).to_have_count(1)
    assert shell.text_content() == "$ " + visible(ATTACK).text  # every line, as text
    expect(card.locator(".request-display .brief").first).to_have_text(escapes_note("command"))
    assert card.locator("strong, b, a, img").count() == 0  # nothing the command wrote became markup
    comments = card.evaluate("n => { const w = document.createTreeWalker(n, NodeFilter.SHOW_COMMENT); let c = 0; while (w.nextNode()) c++; return c; }")
    text = card.inner_text()
    assert comments == 0 and "<!--\n'; touch hidden-marker" in text  # the comment is shown, as text
    assert not any(char in text for char in HIDDEN)
    card.get_by_role("button", name="Reject").click()
    expect(page.locator("#state")).to_have_text("idle")
