"""Diff display blocks for file edits: one block per hunk, so approvals and results show what changes.

A block is a hunk: the changed lines with a little context, and where it starts in both texts. The
same blocks make the ACP `diff` content (the region that changed, not the whole file) and the
numbered `-`/`+` lines `kimi web` shows (frontends/web/diffview.py).
"""

from __future__ import annotations

import difflib

from ..wire.types import DiffDisplayBlock

CONTEXT_LINES = 3
# Beyond this many changed lines a diff is slow to compute and useless to read: show sizes instead.
# Only the region between the texts' common first and last lines counts, so one edit in a huge
# file is still a small hunk.
MAX_DIFF_LINES = 10_000


def make_diff_blocks(path: str, old_text: str, new_text: str) -> list[DiffDisplayBlock]:
    """Hunks of `old_text` -> `new_text` with 3 lines of context; texts keep their line endings.

    A new file (empty old text) is one block; otherwise identical texts give no block; more than 10,000
    lines on either side of the changed region (or of a new file) give one `is_summary` block whose texts
    are "(N lines)" (N counts the whole texts).
    """
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    if not old_text:
        if len(new_lines) > MAX_DIFF_LINES:
            return [_summary(path, old_lines, new_lines)]
        return [DiffDisplayBlock(path=path, old_text="", new_text=new_text, old_start=1, new_start=1)]
    if old_text == new_text:
        return []
    # Lines equal at both ends are cut first (linear), so only the changed region is diffed.
    head = _common_prefix(old_lines, new_lines)
    tail = _common_suffix(old_lines, new_lines, head)
    if len(old_lines) - head - tail > MAX_DIFF_LINES or len(new_lines) - head - tail > MAX_DIFF_LINES:
        return [_summary(path, old_lines, new_lines)]
    lo = max(0, head - CONTEXT_LINES)
    old_window = old_lines[lo : len(old_lines) - max(0, tail - CONTEXT_LINES)]
    new_window = new_lines[lo : len(new_lines) - max(0, tail - CONTEXT_LINES)]
    # autojunk keeps big regions with many repeated lines fast; the hunks stay a correct description.
    matcher = difflib.SequenceMatcher(None, old_window, new_window)
    blocks: list[DiffDisplayBlock] = []
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        i1, j1 = group[0][1], group[0][3]
        i2, j2 = group[-1][2], group[-1][4]
        blocks.append(
            DiffDisplayBlock(
                path=path,
                old_text="".join(old_window[i1:i2]),
                new_text="".join(new_window[j1:j2]),
                old_start=lo + i1 + 1,
                new_start=lo + j1 + 1,
            )
        )
    return blocks


def _summary(path: str, old_lines: list[str], new_lines: list[str]) -> DiffDisplayBlock:
    return DiffDisplayBlock(
        path=path, old_text=f"({len(old_lines)} lines)", new_text=f"({len(new_lines)} lines)", is_summary=True
    )


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: list[str], b: list[str], head: int) -> int:
    n = min(len(a), len(b)) - head  # never overlapping the common prefix
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i
