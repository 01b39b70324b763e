"""axe-core (tests/node/package.json, installed by `npm install --prefix tests/node`) run in a page.

Evaluated through the browser's debugging protocol, so the page's Content-Security-Policy stays
as it is. Without the package the test is skipped on a developer's machine and fails in CI.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

AXE = Path(__file__).resolve().parents[2] / "node" / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page: Any, unavailable: Callable[[str], NoReturn]) -> list[str]:
    """axe's default rules on the whole page: one line per violation (rule, impact, first targets)."""
    if not AXE.is_file():
        unavailable("not installed: axe-core (npm install --prefix tests/node)")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")
    result = page.evaluate("async () => (await window.axe.run(document)).violations.map((v) => "
                           "({id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n')[1])}))")  # fmt: skip
    return [f"{v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in result]
