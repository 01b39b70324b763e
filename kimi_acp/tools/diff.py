"""Diff display blocks for file edits: one block per hunk, so approvals and results show what changes."""

from __future__ import annotations

import difflib

from ..wire.types import DiffDisplayBlock

CONTEXT_LINES = 3
# Beyond this many lines a diff is slow to compute and useless to read: show sizes instead.
MAX_DIFF_LINES = 10_000


def make_diff_blocks(path: str, old_text: str, new_text: str) -> list[DiffDisplayBlock]:
    """Hunks of `old_text` -> `new_text` with 3 lines of context; texts keep their line endings.

    A new file (empty old text) is one block; otherwise identical texts give no block; more than 10,000 lines
    on either side give one `is_summary` block whose texts are "(N lines)".
    """
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    if len(old_lines) > MAX_DIFF_LINES or len(new_lines) > MAX_DIFF_LINES:
        return [
            DiffDisplayBlock(
                path=path,
                old_text=f"({len(old_lines)} lines)",
                new_text=f"({len(new_lines)} lines)",
                is_summary=True,
            )
        ]
    if not old_text:
        return [DiffDisplayBlock(path=path, old_text="", new_text=new_text, old_start=1, new_start=1)]
    if old_text == new_text:
        return []
    # autojunk keeps big files with many repeated lines fast; the hunks stay a correct description.
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines)
    blocks: list[DiffDisplayBlock] = []
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        i1, j1 = group[0][1], group[0][3]
        i2, j2 = group[-1][2], group[-1][4]
        blocks.append(
            DiffDisplayBlock(
                path=path,
                old_text="".join(old_lines[i1:i2]),
                new_text="".join(new_lines[j1:j2]),
                old_start=i1 + 1,
                new_start=j1 + 1,
            )
        )
    return blocks
