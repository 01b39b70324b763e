"""The one slash-command registry: built-ins first, providers' commands after, one list for all."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kimi_acp.core.prompt import SkillSummary
from kimi_acp.core.slash import SlashCommand, SlashRegistry, acp_entries, wire_entries
from kimi_acp.core.slash_commands import BUILTIN_COMMANDS, help_text
from kimi_acp.core.transcript import export_markdown, history_transcript
from kimi_acp.llm.types import Message
from kimi_acp.wire.types import TextPart, ToolCall


async def _noop(host: Any, args: str) -> Any:
    return None


class Provider:
    def __init__(self, commands: Sequence[SlashCommand]) -> None:
        self.commands = list(commands)
        self.changed = False

    def slash_commands(self) -> Sequence[SlashCommand]:
        return self.commands

    def skills(self) -> Sequence[SkillSummary]:
        return [SkillSummary(c.name, c.description, "/x") for c in self.commands]

    def refresh(self) -> bool:
        return self.changed

    def notes(self) -> Sequence[str]:
        return ["/bad/SKILL.md: broken"]

    def explain(self, name: str) -> str | None:
        return None


def test_every_builtin_is_implemented() -> None:
    assert all(c.handler is not None for c in BUILTIN_COMMANDS)  # declared on its handler
    assert [c.name for c in BUILTIN_COMMANDS][:9] == [
        "init", "compact", "clear", "yolo", "afk", "plan", "add-dir", "export", "import",
    ]  # fmt: skip  (Kimi's order)


def test_provider_commands_follow_and_cannot_take_a_builtin_name() -> None:
    registry = SlashRegistry(BUILTIN_COMMANDS)
    provider = Provider([SlashCommand("skill:a", "A", handler=_noop), SlashCommand("reset", "clash", handler=_noop)])
    registry.add_provider(provider)
    names = [c.name for c in registry.commands()]
    assert names == [c.name for c in BUILTIN_COMMANDS] + ["skill:a"]
    assert registry.find("reset") is registry.find("clear")
    assert registry.find("skill:a") is not None and registry.find("skill:b") is None
    assert registry.refresh() is False
    provider.changed = True
    assert registry.refresh() is True


def test_the_lists_clients_see_come_from_the_same_commands() -> None:
    commands = [*BUILTIN_COMMANDS, SlashCommand("skill:a", "Does A", hint="optional request", handler=_noop)]
    assert wire_entries(commands)[2] == {"name": "clear", "description": "Clear the context", "aliases": ["reset"]}
    assert acp_entries(commands)[-1] == {"name": "skill:a", "description": "Does A", "input": {"hint": "optional request"}}
    text = help_text(commands, ["/bad/SKILL.md: broken"])
    for command in commands:
        assert f"`/{command.name}`" in text and command.description.split(". Usage")[0] in text
    assert "Usage: `/add-dir <path>`" in text and "Usage: `/plan [on|off|view|clear]`" in text  # kept by Markdown
    assert "Not loaded:\n- /bad/SKILL.md: broken" in text


def test_export_renders_turns_tool_calls_and_results() -> None:
    call = ToolCall(id="c1", function={"name": "ReadFile", "arguments": '{"path": "a.py"}'})
    history = [
        Message(role="user", content="read a.py"),
        Message(role="assistant", content=[TextPart(text="Reading.")], tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content="print(1)"),
        Message(role="assistant", content="Done."),
        Message(role="user", content="thanks"),
    ]
    now = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    text = export_markdown(session_id="abcdef123", work_dir=Path("/w"), history=history, token_count=42, now=now)
    assert text.startswith("---\nsession_id: abcdef123\nexported_at: 2030-01-01T00:00:00+00:00\nwork_dir: /w\n")
    assert "- **Conversation**: 2 turns | 1 tool calls | 42 tokens" in text
    assert "## Turn 1\n\n### User\n\nread a.py" in text and "## Turn 2" in text
    assert "#### Tool Call: ReadFile (`a.py`)" in text
    assert "<details><summary>Tool Result: ReadFile (`a.py`)</summary>\n\nprint(1)" in text
    assert "[USER]\nread a.py" in history_transcript(history)
    assert 'Tool Call: ReadFile({"path": "a.py"})' in history_transcript(history)
