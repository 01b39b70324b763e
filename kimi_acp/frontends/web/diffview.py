"""Display blocks as the page draws them: a diff block becomes numbered `-`/`+`/context rows.

Computed here, once per page and block, rather than in the browser: the page only lays rows out.
A notification carries at most `MAX_ROWS` rows over all its blocks; a block cut short says how
many of its lines were left out (`more`), and the page says so.
"""

from __future__ import annotations

from typing import Any

from ...tools.diff import diff_lines
from ...wire.types import DiffDisplayBlock

MAX_ROWS = 1_000  # per notification: a reader cannot review more, and a page must not lay out more
MAX_LINE_CHARS = 2_000  # a minified line is cut (with "…") rather than sent whole


def page_display(blocks: list[Any]) -> list[dict[str, Any]]:
    """The display blocks of one notification, diffs as rows (their old and new texts left out)."""
    budget = MAX_ROWS
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, DiffDisplayBlock) and not block.is_summary:
            data, shown = _diff(block, budget)
            budget -= shown
            out.append(data)
        else:
            out.append(block.model_dump(mode="json"))
    return out


def _diff(block: DiffDisplayBlock, budget: int) -> tuple[dict[str, Any], int]:
    lines = diff_lines(block)
    rows: list[list[Any]] = []
    for line in lines[: max(0, budget)]:
        text = line.text if len(line.text) <= MAX_LINE_CHARS else line.text[:MAX_LINE_CHARS] + "…"
        row: list[Any] = [line.kind, line.old_no, line.new_no, text]
        if line.changed is not None and line.changed[1] <= MAX_LINE_CHARS:
            row.append(list(line.changed))
        rows.append(row)
    data = {
        "type": "diff",
        "path": block.path,
        "old_start": block.old_start,
        "new_start": block.new_start,
        "is_summary": False,
        "new_file": not block.old_text,
        "added": sum(1 for line in lines if line.kind == "+"),
        "removed": sum(1 for line in lines if line.kind == "-"),
        "rows": rows,
        "more": len(lines) - len(rows),
    }
    return data, len(rows)
