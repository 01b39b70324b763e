"""Running a subagent: a child core of the root session (`child.SubagentCore`: its prompts are the
model's text, never slash commands, and it cannot change the user's session), its stream
forwarded to the root's.

The child has its own context and wire file (`<session dir>/subagents/<agent_id>/`), its type's
tools and prompt, the root's model (or the one asked for), workspace, hooks and approvals. Its
messages reach the root's stream merged (whole text per step, tool calls with their arguments)
and wrapped in `SubagentEvent`s, so every front end sees them in order; its approval requests go
out unwrapped and name the subagent (`agent_id`, `subagent_type`), so the user answers them as
any other, and so does the internal `ToolStarted` of each of its calls (with its `agent_id`).
Cancelling the tool call cancels the child's turn; closing the child closes its model client. The
final assistant text is the tool result, in Kimi's format.

The user can stop one subagent's current work without the root's turn (`stop`, ACP's `session/cancel`
on the child's session): a foreground child's turn is cancelled and its Agent call ends saying the
user stopped it; a background child's task is stopped as TaskStop does. `WORKING_FOR` names the
child while its turns run (the front ends tell its client calls from the root's by it).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from typing import Any

from ..agent_file import setup
from ..core.agent_core import AgentCore
from ..core.hook_points import ALLOW, HookRunner, HookVerdict
from ..core.turn import INTERNAL_SIGNALS, ToolStarted
from ..errors import APIStatusError, ChatProviderError, SessionError, ToolError
from ..kaos.tasks import TaskElsewhere
from ..plugins import attach as attach_plugins
from ..sessions import child_session
from ..tools.base import ToolContext, tool_error, tool_ok
from ..tools.subagent import AgentParams
from ..wire.file import MessageMerger
from ..wire.serde import to_envelope
from ..wire.types import ApprovalResponse, Request, SubagentEvent, ToolReturnValue, WireEnvelope
from .child import SubagentCore
from .kinds import SubagentKind
from .store import InstanceRecord, SubagentStore, new_agent_id
from .working import USER_STOPPED, USER_STOPPED_BRIEF, WORKING_FOR

log = logging.getLogger(__name__)

FOREGROUND_TIMEOUT_S = 300
BACKGROUND_TIMEOUT_S = 900
TIMEOUT_ENV = "KIMI_FOREGROUND_AGENT_TIMEOUT"
SUMMARY_MIN_CHARS = 200
SUMMARY_PROMPT = (
    "Your last message is too short to be useful to the main agent. Write your final report again, "
    "complete: what you did, what you found (files, functions, commands and their results), and anything "
    "left open."
)
# Points of the root's hooks a subagent does not trigger: they belong to the user's session and turn.
SESSION_LEVEL_HOOKS = frozenset({"SessionStart", "SessionEnd", "UserPromptSubmit", "Stop", "StopFailure"})


class SubagentFailed(ToolError):
    def __init__(self, message: str, brief: str) -> None:
        super().__init__(message)
        self.brief = brief


@dataclass(frozen=True)
class _Run:
    record: InstanceRecord
    kind: SubagentKind
    resumed: bool
    requested_type: str
    model: str | None


class SubagentRunner:
    """Runs the Agent tool's calls for one root session (the `Launcher` in __init__ delegates here)."""

    def __init__(self, root: AgentCore, kinds: dict[str, SubagentKind]) -> None:
        self.root = root
        self.kinds = kinds
        self.store = SubagentStore(root.session.dir)
        self._running: set[str] = set()  # agent ids running in this process
        self._cores: dict[str, SubagentCore] = {}  # agent id -> its core, while its turns run
        self._background: dict[str, str] = {}  # agent id -> the task of its background run
        self._stopped: set[str] = set()  # agent ids the user stopped, until their run ends

    # ------------------------------------------------------------------ running a call (Launcher.run)

    def has_model(self, alias: str) -> bool:
        return alias in self.root.config.models

    def running(self, agent_id: str) -> bool:
        return agent_id in self._running

    async def stop(self, agent_id: str) -> bool:
        """The user stops this subagent's current work; False when it runs nothing in this process."""
        if agent_id not in self._running:
            return False
        task_id = self._background.get(agent_id)
        if task_id is not None:  # its task ends "killed", as TaskStop would leave it
            try:
                await self.root.tasks.stop(task_id, reason=USER_STOPPED_BRIEF)
            except (KeyError, TaskElsewhere):
                return False
            return True
        self._stopped.add(agent_id)  # checked before each of its turns, so none starts after this
        child = self._cores.get(agent_id)
        if child is not None:
            child.cancel()
        return True

    async def run(self, params: AgentParams, ctx: ToolContext) -> ToolReturnValue:
        try:
            run = self._prepare(params)
        except SubagentFailed as exc:
            return tool_error(str(exc), brief=exc.brief)
        if params.run_in_background:
            return await self._start_background(run, params, ctx)
        timeout = _foreground_timeout(params.timeout)
        self._running.add(run.record.agent_id)
        try:
            async with asyncio.timeout(timeout):
                text = await self._run_child(run, params.prompt, ctx.tool_call_id, background=False)
        except TimeoutError:
            self._set_status(run.record, "killed")
            return tool_error(f"Agent timed out after {timeout}s.", brief=f"Agent timed out ({timeout}s)")
        except SubagentFailed as exc:
            return tool_error(str(exc), brief=exc.brief)
        finally:
            self._running.discard(run.record.agent_id)
        return tool_ok(text)

    # ------------------------------------------------------------------ preparing

    def _prepare(self, params: AgentParams) -> _Run:
        if params.resume:
            record = self.store.get(params.resume)
            if record is None:
                raise SubagentFailed(f"Subagent instance not found: {params.resume}", "Agent not found")
            if record.agent_id in self._running:
                raise SubagentFailed(
                    f"Agent instance {record.agent_id} is still running and cannot be resumed concurrently.",
                    "Agent already running",
                )
            kind = self.kinds.get(record.subagent_type)
            if kind is None:
                raise SubagentFailed(
                    f"Subagent {record.agent_id} is of type {record.subagent_type!r}, which this agent no longer has.",
                    "Unknown subagent type",
                )
            model = params.model or record.launch_spec.effective_model
            if model is not None and not self.has_model(model):
                raise SubagentFailed(f"Unknown model alias: {model}", "Invalid model alias")
            return _Run(record, kind, True, params.subagent_type, model)
        kind = self.kinds[params.subagent_type]
        record = self.store.create(
            new_agent_id(), subagent_type=kind.name, description=params.description.strip(), model=params.model,
            work_dir=str(self.root.work_dir),
        )
        return _Run(record, kind, False, params.subagent_type, params.model)

    def _set_status(self, record: InstanceRecord, status: Any, **changes: Any) -> InstanceRecord:
        try:
            return self.store.update(record, status=status, **changes)
        except OSError as exc:
            log.warning("subagent %s: cannot save its status (%s)", record.agent_id, exc)
            return record

    # ------------------------------------------------------------------ running

    async def _run_child(self, run: _Run, prompt: str, parent_call_id: str, *, background: bool) -> str:
        """Run the child's turn (and one summary turn if its answer is too short); the result text."""
        record = self._set_status(run.record, "running_background" if background else "running_foreground")
        agent_id = record.agent_id
        forward = _Forwarder(self.root, parent_call_id, agent_id, run.kind.name)
        child = self._build_child(run, forward, background)
        unsubscribe = child.stream.subscribe(forward)
        self._cores[agent_id] = child
        working = WORKING_FOR.set(agent_id)
        hooks = self.root.hooks
        status = "failed"
        try:
            await hooks.run("SubagentStart", run.kind.name, {"agent_name": run.kind.name, "prompt": prompt[:500]})
            final = await self._turn(child, agent_id, prompt, "running agent")
            if len(final) < SUMMARY_MIN_CHARS:
                final = await self._turn(child, agent_id, SUMMARY_PROMPT, "continuing the agent summary")
            hooks.fire("SubagentStop", run.kind.name, {"agent_name": run.kind.name, "response": final[:500]})
            status = "idle"
        except asyncio.CancelledError:
            status = "killed"
            raise
        finally:
            WORKING_FOR.reset(working)
            self._cores.pop(agent_id, None)
            self._stopped.discard(agent_id)
            forward.flush()
            unsubscribe()
            await child.close()
            self._set_status(record, status)
        return format_result(record, run, final)

    def _build_child(self, run: _Run, forward: _Forwarder, background: bool) -> SubagentCore:
        root = self.root
        spec = run.kind.spec()
        tools = setup(spec).tools
        child = SubagentCore.open(
            session=child_session(root.session, run.record.agent_id),
            loaded_config=root.loaded_config,
            kaos=root.kaos,
            model_alias=run.model or root.controls.model_alias,
            thinking=root.controls.thinking,
            tools=tools,
            system_prompt=spec.prompt_builder(),
            extra_dirs=root.workspace_dirs(),
            sandbox=root.sandbox,  # its commands run in the root session's sandbox
            checkpoints=root.checkpoints,  # its changes are the root turn's, for /undo
            approvals=root.approvals.for_subagent(
                agent_id=run.record.agent_id, subagent_type=run.kind.name, description=run.record.description,
                background=background, send=forward.send_unwrapped,
            ),
        )
        child.hooks = _ChildHooks(root.hooks)
        child.provider_session_id = root.provider_session_id
        child.usage = root.usage  # what it spends is the session's (ACP PromptResponse.usage, the cost)
        attach_plugins(child)  # as in Kimi Code CLI, every agent has the plugins' tools
        return child

    async def _turn(self, child: SubagentCore, agent_id: str, prompt: str, phase: str) -> str:
        if agent_id in self._stopped:
            raise SubagentFailed(USER_STOPPED.format(agent_id=agent_id), USER_STOPPED_BRIEF)
        try:
            result = await child.run_turn(prompt)
        except APIStatusError as exc:
            raise SubagentFailed(f"LLM API error (HTTP {exc.status_code}) when {phase}: {exc}",
                                 f"API error ({exc.status_code})") from None
        except ChatProviderError as exc:
            raise SubagentFailed(f"LLM provider error when {phase}: {exc}", "LLM provider error") from None
        except SessionError as exc:
            raise SubagentFailed(f"The agent could not run when {phase}: {exc}", "Agent run error") from None
        if result.status == "max_steps_reached":
            raise SubagentFailed(
                f"Max steps {result.steps} reached when {phase}. Please try splitting the task into smaller subtasks.",
                "Max steps reached",
            )
        if result.status == "cancelled" and agent_id in self._stopped:
            raise SubagentFailed(USER_STOPPED.format(agent_id=agent_id), USER_STOPPED_BRIEF)
        if result.status == "cancelled":  # its turn was cancelled from elsewhere: not ours to re-raise
            raise SubagentFailed(f"The agent was cancelled when {phase}.", "Agent cancelled")
        history = child.context.history
        last = history[-1] if history else None
        if last is None or last.role != "assistant" or not last.text().strip():
            raise SubagentFailed("The agent finished without a final message.", "Empty agent output")
        return last.text()

    async def _start_background(self, run: _Run, params: AgentParams, ctx: ToolContext) -> ToolReturnValue:
        table = self.root.tasks
        timeout = params.timeout or BACKGROUND_TIMEOUT_S
        agent_id = run.record.agent_id
        self._running.add(agent_id)

        async def job() -> str:
            try:
                return await self._run_child(run, params.prompt, ctx.tool_call_id, background=True)
            finally:
                self._running.discard(agent_id)
                self._background.pop(agent_id, None)

        try:
            task = await table.launch_job(
                job, kind="agent", description=params.description.strip() or run.kind.name,
                command=f"{run.kind.name} subagent {agent_id}", timeout_s=timeout,
            )
        except RuntimeError as exc:
            self._running.discard(agent_id)
            return tool_error(f"Cannot start a background agent: {exc}", brief="Background agent failed")
        self._background[agent_id] = task.id
        self._set_status(run.record, "running_background", last_task_id=task.id)
        text = "\n".join([
            f"task_id: {task.id}", f"agent_id: {agent_id}", f"resumed: {str(run.resumed).lower()}",
            f"actual_subagent_type: {run.kind.name}", "status: running", "",
            "The agent runs in the background; you are told when it finishes. Read its report with "
            f"TaskOutput(task_id=\"{task.id}\").",
        ])
        return tool_ok(text, message="Background agent started.", brief=f"Started {task.id}", display=[task.display_block()])


