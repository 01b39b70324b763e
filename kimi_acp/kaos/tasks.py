"""A session's background tasks (`Shell` with `run_in_background`): start, list, read, stop.

The core owns one `TaskTable` per session and keeps it in `core.services`, so the table is a
`TurnService`: tasks outlive the turn that started them, and closing the session (ACP
session/close, `kimi acp` exiting, Wire stdin EOF / SIGTERM) kills every task's whole process
group. Each command runs locally in a process group of its own (also when an ACP client offers
terminals: a client terminal belongs to one tool call). Its merged stdout/stderr goes to
`<session dir>/tasks/<id>.log`, kept bounded: past `2 * MAX_LOG_BYTES` only the last
`MAX_LOG_BYTES` are kept. A task that finished is reported once to the model before its next
step (`take_finished_note`); front ends that show tasks hear of each end through `on_end`, and
of each piece of a command's output, once it is in the log, through `on_output`.

Each task also has `<id>.json`: what it is, its state, and the pid of the kimi process running it,
rewritten (atomically) when it starts and when it ends. A later process reads these, so a session
reopened after a restart still lists its tasks with their output, and a card replayed in the IDE
shows how its task ended, or `lost` when the process that ran it exited first (a crash).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ToolError
from ..util.fs import atomic_write_text, make_dirs_below, open_private
from ..wire.types import BackgroundTaskDisplayBlock
from .base import CommandSandbox
from .local import start_shell_command
from .process_group import DRAIN_AFTER_KILL_S, close_transport, killpg, wait_exit

log = logging.getLogger(__name__)

MAX_LOG_BYTES = 1 << 20  # what is kept of a task's output on disk
PREVIEW_BYTES = 32 << 10  # what TaskOutput shows (the end of the log)
TERM_GRACE_S = 1.0
PIPE_GRACE_S = 0.5

Status = Literal["running", "completed", "failed", "killed", "lost"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "killed", "lost"})
LOST_REASON = "Its kimi process exited while it ran"
_RECORD_FIELDS = ("id", "kind", "command", "description", "status", "exit_code", "timed_out", "reason",
                  "started_at", "ended_at", "timeout_s", "pid")


@dataclass
class BackgroundTask:
    id: str
    command: str
    description: str
    output_path: Path
    timeout_s: float
    kind: str = "bash"
    status: Status = "running"
    exit_code: int | None = None
    timed_out: bool = False
    interrupted: bool = False
    reason: str | None = None
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    dropped_bytes: int = 0  # output cut from the front of the log to keep it bounded
    pid: int | None = None
    owner_pid: int | None = None  # another kimi process that runs it (read from its record); None: this one
    sandbox: str | None = None  # the sandbox it runs in ("bubblewrap", ...); None: unconfined
    _proc: asyncio.subprocess.Process | None = field(default=None, repr=False)
    _runner: asyncio.Task[None] | None = field(default=None, repr=False)
    _done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _noted: bool = field(default=False, repr=False)
    _announced: bool = field(default=False, repr=False)  # its end was told to the `on_end` listeners

    @property
    def active(self) -> bool:
        return self.status not in TERMINAL

    def display_block(self) -> BackgroundTaskDisplayBlock:
        """The task as clients draw it (Kimi's `background_task` display block; ACP cards show it too)."""
        return BackgroundTaskDisplayBlock(task_id=self.id, kind=self.kind, status=self.status, description=self.description)

    @property
    def elsewhere(self) -> bool:
        """Running in another kimi process (which has the session open too): only it can stop it."""
        return self.owner_pid is not None and self.active

    def summary(self, *, include_command: bool = True) -> str:
        lines = [f"task_id: {self.id}", f"kind: {self.kind}", f"status: {self.status}",
                 f"description: {self.description}"]
        if include_command:
            lines.append(f"command: {self.command}")
        if self.exit_code is not None:
            lines.append(f"exit_code: {self.exit_code}")
        if self.reason:
            lines.append(f"reason: {self.reason}")
        return "\n".join(lines)


class TaskElsewhere(ToolError):
    """The task runs in another kimi process that has the session open; only that one can stop it."""

    @staticmethod
    def message(task: BackgroundTask) -> str:
        return f"Task {task.id} runs in another kimi process (pid {task.owner_pid}); stop it there."


class TaskTable:
    """The background tasks of one session (a core `TurnService`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._tasks: dict[str, BackgroundTask] = {}
        self._closed = False
        self._end_listeners: list[Callable[[BackgroundTask], None]] = []
        self._output_listeners: list[Callable[[BackgroundTask, bytes], None]] = []
        self._past_read = False  # the records of earlier processes' tasks, read on first use

    # -------------------------------------------------------------- TurnService

    async def before_turn(self, send: Callable[[Any], None]) -> None:
        return None

    async def aclose(self) -> None:
        """The session closes: kill every task's process group and wait for the runners."""
        self._closed = True
        for task in list(self._tasks.values()):
            if task.owner_pid is None:  # not another process's
                await self._kill(task, reason="Session closed", interrupted=True)

    # -------------------------------------------------------------- operations (not `start`: front ends call a service's start())

    async def launch(
        self,
        command: str,
        *,
        cwd: Path,
        description: str,
        timeout_s: float,
        sandbox: CommandSandbox | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> BackgroundTask:
        """Start `command` (inside `sandbox` when given, with `extra_env` added) as a task of this session."""
        if self._closed:
            raise RuntimeError("the session is closing")
        make_dirs_below(self.directory.parent, self.directory)  # never re-creates a deleted session
        task_id = self._next_id()
        task = BackgroundTask(task_id, command, description, self.directory / f"{task_id}.log", timeout_s)
        open_private(task.output_path, "wb").close()  # 0600 from the start: it holds command output
        task.sandbox = sandbox.name if sandbox is not None else None
        proc = await start_shell_command(command, cwd=cwd, sandbox=sandbox, extra_env=extra_env)
        task._proc, task.pid = proc, proc.pid
        self._tasks[task_id] = task
        self._save(task)
        task._runner = asyncio.create_task(self._run(task, proc))
        log.debug("background task %s: pid %s %r", task_id, proc.pid, command)
        return task

    async def launch_job(
        self, job: Callable[[], Awaitable[str]], *, kind: str, description: str, command: str, timeout_s: float
    ) -> BackgroundTask:
        """A task that is a coroutine of this process (a background subagent): its returned text is
        its output; stopping it or its timeout cancels it. An exception fails it with its message."""
        if self._closed:
            raise RuntimeError("the session is closing")
        make_dirs_below(self.directory.parent, self.directory)  # never re-creates a deleted session
        task_id = self._next_id(kind)
        task = BackgroundTask(task_id, command, description, self.directory / f"{task_id}.log", timeout_s, kind=kind)
        open_private(task.output_path, "wb").close()  # 0600 from the start: it holds command output
        self._tasks[task_id] = task
        self._save(task)
        task._runner = asyncio.create_task(self._run_job(task, job))
        return task

    def _next_id(self, kind: str = "bash") -> str:
        """`bash-<n>` (`agent-<n>`): the first number with no task and no log yet (a reopened session
        keeps its old logs). Predictable, so scripted test models can name the task."""
        self._read_past()
        n = len(self._tasks) + 1
        while f"{kind}-{n}" in self._tasks or (self.directory / f"{kind}-{n}.log").exists():
            n += 1
        return f"{kind}-{n}"

    def on_end(self, listener: Callable[[BackgroundTask], None]) -> Callable[[], None]:
        """Call `listener(task)` once when a task ends (its output complete); returns the unsubscribe."""
        self._end_listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._end_listeners:
                self._end_listeners.remove(listener)

        return unsubscribe

    def on_output(self, listener: Callable[[BackgroundTask, bytes], None]) -> Callable[[], None]:
        """Call `listener(task, data)` with each piece of a command's output, right after it was
        written to the log (so the log holds exactly what was told); returns the unsubscribe."""
        self._output_listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._output_listeners:
                self._output_listeners.remove(listener)

        return unsubscribe

    def get(self, task_id: str) -> BackgroundTask | None:
        self._read_past()
        task = self._tasks.get(task_id)
        if task is not None and task.elsewhere:  # it may have ended there since
            task = self._reread(task)
        return task

    def list(self, *, active_only: bool = True, limit: int = 20) -> list[BackgroundTask]:
        self._read_past()
        for task in [t for t in self._tasks.values() if t.elsewhere]:
            self._reread(task)
        tasks = [t for t in self._tasks.values() if t.active or not active_only]
        return sorted(tasks, key=lambda t: t.started_at, reverse=True)[:limit]

    async def wait(self, task_id: str, timeout_s: float) -> BackgroundTask:
        self._read_past()
        task = self._tasks[task_id]
        if task.active and timeout_s > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(task._done.wait(), timeout_s)
        return task

    async def stop(self, task_id: str, *, reason: str) -> BackgroundTask:
        """Kill the task. Raises `TaskElsewhere` for a task another kimi process runs."""
        self._read_past()
        task = self._tasks[task_id]
        if task.elsewhere:
            raise TaskElsewhere(TaskElsewhere.message(task))
        await self._kill(task, reason=reason, interrupted=False)
        return task

    def read_tail(self, task: BackgroundTask, limit: int = PREVIEW_BYTES) -> tuple[str, int, bool]:
        """The end of the task's log: (text, size of the log in bytes, whether earlier output exists)."""
        try:
            with task.output_path.open("rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - limit))
                data = f.read()
        except OSError:
            return "", 0, False
        return data.decode("utf-8", errors="replace"), size, size > limit or task.dropped_bytes > 0

    def take_finished_note(self) -> str | None:
        """Tasks that ended since the model was last told, as one system reminder (None if none)."""
        ended = [t for t in self._tasks.values() if not t.active and not t._noted]
        if not ended:
            return None
        lines = []
        for task in ended:
            task._noted = True
            detail = f"exit code {task.exit_code}" if task.exit_code is not None else (task.reason or task.status)
            if task.sandbox and task.status == "failed":
                detail += f"; it ran in the {task.sandbox} sandbox (see TaskOutput: it may have failed because of it)"
            lines.append(f"- {task.id} ({task.description}): {task.status}, {detail}")
        return (
            "<system-reminder>Background tasks finished since your last step:\n"
            + "\n".join(lines)
            + "\nUse TaskOutput to read their output.</system-reminder>"
        )

    # -------------------------------------------------------------- records

    def _save(self, task: BackgroundTask) -> None:
        record = {name: getattr(task, name) for name in _RECORD_FIELDS}
        record["owner_pid"] = os.getpid()
        try:
            atomic_write_text(self.directory / f"{task.id}.json", json.dumps(record, ensure_ascii=False), make_parents=False)
        except OSError as exc:  # the task runs on; only a later process would miss its state
            log.warning("background task %s: could not record its state: %s", task.id, exc)

    def _read_past(self) -> None:
        """Tasks earlier processes ran in this session: their state as recorded, `lost` if their
        process is gone while the record still says running. Told to nobody: they are history."""
        if self._past_read:
            return
        self._past_read = True
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return
        for path in paths:
            task = _read_record(path, self.directory)
            if task is not None and task.id not in self._tasks:
                self._tasks[task.id] = task

    def _reread(self, task: BackgroundTask) -> BackgroundTask:
        fresh = _read_record(self.directory / f"{task.id}.json", self.directory)
        if fresh is None:
            return task
        self._tasks[task.id] = fresh
        return fresh

    # -------------------------------------------------------------- internals

    async def _run(self, task: BackgroundTask, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        reader = asyncio.create_task(self._drain(task, proc.stdout))
        try:
            if not await wait_exit(proc, task.timeout_s):
                task.timed_out = True
                task.reason = f"Killed by timeout ({int(task.timeout_s)}s)"
                await _kill_group(proc)
            # the shell is gone; children that kept the pipe open get a moment, then the group dies
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), PIPE_GRACE_S)
            if not reader.done():
                killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(reader), DRAIN_AFTER_KILL_S)
        except asyncio.CancelledError:
            killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(asyncio.CancelledError):
                await wait_exit(proc, DRAIN_AFTER_KILL_S)
            raise
        finally:
            reader.cancel()
            close_transport(proc)
            self._finish(task, proc.returncode)

    async def _run_job(self, task: BackgroundTask, job: Callable[[], Awaitable[str]]) -> None:
        returncode: int | None = 1
        try:
            output = await asyncio.wait_for(job(), task.timeout_s)
            _append(task.output_path, output)
            returncode = 0
        except TimeoutError:
            task.timed_out = True
            task.reason = f"Killed by timeout ({int(task.timeout_s)}s)"
            returncode = None
        except asyncio.CancelledError:
            task.reason = task.reason or "Cancelled"
            returncode = None
        except Exception as exc:
            _append(task.output_path, f"{type(exc).__name__}: {exc}")
            task.reason = str(exc) or type(exc).__name__
            task.status = "failed"
        finally:
            self._finish(task, returncode)

    def _finish(self, task: BackgroundTask, returncode: int | None) -> None:
        if task.active:
            if task.timed_out:
                task.status = "failed"
            elif task.interrupted or task.reason:
                task.status = "killed"
            else:
                task.status = "completed" if returncode == 0 else "failed"
            if returncode is not None and returncode >= 0:
                task.exit_code = returncode
            elif returncode is not None and not task.reason:
                task.reason = f"Terminated by signal {-returncode}"
        task.ended_at = task.ended_at or time.time()
        task._proc = None
        task._done.set()
        self._save(task)
        if not task._announced:
            task._announced = True
            for listener in list(self._end_listeners):
                try:
                    listener(task)
                except Exception:
                    log.exception("background task %s: an end listener failed", task.id)

    async def _kill(self, task: BackgroundTask, *, reason: str, interrupted: bool) -> None:
        proc, runner = task._proc, task._runner
        if task.active:
            task.reason, task.interrupted = reason, interrupted
        if proc is not None:
            await _kill_group(proc)
        elif runner is not None:
            runner.cancel()  # a job of this process: cancelled at once
        if runner is not None and not runner.done():
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(runner), DRAIN_AFTER_KILL_S + PIPE_GRACE_S + 1)
            if not runner.done():
                runner.cancel()
                with contextlib.suppress(BaseException):
                    await runner
        if task.active and (runner is None or runner.done()):
            self._finish(task, None)  # e.g. a job cancelled before it ever ran

    async def _drain(self, task: BackgroundTask, stream: asyncio.StreamReader) -> None:
        written = 0
        with task.output_path.open("ab") as f:
            while True:
                chunk = await stream.read(64 << 10)
                if not chunk:
                    return
                f.write(chunk)
                f.flush()
                for listener in list(self._output_listeners):
                    try:
                        listener(task, chunk)
                    except Exception:
                        log.exception("background task %s: an output listener failed", task.id)
                written += len(chunk)
                if written > 2 * MAX_LOG_BYTES:
                    written = _keep_tail(f, task)


