"""Background Shell tasks and TaskList / TaskOutput / TaskStop against a real TaskTable."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pydantic
import pytest

from kimi_acp.kaos import tasks as tasks_mod
from kimi_acp.kaos.tasks import TaskTable
from kimi_acp.tools.base import ToolContext
from kimi_acp.tools.shell import Shell
from kimi_acp.tools.tasks import TaskList, TaskOutput, TaskStop
from tests.support.processes import live_pids, pid_alive, sleep_marker, wait_until

if TYPE_CHECKING:
    from .conftest import FakeApprover


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[TaskTable]:
    (tmp_path / "session").mkdir()  # the session folder exists (sessions.create); the table makes only tasks/
    t = TaskTable(tmp_path / "session" / "tasks")
    yield t
    await t.aclose()


@pytest.fixture
def tctx(ctx: ToolContext, table: TaskTable) -> ToolContext:
    return replace(ctx, tasks=table)


async def run(tool, ctx: ToolContext, **arguments):  # type: ignore[no-untyped-def]
    return await tool.run(tool.params.model_validate(arguments), ctx)


def task_id_of(output: str) -> str:
    return next(line.split(": ", 1)[1] for line in output.splitlines() if line.startswith("task_id: "))


def test_params() -> None:
    with pytest.raises(pydantic.ValidationError):  # background needs a description
        Shell.params.model_validate({"command": "sleep 1", "run_in_background": True})
    ok = Shell.params.model_validate({"command": "x", "run_in_background": True, "description": "d", "timeout": 3600})
    assert ok.timeout == 3600
    out = TaskOutput.params.model_validate({"task_id": "t"})
    assert (out.block, out.timeout) == (False, 30)
    lst = TaskList.params.model_validate({})
    assert (lst.active_only, lst.limit) == (True, 20)
    assert TaskStop.params.model_validate({"task_id": "t"}).reason == "Stopped by TaskStop"


async def test_background_runs_lists_and_reads(tctx: ToolContext, approver: FakeApprover, table: TaskTable) -> None:
    result = await run(Shell(), tctx, command="echo hello; echo oops >&2; sleep 0", run_in_background=True, description="greet")
    assert not result.is_error and result.message == "Background task started."
    (req,) = approver.requests
    assert req.action == "run background command"
    task_id = task_id_of(str(result.output))
    out = await run(TaskOutput(), tctx, task_id=task_id, block=True, timeout=5)
    text = str(out.output)
    assert "retrieval_status: success" in text and "status: completed" in text and "exit_code: 0" in text
    assert text.endswith("[output]\nhello\noops")
    assert (await run(TaskList(), tctx)).output == "No active background tasks."
    listed = str((await run(TaskList(), tctx, active_only=False)).output)
    assert f"task_id: {task_id}" in listed and "description: greet" in listed
    note = table.take_finished_note()
    assert note is not None and task_id in note and "completed" in note
    assert table.take_finished_note() is None  # told once


async def test_not_ready_then_stop_kills_group(tctx: ToolContext, approver: FakeApprover) -> None:
    marker = sleep_marker()
    result = await run(Shell(), tctx, command=f"sleep {marker} & sleep {marker}; wait", run_in_background=True,
                       description="sleepers")
    task_id = task_id_of(str(result.output))
    assert await wait_until(lambda: len(live_pids(marker)) >= 2)
    out = await run(TaskOutput(), tctx, task_id=task_id)
    assert "retrieval_status: not_ready" in str(out.output)
    out = await run(TaskOutput(), tctx, task_id=task_id, block=True, timeout=0)
    assert "retrieval_status: timeout" in str(out.output)
    assert task_id in str((await run(TaskList(), tctx)).output)
    stopped = await run(TaskStop(), tctx, task_id=task_id, reason="done with it")
    assert not stopped.is_error and "status: killed" in str(stopped.output)
    assert approver.requests[-1].action == "stop background task"
    assert await wait_until(lambda: not live_pids(marker))


async def test_close_kills_running_and_leftover_children(ctx: ToolContext, tmp_path: Path) -> None:
    table = TaskTable(tmp_path / "t")
    marker = sleep_marker()
    task = await table.launch(f"sleep {marker}", cwd=tmp_path, description="d", timeout_s=60)
    assert task.pid is not None and pid_alive(task.pid)
    await table.aclose()
    assert task.status == "killed" and task.interrupted
    assert await wait_until(lambda: not live_pids(marker))
    with pytest.raises(RuntimeError):
        await table.launch("true", cwd=tmp_path, description="d", timeout_s=1)


async def test_timeout_kills(table: TaskTable, tmp_path: Path) -> None:
    marker = sleep_marker()
    task = await table.launch(f"sleep {marker}", cwd=tmp_path, description="d", timeout_s=0.3)
    await table.wait(task.id, 5)
    assert task.status == "failed" and task.timed_out
    assert await wait_until(lambda: not live_pids(marker))


async def test_log_is_bounded(table: TaskTable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks_mod, "MAX_LOG_BYTES", 1000)
    task = await table.launch("for i in $(seq 1 2000); do echo line$i; done", cwd=tmp_path, description="d",
                             timeout_s=10)
    await table.wait(task.id, 10)
    size = task.output_path.stat().st_size
    assert size <= 2000 + (64 << 10) and task.dropped_bytes > 0
    assert task.output_path.read_text().endswith("line2000\n")
    text, _, truncated = table.read_tail(task)
    assert truncated and text.endswith("line2000\n")


async def test_errors(tctx: ToolContext, ctx: ToolContext, approver: FakeApprover) -> None:
    out = await run(TaskOutput(), tctx, task_id="nope")
    assert out.is_error and out.message == "Task not found: nope"
    stop = await run(TaskStop(), tctx, task_id="nope")
    assert stop.is_error and approver.requests == []
    no_table = await run(TaskList(), ctx)
    assert no_table.is_error


async def test_stop_blocked_in_plan_mode(tctx: ToolContext, table: TaskTable, tmp_path: Path) -> None:
    class Plan:
        plan_mode = True

    task = await table.launch("sleep 5", cwd=tmp_path, description="d", timeout_s=10)
    res = await run(TaskStop(), replace(tctx, plan=Plan()), task_id=task.id)  # type: ignore[arg-type]
    assert res.is_error and res.message == "TaskStop is not available in plan mode."
    assert task.active
    await asyncio.sleep(0)


# ------------------------------------------------------------------ tasks of earlier processes


async def test_a_reopened_session_lists_and_reads_the_tasks_it_ran_before(
    tctx: ToolContext, table: TaskTable, tmp_path: Path
) -> None:
    started = await run(Shell(), tctx, command="echo earlier-output; exit 3", run_in_background=True, description="old")
    task_id = task_id_of(str(started.output))
    await table.wait(task_id, 5)
    await table.aclose()  # the process exits

    later = TaskTable(table.directory)  # the next process's table of the session
    try:
        task = later.get(task_id)
        assert task is not None and (task.status, task.exit_code, task.description) == ("failed", 3, "old")
        assert "earlier-output" in later.read_tail(task)[0]
        assert [t.id for t in later.list(active_only=False)] == [task_id]
        assert later.take_finished_note() is None  # history, not news
        ctx = replace(tctx, tasks=later)
        listed = await run(TaskList(), ctx, active_only=False)
        assert f"{task_id}" in str(listed.output) and "failed" in str(listed.output)
        output = await run(TaskOutput(), ctx, task_id=task_id)
        assert "earlier-output" in str(output.output)
        fresh = await later.launch("true", cwd=tmp_path, description="new", timeout_s=5)
        assert fresh.id != task_id  # ids go on after the earlier ones
    finally:
        await later.aclose()


async def test_a_task_whose_process_died_is_lost_and_one_running_elsewhere_is_left_alone(
    tmp_path: Path, tctx: ToolContext, approver: FakeApprover
) -> None:
    directory = tmp_path / "other" / "tasks"
    directory.parent.mkdir()  # the other process's session folder
    marker = sleep_marker()
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from kimi_acp.kaos.tasks import TaskTable\n"
        "async def main():\n"
        f"    table = TaskTable(Path({str(directory)!r}))\n"
        f"    await table.launch('sleep {marker}', cwd=Path('.'), description='long', timeout_s=60)\n"
        "    print('started', flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    record: dict = {}
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "started"
        record = json.loads((directory / "bash-1.json").read_text())
        assert (record["status"], record["owner_pid"]) == ("running", owner.pid)

        while_alive = TaskTable(directory)
        task = while_alive.get("bash-1")
        assert task is not None and task.status == "running" and task.elsewhere
        stop = await run(TaskStop(), replace(tctx, tasks=while_alive), task_id="bash-1")
        assert stop.is_error and f"another kimi process (pid {owner.pid})" in stop.message
        assert approver.requests == []  # nobody asked to approve what cannot be done
        await while_alive.aclose()
        assert live_pids(marker)  # closing our table did not touch it

        owner.send_signal(signal.SIGKILL)  # the owner crashes
        owner.wait(5)
        after_crash = TaskTable(directory)
        task = after_crash.get("bash-1")
        assert task is not None and task.status == "lost" and task.reason == tasks_mod.LOST_REASON
        assert not task.active and not task.elsewhere
    finally:
        owner.kill()
        owner.wait(5)
        if record.get("pid"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record["pid"], signal.SIGKILL)  # the orphaned command of the crashed owner
        assert await wait_until(lambda: not live_pids(marker))


def test_unreadable_task_records_are_ignored(tmp_path: Path) -> None:
    directory = tmp_path / "tasks"
    directory.mkdir()
    (directory / "bash-1.json").write_text("{not json")
    (directory / "bash-2.json").write_text('{"id": "bash-9", "status": "completed"}')  # names another task
    (directory / "bash-3.json").write_text('{"id": "bash-3", "status": "exploded"}')
    table = TaskTable(directory)
    assert [t.id for t in table.list(active_only=False)] == ["bash-3"]
    assert table.get("bash-3").status == "lost"  # type: ignore[union-attr]
