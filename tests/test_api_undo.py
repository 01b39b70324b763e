"""`Agent.aundo`: the Python API's /undo, with its report."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kimi_acp import Agent, UndoReport
from kimi_acp.core.errors import TurnInProgress
from tests.support.wire_client import scripted_config, tool_call


async def test_aundo_previews_then_takes_the_turn_back(tmp_path: Path, work_dir: Path) -> None:
    (work_dir / "a.txt").write_text("before\n")
    scripts = [tool_call("w1", "WriteFile", {"path": "a.txt", "content": "after\n"}), "text: done"]
    agent = Agent(work_dir=work_dir, config=scripted_config(tmp_path, scripts))
    try:
        assert await agent.arun("edit a") == "done"
        preview = await agent.aundo(dry_run=True)
        assert isinstance(preview, UndoReport) and preview.dry_run and preview.restored == ["a.txt"]
        assert (work_dir / "a.txt").read_text() == "after\n"
        report = await agent.aundo()
        assert report.ok and report.turns == [1] and report.restored == ["a.txt"] and report.left == []
        assert report.text().startswith("Undid 1 turn (“edit a”).")
        assert (work_dir / "a.txt").read_text() == "before\n"
        again = await agent.aundo()
        assert not again.ok and "Nothing to undo" in (again.refused or "")
        with pytest.raises(ValueError):
            await agent.aundo(0)
    finally:
        await agent.aclose()


async def test_aundo_while_a_turn_runs_raises_turn_in_progress(tmp_path: Path, work_dir: Path) -> None:
    asked = asyncio.Event()
    release = asyncio.Event()

    async def slow_approval(request):
        asked.set()
        await release.wait()
        return "reject"

    scripts = [tool_call("s1", "Shell", {"command": "echo hi"}), "text: never"]
    agent = Agent(work_dir=work_dir, config=scripted_config(tmp_path, scripts), on_approval=slow_approval)
    try:
        turn = asyncio.create_task(agent.arun("run it"))
        await asyncio.wait_for(asked.wait(), 10)
        with pytest.raises(TurnInProgress, match="a turn still running cannot be undone"):
            await agent.aundo()
        release.set()
        await turn
    finally:
        await agent.aclose()