def format_result(record: InstanceRecord, run: _Run, final: str) -> str:
    """Kimi's result text: the ids first (the model resumes by agent_id), then the report."""
    lines = [f"agent_id: {record.agent_id}", f"resumed: {str(run.resumed).lower()}"]
    if run.resumed and run.requested_type and run.requested_type != run.kind.name:
        lines.append(f"requested_subagent_type: {run.requested_type}")
    lines += [f"actual_subagent_type: {run.kind.name}", "status: completed", "", "[summary]", final]
    return "\n".join(lines)


def _foreground_timeout(requested: int | None) -> int | None:
    """The call's timeout, else $KIMI_FOREGROUND_AGENT_TIMEOUT, else 300 s; 0 means none."""
    if requested is not None:
        return requested or None
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if raw:
        try:
            value = int(raw)
            return value if value > 0 else None
        except ValueError:
            log.warning("ignoring %s=%r: not a number of seconds", TIMEOUT_ENV, raw)
    return FOREGROUND_TIMEOUT_S


class _Forwarder:
    """The child's stream into the root's: merged, wrapped, requests passed through as they are."""

    def __init__(self, root: AgentCore, parent_call_id: str, agent_id: str, subagent_type: str) -> None:
        self._send = root.stream.send
        self._merger = MessageMerger()
        self.parent_call_id, self.agent_id, self.subagent_type = parent_call_id, agent_id, subagent_type

    def __call__(self, message: Any) -> None:
        if isinstance(message, ToolStarted):
            self._started(message)
            return
        if isinstance(message, INTERNAL_SIGNALS):
            return
        if isinstance(message, (Request, ApprovalResponse)):
            self.send_unwrapped(message)
            return
        for merged, _ in self._merger.feed(message):
            self._wrap(merged)

    def send_unwrapped(self, message: Any) -> None:
        """A request (or its answer) the user must see as such: after everything before it."""
        self.flush()
        self._send(message)

    def flush(self) -> None:
        for merged, _ in self._merger.flush():
            self._wrap(merged)

    def _started(self, message: ToolStarted) -> None:
        """One of the child's calls runs: said on the root's stream with the child's id, after the
        call itself (another call still streaming is left to finish)."""
        if self._merger.holds_call(message.tool_call_id):
            self.flush()
        self._send(ToolStarted(message.tool_call_id, agent_id=self.agent_id))

    def _wrap(self, message: Any) -> None:
        envelope = WireEnvelope.model_validate(to_envelope(message))
        self._send(SubagentEvent(
            parent_tool_call_id=self.parent_call_id, agent_id=self.agent_id, subagent_type=self.subagent_type,
            event=envelope,
        ))


class _ChildHooks:
    """The root's hooks as a subagent sees them: its tool and compaction points run, the points of
    the user's session and turn do not, and what it fires is settled by the root's turn."""

    def __init__(self, root: HookRunner) -> None:
        self._root = root

    async def run(self, event: str, target: str, payload: dict[str, Any]) -> HookVerdict:
        if event in SESSION_LEVEL_HOOKS:
            return ALLOW
        return await self._root.run(event, target, payload)

    def fire(self, event: str, target: str, payload: dict[str, Any]) -> None:
        if event not in SESSION_LEVEL_HOOKS:
            self._root.fire(event, target, payload)

    async def settle(self, *, cancel: bool = False) -> None:
        return None