def _read_record(path: Path, directory: Path) -> BackgroundTask | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        task = BackgroundTask(
            id=str(data["id"]), command=str(data.get("command") or ""),
            description=str(data.get("description") or ""), output_path=directory / f"{data['id']}.log",
            timeout_s=float(data.get("timeout_s") or 0), kind=str(data.get("kind") or "bash"),
        )
        status = data.get("status")
        task.status = status if status in TERMINAL or status == "running" else "lost"
        task.exit_code = data["exit_code"] if isinstance(data.get("exit_code"), int) else None
        task.timed_out = bool(data.get("timed_out"))
        task.reason = data.get("reason") if isinstance(data.get("reason"), str) else None
        task.started_at = float(data.get("started_at") or 0)
        task.ended_at = float(data["ended_at"]) if data.get("ended_at") else None
        task.pid = data["pid"] if isinstance(data.get("pid"), int) else None  # its process group, for a person
        owner = data.get("owner_pid")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s: not a task record (%s); ignored", path, exc)
        return None
    if path.stem != task.id:
        return None
    if task.status == "running":
        if isinstance(owner, int) and _alive(owner):  # this pid too: another table of the session here
            task.owner_pid = owner
        else:
            task.status, task.reason = "lost", LOST_REASON
    task._noted = task._announced = True  # history: its end is nobody's news here
    task._done.set()
    return task


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists; we may not signal it
    return True


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, then SIGKILL it (also when the shell already left children behind)."""
    killpg(proc.pid, signal.SIGTERM)
    await wait_exit(proc, TERM_GRACE_S)
    killpg(proc.pid, signal.SIGKILL)
    await wait_exit(proc, DRAIN_AFTER_KILL_S)


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(text[-MAX_LOG_BYTES:])


def _keep_tail(f: Any, task: BackgroundTask) -> int:
    """Cut the log open in `f` down to its last MAX_LOG_BYTES; returns the new size."""
    f.flush()
    with task.output_path.open("rb") as r:
        r.seek(0, 2)
        size = r.tell()
        r.seek(size - MAX_LOG_BYTES)
        tail = r.read()
    f.seek(0)
    f.truncate()
    f.write(tail)
    f.flush()
    task.dropped_bytes += size - len(tail)
    return len(tail)
