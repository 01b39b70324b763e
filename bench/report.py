"""Result rows: collecting samples per metric, the text table, and the JSON file."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .machine import header_lines
from .stats import summary


@dataclass
class Row:
    key: str  # stable id, e.g. "stream.acp.loopback.burst"
    measure: str  # e.g. "3 stream"
    metric: str  # human label
    unit: str
    target: float | None = None  # upper bound for the median
    digits: int = 1
    samples: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    na: str | None = None
    notes: list[str] = field(default_factory=list)
    compare: Row | None = None  # the same row measured on the comparison implementation

    @property
    def median(self) -> float:
        return summary(self.samples)["median"]

    def status(self) -> str:
        if self.errors:
            return "FAILED"
        if self.na is not None:
            return "n/a"
        if not self.samples:
            return "FAILED"
        if self.target is None:
            return ""
        med = self.median
        if med <= self.target:
            return "ok"
        over = (med / self.target - 1) * 100 if self.target else math.inf
        return f"MISS +{over:.0f}%"

    def ratio(self) -> float | None:
        """Theirs / ours, on medians: how many times faster (leaner) ours is; above 1 is better."""
        if self.compare is None or not self.samples or not self.compare.samples:
            return None
        if self.errors or self.compare.errors:
            return None  # a failed row's numbers are not comparable
        ours = self.median
        if ours <= 0 or self.compare.median <= 0:
            return None
        return self.compare.median / ours

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key,
            "measure": self.measure,
            "metric": self.metric,
            "unit": self.unit,
            "target_max": self.target,
            "samples": [round(s, 6) for s in self.samples],
            **{k: _clean(v) for k, v in summary(self.samples).items()},
            "status": self.status(),
            "errors": self.errors,
            "notes": self.notes,
        }
        if self.na is not None:
            out["na"] = self.na
        if self.compare is not None:
            out["compare"] = {
                "samples": [round(s, 6) for s in self.compare.samples],
                **{k: _clean(v) for k, v in summary(self.compare.samples).items()},
                "status": self.compare.status(),
                "errors": self.compare.errors,
                "notes": self.compare.notes,
                "na": self.compare.na,
                "ratio": _clean(self.ratio()),
            }
        return out


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value


class Collector:
    """Rows in the order they were declared; measures add samples, errors and notes by key."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def declare(
        self, key: str, measure: str, metric: str, unit: str, target: float | None = None, digits: int = 1
    ) -> str:
        if key not in self.rows:
            self.rows[key] = Row(key, measure, metric, unit, target, digits)
        return key

    def add(self, key: str, value: float) -> None:
        self.rows[key].samples.append(float(value))

    def fail(self, keys: str | Iterable[str], message: str) -> None:
        for key in [keys] if isinstance(keys, str) else keys:
            row = self.rows[key]
            if message not in row.errors:
                row.errors.append(message)

    def na(self, keys: str | Iterable[str], reason: str) -> None:
        for key in [keys] if isinstance(keys, str) else keys:
            self.rows[key].na = reason

    def note(self, key: str, text: str) -> None:
        notes = self.rows[key].notes
        if text not in notes:
            notes.append(text)

    def merge_compare(self, other: Collector) -> None:
        for key, row in self.rows.items():
            row.compare = other.rows.get(key)


# --------------------------------------------------------------------------- rendering


