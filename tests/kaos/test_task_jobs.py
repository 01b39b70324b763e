"""TaskTable jobs: coroutines of this process as background tasks (background subagents use them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kimi_acp.kaos.tasks import TaskTable


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[TaskTable]:
    t = TaskTable(tmp_path / "tasks")
    yield t
    await t.aclose()


async def test_a_job_completes_with_its_text_as_output(table: TaskTable) -> None:
    async def job() -> str:
        await asyncio.sleep(0.01)
        return "the report"

    task = await table.launch_job(job, kind="agent", description="report", command="coder subagent a1", timeout_s=10)
    assert task.id == "agent-1" and task.active
    task = await table.wait(task.id, 5)
    assert task.status == "completed" and table.read_tail(task)[0] == "the report"
    assert "agent-1 (report): completed" in (table.take_finished_note() or "")


async def test_stop_cancels_a_job_at_once(table: TaskTable) -> None:
    cancelled = asyncio.Event()

    async def job() -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    task = await table.launch_job(job, kind="agent", description="slow", command="c", timeout_s=60)
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    task = await table.stop(task.id, reason="Stopped by TaskStop")
    assert loop.time() - started < 1 and cancelled.is_set()
    assert task.status == "killed" and task.reason == "Stopped by TaskStop"


async def test_timeout_and_failure(table: TaskTable) -> None:
    async def slow() -> str:
        await asyncio.sleep(60)
        return ""

    async def broken() -> str:
        raise RuntimeError("model unreachable")

    timed = await table.launch_job(slow, kind="agent", description="slow", command="c", timeout_s=0.05)
    failed = await table.launch_job(broken, kind="agent", description="broken", command="c", timeout_s=10)
    assert failed.id == "agent-2"
    timed, failed = await table.wait(timed.id, 5), await table.wait(failed.id, 5)
    assert timed.status == "failed" and timed.timed_out and "timeout" in (timed.reason or "")
    assert failed.status == "failed" and "model unreachable" in table.read_tail(failed)[0]


async def test_closing_the_table_cancels_running_jobs(tmp_path: Path) -> None:
    table = TaskTable(tmp_path / "tasks")

    async def job() -> str:
        await asyncio.sleep(60)
        return ""

    task = await table.launch_job(job, kind="agent", description="d", command="c", timeout_s=60)
    await table.aclose()
    assert task.status == "killed" and not task.active
    with pytest.raises(RuntimeError):
        await table.launch_job(job, kind="agent", description="d", command="c", timeout_s=60)
