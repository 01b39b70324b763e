"""Slash command lines (kimi_acp/core/slash.py): what is a command, and finding one by name or alias."""

from __future__ import annotations

import pytest

from kimi_acp.core.slash import parse_slash
from kimi_acp.core.slash_commands import BUILTIN_COMMANDS, find_command


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/clear", ("clear", "")),
        ("/clear\n", ("clear", "")),
        ("/compact keep db", ("compact", "keep db")),
        ("/compact   keep\n  db discussions  ", ("compact", "keep\n  db discussions")),
        ("/skill:x", ("skill:x", "")),
        ("/skill:code-review please check a.py", ("skill:code-review", "please check a.py")),
        ("/flow:release:v2 now", ("flow:release:v2", "now")),
        ("/usr/bin", None),
        ("/usr/bin/python -V", None),
        ("/", None),
        ("/ clear", None),
        ("//clear", None),
        ("/clear!", None),
        ("/skill:", None),
        ("please /clear", None),
        ("text then\n/clear", None),
        ("", None),
    ],
)
def test_parse_slash(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_slash(text) == expected


def test_find_command_and_aliases() -> None:
    clear = find_command("clear")
    assert clear is not None and find_command("reset") is clear
    assert find_command("nope") is None
    assert {c.name for c in BUILTIN_COMMANDS} >= {"init", "compact", "clear", "yolo", "plan"}
