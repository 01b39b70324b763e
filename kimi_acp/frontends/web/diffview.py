"""Display blocks as the page draws them: a diff block becomes numbered `-`/`+`/context rows.

Computed here, once per page and block, rather than in the browser: the page only lays rows out.
A notification carries at most `MAX_ROWS` rows over all its blocks; a block cut short says how
many of its lines were left out (`more`), and the page says so.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

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


# --------------------------------------------------------------------------- lines of a hunk

LineKind = Literal[" ", "-", "+"]


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk as a reader sees it: kept, removed or added, with its line numbers.

    `changed` is the (start, end) character span that differs from its paired line (a line edited
    in place), or None when the whole line is new or gone."""

    kind: LineKind
    old_no: int | None
    new_no: int | None
    text: str
    changed: tuple[int, int] | None = None


def diff_lines(block: DiffDisplayBlock) -> list[DiffLine]:
    """The hunk's lines, context first and last, removals before additions (unified-diff order)."""
    old = block.old_text.splitlines()
    new = block.new_text.splitlines()
    old_no, new_no = block.old_start or 1, block.new_start or 1
    out: list[DiffLine] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [DiffLine(" ", old_no + i, new_no + j, old[i]) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
            continue
        spans = [_changed_span(old[i1 + k], new[j1 + k]) for k in range(min(i2 - i1, j2 - j1))] if tag == "replace" else []
        for k, i in enumerate(range(i1, i2)):
            out.append(DiffLine("-", old_no + i, None, old[i], spans[k][0] if k < len(spans) else None))
        for k, j in enumerate(range(j1, j2)):
            out.append(DiffLine("+", None, new_no + j, new[j], spans[k][1] if k < len(spans) else None))
    return out


Span = tuple[int, int] | None


def _changed_span(a: str, b: str) -> tuple[Span, Span]:
    """The middle part that differs between two lines (common start and end cut off): cheap, and
    what a reader needs for a one-word edit. None when nothing is common (the whole line changed)."""
    n = min(len(a), len(b))
    start = 0
    while start < n and a[start] == b[start]:
        start += 1
    end = 0
    while end < n - start and a[-1 - end] == b[-1 - end]:
        end += 1
    if start == 0 and end == 0:
        return None, None
    return (start, len(a) - end), (start, len(b) - end)
