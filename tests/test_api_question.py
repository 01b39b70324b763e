"""AskUserQuestion through the Python API: `on_question` answers (sync or async); none means dismissal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import Agent
from kimi_acp.tools.question import DISMISSED_NOTE
from kimi_acp.wire.types import QuestionRequest, ToolResult
from tests.support.wire_client import scripted_config, tool_call

QUESTIONS = {
    "questions": [
        {"question": "Which language?", "options": [{"label": "Python"}, {"label": "Rust"}]},
        {"question": "Which checks?", "options": [{"label": "Lint"}, {"label": "Tests"}], "multi_select": True},
    ]
}


async def result_of(tmp_path: Path, work_dir: Path, **kwargs: Any) -> tuple[Any, list[Any]]:
    config = scripted_config(tmp_path, [tool_call("q1", "AskUserQuestion", QUESTIONS), "text: thanks"])
    agent = Agent(work_dir=work_dir, config=config, **kwargs)
    try:
        messages = [m async for m in agent.arun_events("ask me")]
    finally:
        await agent.aclose()
    (result,) = [m for m in messages if isinstance(m, ToolResult)]
    return json.loads(result.return_value.output), messages  # type: ignore[arg-type]


@pytest.mark.parametrize("style", ["sync", "async"])
async def test_on_question_answers_reach_the_model(tmp_path: Path, work_dir: Path, style: str) -> None:
    asked: list[QuestionRequest] = []

    def answer(request: QuestionRequest) -> dict[str, Any]:
        asked.append(request)
        return {"Which language?": "Rust", "Which checks?": ["Lint", "Tests"]}

    async def answer_async(request: QuestionRequest) -> dict[str, Any]:
        return answer(request)

    output, messages = await result_of(tmp_path, work_dir, on_question=answer if style == "sync" else answer_async)
    assert output == {"answers": {"Which language?": "Rust", "Which checks?": ["Lint", "Tests"]}}
    (request,) = asked
    assert [q.question for q in request.questions] == ["Which language?", "Which checks?"]
    assert any(isinstance(m, QuestionRequest) for m in messages)


async def test_without_on_question_the_question_is_dismissed(tmp_path: Path, work_dir: Path) -> None:
    output, _ = await result_of(tmp_path, work_dir)
    assert output == {"answers": {}, "note": DISMISSED_NOTE}


async def test_a_failing_on_question_is_a_dismissal(tmp_path: Path, work_dir: Path) -> None:
    def broken(request: QuestionRequest) -> dict[str, str]:
        raise RuntimeError("no UI")

    output, _ = await result_of(tmp_path, work_dir, on_question=broken)
    assert output == {"answers": {}, "note": DISMISSED_NOTE}
