"""TaskList, TaskOutput, TaskStop: the model's view of the session's background tasks (kimi_acp/kaos/tasks.py)."""

from __future__ import annotations

from pydantic import Field

from ..kaos.tasks import TERMINAL, BackgroundTask, TaskElsewhere, TaskTable
from ..wire.types import ToolReturnValue
from .base import Params, Tool, ToolContext, tool_error, tool_ok

STOP_ACTION = "stop background task"
READ_HINT_LINES = 300


def _table(ctx: ToolContext) -> TaskTable | ToolReturnValue:
    if ctx.tasks is None:
        return tool_error("Background tasks can only be managed by the root agent.",
                          brief="Background task unavailable")
    return ctx.tasks


def _not_found(task_id: str) -> ToolReturnValue:
    return tool_error(f"Task not found: {task_id}", brief="Task not found")


class TaskListParams(Params):
    active_only: bool = Field(default=True, description="Whether to list only non-terminal background tasks.")
    limit: int = Field(default=20, ge=1, le=100, description="Maximum number of tasks to return.")


class TaskList(Tool[TaskListParams]):
    name = "TaskList"
    description = (
        "List the background tasks of this session (started with `run_in_background=true` by `Shell` or `Agent`): "
        "their ids, status, description and command. By default only tasks still running are listed; "
        "set `active_only=false` to include finished ones. Use TaskOutput to read a task's output."
    )
    params = TaskListParams

    async def run(self, params: TaskListParams, ctx: ToolContext) -> ToolReturnValue:
        table = _table(ctx)
        if not isinstance(table, TaskTable):
            return table
        tasks = table.list(active_only=params.active_only, limit=params.limit)
        if not tasks:
            text = "No active background tasks." if params.active_only else "No background tasks."
        else:
            text = "\n\n".join(t.summary() for t in tasks)
        return tool_ok(text, message="Task list retrieved.", display=[t.display_block() for t in tasks])


class TaskOutputParams(Params):
    task_id: str = Field(description="The background task ID to inspect.")
    block: bool = Field(default=False, description="Whether to wait for the task to finish before returning.")
    timeout: int = Field(default=30, ge=0, le=3600, description="Maximum number of seconds to wait when block=true.")


class TaskOutput(Tool[TaskOutputParams]):
    name = "TaskOutput"
    description = (
        "Read the status and the latest output of a background task. With `block=true` it waits up to "
        "`timeout` seconds for the task to finish first. Only the end of the output is shown; the full "
        "(bounded) log is at `output_path` and can be paged with ReadFile."
    )
    params = TaskOutputParams

    async def run(self, params: TaskOutputParams, ctx: ToolContext) -> ToolReturnValue:
        table = _table(ctx)
        if not isinstance(table, TaskTable):
            return table
        task = table.get(params.task_id)
        if task is None:
            return _not_found(params.task_id)
        if params.block:
            task = await table.wait(params.task_id, params.timeout)
        finished = task.status in TERMINAL
        retrieval = "success" if finished else ("timeout" if params.block else "not_ready")
        return tool_ok(
            _format_output(table, task, retrieval), message="Task output retrieved.", display=[task.display_block()]
        )


def _format_output(table: TaskTable, task: BackgroundTask, retrieval: str) -> str:
    text, size, truncated = table.read_tail(task)
    path = str(task.output_path.resolve())
    lines = [
        f"retrieval_status: {retrieval}",
        task.summary(),
        f"interrupted: {str(task.interrupted).lower()}",
        f"timed_out: {str(task.timed_out).lower()}",
        f"terminal_reason: {'timed_out' if task.timed_out else task.status}",
        "",
        f"output_path: {path}",
        f"output_size_bytes: {size}",
        f"output_truncated: {str(truncated).lower()}",
        f'full_output_hint: Use ReadFile(path="{path}", line_offset=1, n_lines={READ_HINT_LINES}) to inspect the full log.',
        "",
        "[output]",
    ]
    body = text.rstrip("\n") or "[no output available]"
    if truncated:
        body = f"[Truncated. Full output: {path}]\n\n{body}"
    return "\n".join([*lines, body])


class TaskStopParams(Params):
    task_id: str = Field(description="The background task ID to stop.")
    reason: str = Field(default="Stopped by TaskStop", description="Short reason recorded when the task is stopped.")


class TaskStop(Tool[TaskStopParams]):
    name = "TaskStop"
    description = (
        "Stop a running background task: its command and every process it started are killed. "
        "The user approves each stop. Not available in plan mode."
    )
    params = TaskStopParams

    async def run(self, params: TaskStopParams, ctx: ToolContext) -> ToolReturnValue:
        table = _table(ctx)
        if not isinstance(table, TaskTable):
            return table
        if ctx.plan is not None and ctx.plan.plan_mode:
            return tool_error("TaskStop is not available in plan mode.", brief="Blocked in plan mode")
        task = table.get(params.task_id)
        if task is None:
            return _not_found(params.task_id)
        if task.elsewhere:  # asked before anyone is asked to approve what cannot be done
            return tool_error(TaskElsewhere.message(task), brief="Runs in another process")
        await ctx.approve(
            action=STOP_ACTION, description=f"Stop background task `{params.task_id}`", display=[task.display_block()]
        )
        try:
            task = await table.stop(params.task_id, reason=params.reason.strip() or "Stopped by TaskStop")
        except TaskElsewhere as exc:  # it was seen running there only now
            return tool_error(str(exc), brief="Runs in another process")
        return tool_ok(task.summary(), message="Task stop requested.", display=[task.display_block()])
