"""The fast `kimi --wire` option parser agrees with the click CLI it bypasses."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from kimi_acp.cli import main as cli
from kimi_acp.frontends.wire import main as wire_main

SAME = [
    ["--wire"],
    ["--wire", "--work-dir", "/tmp/x", "--yolo"],
    ["--wire", "-w", "/tmp/x", "-S", "abc", "-m", "fast", "--max-steps-per-turn", "7"],
    ["--wire", "--session=abc", "--config-file=/tmp/c.toml", "--no-thinking"],
    ["--wire", "-C", "--config", '{"default_model": ""}', "--thinking", "-y"],
    ["--resume", "abc", "--wire", "--auto-approve", "--yes", "--model=m"],
    ["--wire", "-r", "abc", "--continue"],
    ["--wire", "--mcp-config-file", "/tmp/a.json", "--mcp-config-file=/tmp/b.json", "--mcp-config", '{"mcpServers": {}}'],
    ["--wire", "--plan", "--afk", "--max-retries-per-step", "5", "--agent-file", "/tmp/agent.yaml"],
    ["--wire", "--skills-dir", "/tmp/s1", "--skills-dir=/tmp/s2", "--add-dir", "/tmp/d1", "--add-dir=/tmp/d2"],
    ["--wire", "--sandbox", "workspace-write"],
    ["--wire", "--sandbox=read-only", "--yolo"],
]
FALLBACK = [
    ["--wire", "--help"],
    ["--wire", "--unknown"],
    ["--wire", "--max-steps-per-turn", "0"],
    ["--wire", "--max-retries-per-step", "0"],
    ["--wire", "--skills-dir"],
    ["--wire", "--model"],
    ["--wire", "--mcp-config-file"],
    ["--wire", "-wDIR"],
    ["--wire", "info"],
    ["--work-dir", "/tmp"],
    ["--wire", "--sandbox", "on"],  # click names the modes
]


def click_options(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def capture(**options: Any) -> int:
        seen.update(options)
        return 0

    monkeypatch.setattr(wire_main, "run_wire", capture)
    monkeypatch.setattr(sys, "argv", ["kimi", *argv])
    with pytest.raises(SystemExit) as exit_info:
        cli._click_main()
    assert exit_info.value.code == 0
    return seen


@pytest.mark.parametrize("argv", SAME)
def test_fast_parser_matches_click(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    fast = wire_main.parse_fast(argv)
    assert fast is not None
    assert fast == click_options(monkeypatch, argv)


@pytest.mark.parametrize("argv", FALLBACK)
def test_fast_parser_leaves_the_rest_to_click(argv: list[str]) -> None:
    assert wire_main.parse_fast(argv) is None
