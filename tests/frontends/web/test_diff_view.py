"""Diffs in `kimi web`: hunks with line numbers, +/- counts, intra-line marks, bounded; computed on
the server (tools/diff.py, frontends/web/diffview.py) and drawn by the page (headless Chromium).

The browser test: a one-line StrReplaceFile shows one `-` and one `+` line with their numbers, in the
approval and, after Approve, in the tool's own card (it used to vanish until a reload); an edit of a
2 MB file shows its hunk at line 20,001; a new file of 1,500 lines shows 1,000 and says how many
more there are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kimi_acp.frontends.web.diffview import MAX_ROWS, diff_lines, page_display
from kimi_acp.tools.diff import make_diff_blocks
from tests.frontends.web.conftest import StartWeb
from tests.support.wire_client import tool_call

BIG_LINES = 31_747


def big_text() -> str:
    return "".join(f"line {i:05d} of a large generated file, padded to be about 64 bytes.\n" for i in range(1, BIG_LINES + 1))


def test_a_one_line_edit_is_one_removed_and_one_added_line() -> None:
    (block,) = make_diff_blocks("/p/a.py", "a = 1\nb = 2\na = 1\nc = 3\n", "a = 1\nb = 20\na = 1\nc = 3\n")
    lines = diff_lines(block)
    assert [(line.kind, line.old_no, line.new_no, line.text) for line in lines] == [
        (" ", 1, 1, "a = 1"), ("-", 2, None, "b = 2"), ("+", None, 2, "b = 20"), (" ", 3, 3, "a = 1"), (" ", 4, 4, "c = 3"),
    ]  # fmt: skip
    assert (lines[1].changed, lines[2].changed) == ((5, 5), (5, 6))  # the "0" added at the end
    (shown,) = page_display([block])
    assert (shown["added"], shown["removed"], shown["more"]) == (1, 1, 0)
    assert shown["rows"][2] == ["+", None, 2, "b = 20", [5, 6]]
    assert "old_text" not in shown and "new_text" not in shown  # rows only: the page does no diffing


def test_a_2mb_file_edit_is_a_hunk_not_a_summary() -> None:
    old = big_text()
    assert len(old.encode()) > 2_000_000
    new = old.replace("line 20001 of", "line 20001 (edited) of")
    (block,) = make_diff_blocks("/p/big.txt", old, new)
    assert not block.is_summary and (block.old_start, block.new_start) == (19_998, 19_998)
    assert block.old_text.count("\n") == 7  # three lines of context each side
    kinds = [(line.kind, line.old_no, line.new_no) for line in diff_lines(block)]
    assert ("-", 20_001, None) in kinds and ("+", None, 20_001) in kinds and len(kinds) == 8


def test_the_rows_of_one_notification_are_bounded() -> None:
    blocks = make_diff_blocks("/p/new.txt", "", "".join(f"{i}\n" for i in range(1500)))
    blocks += make_diff_blocks("/p/b.txt", "x\n", "y\n")
    first, second = page_display(blocks)
    assert len(first["rows"]) == MAX_ROWS and first["more"] == 500 and first["added"] == 1500 and first["new_file"]
    assert second["rows"] == [] and second["more"] == 2  # the budget is spent: counted, not shown


def rows(diff: Any) -> list[tuple[str, str, str]]:
    found = diff.locator(".row").evaluate_all(
        "rows => rows.map((r) => [r.className.replace('row ', ''), r.children[0].textContent, r.children[1].textContent])"
    )
    return [tuple(row) for row in found]


@pytest.mark.timeout(180)
def test_diffs_in_the_page(start_web: StartWeb, browser_page: Any, work_dir: Path) -> None:
    from playwright.sync_api import expect

    (work_dir / "a.py").write_text("a = 1\nb = 2\na = 1\nc = 3\n", encoding="utf-8")
    (work_dir / "big.txt").write_text(big_text(), encoding="utf-8")
    server = start_web([
        tool_call("e1", "StrReplaceFile", {"path": "a.py", "edit": {"old": "b = 2", "new": "b = 20"}}),
        "text: Edited a.py.",
        tool_call("e2", "StrReplaceFile", {"path": "big.txt", "edit": {"old": "line 20001 of", "new": "line 20001 (edited) of"}}),
        "text: Edited big.txt.",
        tool_call("w1", "WriteFile", {"path": "long.txt", "content": "".join(f"row {i}\n" for i in range(1, 1501))}),
        "text: Wrote long.txt.",
    ])  # fmt: skip
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")

    # A one-line edit: one `-` and one `+` line, numbered, the changed characters marked.
    page.fill("#prompt", "Edit a.py")
    page.press("#prompt", "Enter")
    approval = page.get_by_test_id("approval").last
    diff = approval.get_by_test_id("diff")
    expect(diff.locator(".row")).to_have_count(5)
    assert rows(diff) == [("ctx", "1", "1"), ("del", "2", ""), ("add", "", "2"), ("ctx", "3", "3"), ("ctx", "4", "4")]
    expect(diff.locator(".row.add mark")).to_have_text("0")
    card = page.locator('.tool[data-tool-call-id="e1"]')
    expect(card.get_by_test_id("counts")).to_have_text("+1 −1")
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("answer").last).to_have_text("Edited a.py.")
    # After Approve the diff is still there, in the tool's own card (not the folded approval).
    shown = card.locator(":scope > .tool-display").get_by_test_id("diff")
    expect(shown).to_be_visible()
    assert rows(shown) == [("ctx", "1", "1"), ("del", "2", ""), ("add", "", "2"), ("ctx", "3", "3"), ("ctx", "4", "4")]
    expect(approval.get_by_test_id("diff")).to_be_hidden()

    # A 2 MB file: the hunk, at its line numbers.
    page.fill("#prompt", "Edit big.txt")
    page.press("#prompt", "Enter")
    diff = page.get_by_test_id("approval").last.get_by_test_id("diff")
    expect(diff.locator(".row.del")).to_have_count(1)
    expect(diff.locator(".row.del")).to_contain_text("line 20001 of a large")
    expect(diff.locator(".row.add")).to_contain_text("line 20001 (edited) of")
    assert ("del", "20001", "") in rows(diff) and rows(diff)[0] == ("ctx", "19998", "19998")
    page.get_by_test_id("approval").last.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("answer").last).to_have_text("Edited big.txt.")

    # A new file of 1,500 lines: 1,000 shown, and a notice for the rest.
    page.fill("#prompt", "Write long.txt")
    page.press("#prompt", "Enter")
    diff = page.get_by_test_id("approval").last.get_by_test_id("diff")
    expect(diff.get_by_test_id("diff-more")).to_have_text("500 more lines not shown")
    expect(diff.locator(".row.add")).to_have_count(1000)
    expect(diff.locator(".diff-counts")).to_have_text("+1500 −0")
    page.get_by_test_id("approval").last.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("answer").last).to_have_text("Wrote long.txt.")

    # Reloaded: the same diffs, from the history.
    page.reload()
    expect(page.locator('.tool[data-tool-call-id="e1"] [data-testid=diff] .row.del')).to_have_count(1)
    expect(page.locator('.tool[data-tool-call-id="e2"] [data-testid=diff] .row.add')).to_contain_text("(edited)")
