"""The pure parts of generated titles, the IDE's instructions and `/help`'s Markdown-safe lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_acp.core.prompt import PromptInputs, SkillSummary, with_client_prompt
from kimi_acp.core.slash_commands import code_spans
from kimi_acp.core.titles import clean_title, first_exchange
from kimi_acp.llm.types import Message


@pytest.mark.parametrize(
    ("reply", "title"),
    [
        ('"Fix flaky login test."', "Fix flaky login test"),
        ("Title: **Speed up CI**\n\nThis title says what the user asked.", "Speed up CI"),
        ("  \n  # Rename   the   parser module  \n", "Rename the parser module"),
        ("", None),
        ('"."', None),
        ("x" * 80, "x" * 59 + "…"),
    ],
)
def test_a_reply_becomes_one_short_line(reply: str, title: str | None) -> None:
    assert clean_title(reply) == title


def test_the_first_exchange_skips_the_agents_own_notes() -> None:
    history = [
        Message(role="user", content="<system>The available skills have changed.</system>"),
        Message(role="user", content="fix the bug"),
        Message(role="assistant", content=""),
        Message(role="assistant", content="Fixed it."),
    ]
    assert first_exchange(history) == ("fix the bug", "Fixed it.")
    assert first_exchange(history[:1]) is None


def test_append_keeps_the_sessions_prompt_and_override_keeps_the_environment(tmp_path: Path) -> None:
    inputs = PromptInputs(tmp_path, ["Shell"], skills=[SkillSummary("review", "Review code", "/s/SKILL.md")])
    appended = with_client_prompt("You are Kimi.\n", "append", " Be brief. ", inputs)
    assert appended == "You are Kimi.\n\n# Instructions from the IDE\nBe brief.\n"
    overridden = with_client_prompt("You are Kimi.\n", "override", "You review code.", inputs)
    assert overridden.startswith(f"You review code.\n\n# Environment\n- Working directory: {tmp_path}\n")
    assert "You are Kimi" not in overridden and "- review: Review code (/s/SKILL.md)" in overridden


def test_help_text_puts_commands_with_arguments_in_backticks() -> None:
    assert code_spans("Usage: /add-dir <path>. Or /plan [on|off]") == "Usage: `/add-dir <path>`. Or `/plan [on|off]`"
    assert code_spans("Usage: /thinking on|off") == "Usage: `/thinking on|off`"
    assert code_spans("see <file> and `<kept>`, e.g. /compact keep it") == "see `<file>` and `<kept>`, e.g. /compact keep it"