def _fmt(value: float, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _target_text(row: Row) -> str:
    if row.target is None:
        return ""
    return f"≤{row.target:g}"


def render_table(rows: list[Row], compare_label: str | None = None) -> str:
    headers = ["measure", "metric", "unit", "target", "min", "median", "max", "status"]
    if compare_label is not None:
        headers += [f"{compare_label} median", "ratio"]  # ratio: theirs / ours
    table: list[list[str]] = []
    for row in rows:
        stats = summary(row.samples)
        cells = [
            row.measure,
            row.metric,
            row.unit,
            _target_text(row),
            _fmt(stats["min"], row.digits),
            _fmt(stats["median"], row.digits),
            _fmt(stats["max"], row.digits),
            row.status(),
        ]
        if compare_label is not None:
            other = row.compare
            if other is None or other.errors or other.na is not None or not other.samples:
                cells.append("FAILED" if other is not None and other.errors else "n/a")
            else:
                cells.append(_fmt(other.median, row.digits))
            ratio = row.ratio()
            cells.append(f"×{ratio:.2f}" if ratio is not None else "-")
        table.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h) for i, h in enumerate(headers)]
    right = {"target", "min", "median", "max", "ratio"} | (
        {f"{compare_label} median"} if compare_label else set()
    )

    def line(cells: list[str]) -> str:
        parts = [
            c.rjust(w) if headers[i] in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    previous = None
    for row, cells in zip(rows, table):
        if previous is not None and row.measure != previous:
            out.append("")
        previous = row.measure
        out.append(line(cells))
    return "\n".join(out)


def render_notes(rows: list[Row], compare_label: str | None = None) -> str:
    """Errors (grouped: one failure often spoils every row of its run), n/a reasons, then notes."""
    grouped: dict[tuple[str, str], list[str]] = {}
    notes: list[str] = []
    for row in rows:
        sides = [("", row)] + (
            [(f"[{compare_label}] ", row.compare)] if row.compare is not None and compare_label else []
        )
        for prefix, side in sides:
            for error in side.errors:
                grouped.setdefault(("FAILED", prefix + error), []).append(row.metric)
            if side.na is not None:
                grouped.setdefault(("n/a", prefix + side.na), []).append(row.metric)
            for note in side.notes:
                notes.append(f"note    {prefix}{row.metric}: {note}")
    lines: list[str] = []
    for (kind, message), metrics in grouped.items():
        where = metrics[0] if len(metrics) == 1 else f"{metrics[0]} (and {len(metrics) - 1} more rows)"
        lines.append(f"{kind:<7} {where}: {message}")
    return "\n".join(lines + notes)


# The user-felt rows of issue #13: (row key, label, goal on our median, goal on the ratio).
GOALS: list[tuple[str, str, float, float | None]] = [
    ("start.acp.ready", "spawn → first session/new answered (ACP)", 250, 10),
    ("history.wire.cold", "spawn → Wire replay of 565 events finished", 100, None),
    ("history.wire.replay", "  Wire replay itself", 25, None),
    ("history.acp.cold", "cold ACP session/load of 100 turns (spawn → loaded)", 300, 10),
    ("stream.acp.loopback.burst", "2,000-chunk stream prompt → response, ACP", 60, 12),
    ("stream.wire.loopback.burst", "2,000-chunk stream prompt → response, Wire", 60, 12),
    ("stream.acp.loopback.per_chunk", "server CPU per streamed chunk, ACP (µs)", 25, None),
    ("stream.wire.loopback.per_chunk", "server CPU per streamed chunk, Wire (µs)", 25, None),
    ("stream.acp.paced.p99", "paced stream (1 chunk / 2 ms) p99, ACP", 1, None),
    ("stream.wire.paced.p99", "paced stream (1 chunk / 2 ms) p99, Wire", 1, None),
    ("sessions.rss_init", "RSS after initialize (MiB)", 40, None),
    ("sessions.rss_20", "RSS after 20 sessions (MiB)", 45, None),
    ("start.acp.features_delta", "start-up with MCP/skills/web unused, ACP: Δ", 5, None),
    ("start.wire.features_delta", "start-up with MCP/skills/web unused, Wire: Δ", 5, None),
]


def render_goals(rows: list[Row], compare_label: str | None = None) -> str:
    """The issue's table: our median against its goal, and the ratio to the reference's."""
    by_key = {r.key: r for r in rows}
    headers = ["issue #13 goal", "ours", "goal", "status"]
    if compare_label:
        headers += [compare_label, "ratio", "ratio goal"]
    table: list[list[str]] = []
    for key, label, goal, ratio_goal in GOALS:
        row = by_key.get(key)
        if row is None or row.na is not None:
            continue
        ok = bool(row.samples) and not row.errors and row.median <= goal
        cells = [
            label,
            _fmt(row.median, row.digits) if row.samples else "-",
            f"≤{goal:g}",
            ("ok" if ok else "MISS") if row.samples and not row.errors else "FAILED",
        ]
        if compare_label:
            other = row.compare
            cells.append(_fmt(other.median, row.digits) if other is not None and other.samples else "n/a")
            ratio = row.ratio() if not key.endswith("delta") else None
            cells.append(f"×{ratio:.1f}" if ratio is not None else "-")
            if ratio_goal is None:
                cells.append("")
            else:
                met = ratio is not None and ratio >= ratio_goal
                cells.append(f"≥×{ratio_goal:g} {'ok' if met else 'MISS'}")
        table.append(cells)
    if not table:
        return ""
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for cells in table:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))))
    return "\n".join(lines)


def render(
    info: dict[str, Any], settings: dict[str, Any], rows: list[Row], compare_label: str | None = None
) -> str:
    parts = header_lines(info)
    parts.append(
        f"runs:    {settings['runs']}{' (quick)' if settings.get('quick') else ''}; "
        f"sizes: {settings['sizes_text']}"
    )
    if settings.get("netns"):
        parts.append("network: a private network namespace, loopback only (--compare-ref)")
    parts.append(f"acp:     {settings['acp_cmd']}")
    parts.append(f"wire:    {settings['wire_cmd']}")
    if compare_label:
        parts.append(
            f"compare: acp {settings.get('compare_acp_cmd')}; wire {settings.get('compare_wire_cmd')} "
            "(ratio = theirs / ours on medians: ×10 = ours 10 times faster or leaner)"
        )
    parts += ["", render_table(rows, compare_label)]
    goals = render_goals(rows, compare_label)
    if goals:
        parts += ["", goals]
    notes = render_notes(rows, compare_label)
    if notes:
        parts += ["", notes]
    return "\n".join(parts)


def write_json(path: str, info: dict[str, Any], settings: dict[str, Any], rows: list[Row]) -> None:
    data = {"machine": info, "settings": settings, "rows": [r.to_json() for r in rows]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
