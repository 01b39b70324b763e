"""Subagents as child sessions, for a client that advertised `clientCapabilities.subagents`.

Each subagent the Agent tool runs is an ACP session of its own, `<parent id>/subagents/<agent id>`:
its context lives in that folder of the parent session, so a reload finds the same id (and no real
session id, which never holds a `/`, can be mistaken for it). Following the schema's upsert rules:

- a `subagent_update` on the parent announces it before any of its traffic (its title: the Agent
  call's description; its type; `cwd`; state `running`; `capabilities.cancel`); later ones patch
  only the state: `running` for each run, `requires_action` while a permission request of it is
  open, `idle` with the stop reason when the run ends;
- its messages, thoughts, tool cards, plans and permission requests go out under its own id, from
  an `UpdateMapper` of its own; its client calls (files, terminals) carry its id too (`client_session`);
- the task the parent gives (each of its turns' prompts) and the result it returns are
  `session_message` upserts in its transcript naming sender and recipient;
- `session/cancel` on it stops its current work only (`Launcher.stop`): its Agent call then ends
  with that, and its open permission request is withdrawn with its turn.

The parent's `Agent` card still shows the call and its final result (updates.py, unchanged). A
replay of the parent's wire.jsonl (session/load) goes through the same code with the recorded
times, so the children come back with the same session ids and message ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.toolset import CANCELLED_MESSAGE
from ...core.turn import ToolStarted
from ...subagents import Launcher
from ...subagents.working import USER_STOPPED_BRIEF, working_for
from ...wire.serde import WireDecodeError, from_envelope
from ...wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    BackgroundTaskDisplayBlock,
    BriefDisplayBlock,
    SubagentEvent,
    TextPart,
    ToolResult,
    ToolReturnValue,
    TurnBegin,
    UserInput,
)
from .builders import text_block
from .convert import content_blocks_for_display
from .errors import invalid_params
from .message_ids import turn_key
from .updates import UpdateMapper

if TYPE_CHECKING:
    from ...core.agent_core import AgentCore
    from .builders import ContentBlock, Update

CHILD_MARK = "/subagents/"
RESULT_MAX = 100_000  # characters of a background subagent's report read back from its task's log
TASK_STOP_REASONS = {"completed": "end_turn", "killed": "cancelled"}  # else: failed, an error
Send = Callable[[str, Any], None]  # (session id, update)


def subagents_supported(client_capabilities: dict[str, Any] | None) -> bool:
    """`clientCapabilities.subagents` is an object (`{}`): omitted, null or anything else is not."""
    return isinstance((client_capabilities or {}).get("subagents"), dict)


def child_session_id(parent_id: str, agent_id: str) -> str:
    return f"{parent_id}{CHILD_MARK}{agent_id}"


def split_child_id(session_id: Any) -> tuple[str, str] | None:
    """(parent id, agent id) of a child session's id; None for any other id."""
    if not isinstance(session_id, str):
        return None
    parent, mark, agent = session_id.partition(CHILD_MARK)
    return (parent, agent) if mark and parent and agent and "/" not in agent else None


def refuse_child_request(method: str, params: dict[str, Any]) -> None:
    """A child session takes `session/cancel` only (its one advertised capability): any other
    request naming one is -32602 saying so, not a "session not found"."""
    ids = split_child_id(params.get("sessionId"))
    if ids is not None and method != "session/cancel":
        raise invalid_params(
            "sessionId",
            f"{params['sessionId']} is a subagent's session (of session {ids[0]}): only session/cancel applies to it",
        )


# --------------------------------------------------------------------------- updates


def subagent_update(session_id: str, **fields: Any) -> dict[str, Any]:
    """A `subagent_update` patch: only the fields given (omitted keeps, null clears)."""
    return {"sessionUpdate": "subagent_update", "sessionId": session_id, **fields}


def session_message(message_id: str, sender: str, recipient: str, content: list[ContentBlock]) -> dict[str, Any]:
    return {
        "sessionUpdate": "session_message", "messageId": message_id, "senderSessionId": sender,
        "recipientSessionId": recipient, "content": content,
    }  # fmt: skip


def idle(stop_reason: str | None = None, error: str | None = None) -> dict[str, Any]:
    """The `idle` state snapshot; a failure says why, as a JSON-RPC error object."""
    state: dict[str, Any] = {"state": "idle"}
    if stop_reason is not None:
        state["stopReason"] = stop_reason
    if error is not None:
        state["error"] = {"code": -32603, "message": error}
    return state


def _blocks(user_input: UserInput) -> list[ContentBlock]:
    if isinstance(user_input, str):
        return [text_block(user_input)]
    return [content_blocks_for_display(part) for part in user_input]


def _text(result: ToolReturnValue) -> str:
    if isinstance(result.output, str):
        return result.output
    return "".join(p.text for p in result.output if isinstance(p, TextPart))


def _brief(result: ToolReturnValue) -> str:
    return next((b.text for b in result.display if isinstance(b, BriefDisplayBlock)), "")


def _started_task(result: ToolReturnValue) -> str | None:
    """The task of a background subagent an Agent call started (its result says so), if it did."""
    if result.is_error:
        return None
    return next((b.task_id for b in result.display if isinstance(b, BackgroundTaskDisplayBlock) and b.kind == "agent"), None)


# --------------------------------------------------------------------------- the children


class ChildMapper(UpdateMapper):
    """A child session's mapper: its calls are its own, keyed without the agent's id."""

    def _request_key(self, request: ApprovalRequest) -> str:
        return request.tool_call_id


class Child:
    """One subagent as a child session: what its client was told of it."""

    __slots__ = (
        "agent_id", "announced", "asking", "call", "mapper", "run_key", "running", "session_id", "stopping", "task_id", "type",
    )  # fmt: skip

    def __init__(self, agent_id: str, session_id: str, subagent_type: str | None, mapper: ChildMapper) -> None:
        self.agent_id = agent_id
        self.session_id = session_id
        self.type = subagent_type
        self.mapper = mapper
        self.announced = False
        self.running = False
        self.call = ""  # the parent's Agent call (LLM id) of its current or last run
        self.run_key: str | None = None  # the run's part of its message ids: its first turn's
        self.task_id: str | None = None  # the task of a background run
        self.asking = 0  # its permission requests open now
        self.stopping = False  # the client cancelled its run: it is not `running` again before it ends


class ChildSessions:
    """The subagents of one parent session, each shown as a child session (see the module docstring).

    `take(message, recorded_at)` is given every message of the parent's stream before the parent's
    mapper: it keeps a subagent's (returning True) and watches the parent's Agent results.
    `card_id(llm_id)` is the parent's card of a call (the announcement names it in `_meta`)."""

    def __init__(
        self, parent_id: str, core: AgentCore, send: Send, *, card_id: Callable[[str], str],
        client_capabilities: dict[str, Any] | None = None, tool_titles: Callable[[str], str | None] | None = None,
        replay: bool = False,
    ) -> None:
        self.parent_id = parent_id
        self.core = core
        self.replay = replay
        self._send = send
        self._card_id = card_id
        self._tool_titles = tool_titles
        # Display-only terminals show the root's background commands; a child's cards have none.
        self._capabilities = {k: v for k, v in (client_capabilities or {}).items() if k != "_meta"}
        self._children: dict[str, Child] = {}  # by agent id
        self._runs: dict[str, Child] = {}  # the parent's Agent call whose result is still to come -> its child
        self._tasks: dict[str, Child] = {}  # a background run's task id -> its child
        self._requests: dict[str, Child] = {}  # an open permission request's id -> its child
        # a background Agent call's result that came before its child's first event, by the call's id
        self._started: dict[str, ToolReturnValue] = {}

    def replayer(self, card_id: Callable[[str], str]) -> ChildSessions:
        """The same children for a replay of the history (session/load), with the replay's cards."""
        return ChildSessions(
            self.parent_id, self.core, self._send, card_id=card_id, client_capabilities=self._capabilities,
            tool_titles=self._tool_titles, replay=True,
        )

    # ------------------------------------------------------------------ the parent's stream

    def take(self, message: Any, recorded_at: float | None = None) -> bool:
        """Show `message` if it is a subagent's (True); `recorded_at`: when wire.jsonl recorded it."""
        kind = type(message)
        if kind is SubagentEvent:
            self._event(message, recorded_at)
            return True
        if kind is ToolStarted and message.agent_id:
            child = self._children.get(message.agent_id)
            if child is not None:  # its card, keyed as the child knows it
                self._show(child, child.mapper.map(ToolStarted(message.tool_call_id)))
            return True
        if kind is ApprovalResponse:
            asker = self._requests.pop(message.request_id, None)
            if asker is not None:
                self._answered(asker)
            return asker is not None
        if kind is ToolResult and message.tool_call_id in self._runs:
            self._run_result(self._runs.pop(message.tool_call_id), message.return_value)
        elif kind is ToolResult and _started_task(message.return_value) is not None:
            self._started[message.tool_call_id] = message.return_value  # its child's first event is still to come
        return False  # the parent shows it too: its Agent card ends with the result

    def _event(self, message: SubagentEvent, recorded_at: float | None) -> None:
        try:
            event = from_envelope(message.event.model_dump())
        except WireDecodeError:
            return
        child = self._child(message.agent_id or "subagent", message.subagent_type)
        call = message.parent_tool_call_id or ""
        if not child.running or child.call != call:
            self._run_begins(child, call)
        if isinstance(event, TurnBegin):
            self._turn_begins(child, event, recorded_at)
        else:
            self._show(child, child.mapper.map(event))

    def _child(self, agent_id: str, subagent_type: str | None) -> Child:
        child = self._children.get(agent_id)
        if child is None:
            mapper = ChildMapper(self.core.work_dir, replay=self.replay, tool_titles=self._tool_titles,
                                 client_capabilities=self._capabilities)
            child = self._children[agent_id] = Child(agent_id, child_session_id(self.parent_id, agent_id), subagent_type, mapper)
        return child

    def _run_begins(self, child: Child, call: str) -> None:
        """A run of the child (an Agent call, or its resume): announced the first time, else `running`."""
        if child.running and child.task_id is not None:  # a replayed background run resumed later: it ended
            self._task_over(child, final=True)
        child.call, child.running, child.run_key, child.task_id, child.stopping = call, True, None, None, False
        meta = {"kimi": {"agentId": child.agent_id, "subagentType": child.type, "parentToolCallId": self._card_id(call)}}
        if child.announced:
            self._send(self.parent_id, subagent_update(child.session_id, state={"state": "running"}, _meta=meta))
        else:
            title, description = self._describe(child)
            self._send(self.parent_id, subagent_update(
                child.session_id, title=title, description=description, cwd=str(self.core.work_dir),
                state={"state": "running"}, capabilities={"cancel": {}}, _meta=meta,
            ))  # fmt: skip
            child.announced = True
        started = self._started.pop(call, None)
        if started is not None:
            self._run_result(child, started)
        else:
            self._runs[call] = child

    def _describe(self, child: Child) -> tuple[str, str]:
        """Its title (the Agent call's description, kept with the instance) and what its type does."""
        from ...subagents.store import SubagentStore  # read once per child shown

        record = SubagentStore(self.core.session.dir).get(child.agent_id)
        kind_name = child.type or (record.subagent_type if record is not None else "") or "subagent"
        title = record.description if record is not None and record.description else f"{kind_name} agent"
        launcher = self.core.subagents
        kind = launcher.kinds.get(kind_name) if isinstance(launcher, Launcher) else None
        description = f"The {kind_name} subagent" + (f": {kind.description}" if kind is not None else "")
        return title, description

    def _turn_begins(self, child: Child, event: TurnBegin, recorded_at: float | None) -> None:
        """A turn of the child: its prompt is the message the parent sends it."""
        self._show(child, child.mapper.flush())
        if not self.replay:
            child.mapper.begin_turn()
        child.mapper.map(event, recorded_at)  # its message ids follow the turn; the prompt is shown below
        key = turn_key(recorded_at) if recorded_at is not None else uuid.uuid4().hex[:12]
        child.run_key = child.run_key or key
        task = session_message(f"{key}-task", self.parent_id, child.session_id, _blocks(event.user_input))
        self._send(child.session_id, task)

    def _run_result(self, child: Child, result: ToolReturnValue) -> None:
        """The parent's Agent call ended: the child's run with it, or its background task started."""
        self._show(child, child.mapper.flush())
        task_id = _started_task(result)
        if task_id is not None:
            child.task_id = task_id
            self._tasks[task_id] = child
            if not self.replay:  # a task that ended before its Agent call did (a replay waits for its end)
                self._task_over(child)
            return
        if not result.is_error:
            self._end(child, "end_turn", report=_text(result))
        elif result.message == CANCELLED_MESSAGE or _brief(result) == USER_STOPPED_BRIEF:
            self._end(child, "cancelled")
        else:
            self._end(child, "error", error=result.message)

    def task_ended(self, task: Any) -> None:
        """A background task ended (live): if it was a child's run, the run ends with it."""
        child = self._tasks.get(task.id)
        if child is not None and child.running and child.task_id == task.id:
            self._task_over(child)

    def _task_over(self, child: Child, *, final: bool = False) -> None:
        """End a background run by its task's state, if it ended (or, `final`, whatever it is)."""
        task = self.core.tasks.get(child.task_id) if child.task_id is not None else None
        if task is not None and task.active and not final:
            return
        if task is None or task.active:
            self._end(child, None)
            return
        self._show(child, child.mapper.flush())
        stop_reason = TASK_STOP_REASONS.get(task.status, "error")
        report = self.core.tasks.read_tail(task, RESULT_MAX)[0] if stop_reason == "end_turn" else None
        self._end(child, stop_reason, report=report, error=(task.reason or task.status) if stop_reason == "error" else None)

    def _end(self, child: Child, stop_reason: str | None, *, report: str | None = None, error: str | None = None) -> None:
        """The run is over: the report it returns (if it returned one), then its `idle` state."""
        if report:
            message = session_message(f"{child.run_key or uuid.uuid4().hex[:12]}-result", child.session_id,
                                      self.parent_id, [text_block(report)])
            self._send(child.session_id, message)
        child.running, child.asking = False, 0
        self._send(self.parent_id, subagent_update(child.session_id, state=idle(stop_reason, error)))

    def finish(self) -> None:
        """The replay is over: what the children still owe, and the state of runs whose end was not
        recorded (a background task's as it is now; a run no process runs any more: idle)."""
        launcher = self.core.subagents
        for child in self._children.values():
            self._show(child, child.mapper.flush())
            if not child.running:
                continue
            if child.task_id is not None:
                self._task_over(child)
            elif not (isinstance(launcher, Launcher) and launcher.running(child.agent_id)):
                self._end(child, None)

    def follow(self, replayed: ChildSessions) -> None:
        """After a replay to the client: children still running live update the cards it sent."""
        for agent_id, child in self._children.items():
            other = replayed._children.get(agent_id)
            if other is not None:
                child.mapper.follow(other.mapper)

    def _show(self, child: Child, updates: list[Update]) -> None:
        for update in updates:
            self._send(child.session_id, update)

    # ------------------------------------------------------------------ requests and client calls

    def asked(self, request: ApprovalRequest) -> Child | None:
        """The child whose permission request this is (None: the parent's); it `requires_action`
        while one is open."""
        child = self._children.get(request.agent_id) if request.agent_id else None
        if child is None or not child.announced:
            return None
        self._requests[request.id] = child
        child.asking += 1
        if child.asking == 1:
            self._send(self.parent_id, subagent_update(child.session_id, state={"state": "requires_action"}))
        return child

    def _answered(self, child: Child) -> None:
        child.asking = max(0, child.asking - 1)
        if child.asking == 0 and child.running and not child.stopping:
            self._send(self.parent_id, subagent_update(child.session_id, state={"state": "running"}))

    def current(self) -> Child | None:
        """The child whose work runs in this context (its tool's question, file or terminal), if shown."""
        agent_id = working_for()
        child = self._children.get(agent_id) if agent_id else None
        return child if child is not None and child.announced else None

    def client_session(self) -> str | None:
        """The session id the current work's client calls carry: a child's, or None (the parent's)."""
        child = self.current()
        return child.session_id if child is not None else None

    def terminal_attached(self, tool_call_id: str, terminal_id: str) -> bool:
        """A child's command started in a client terminal: shown in its card (True when it was a child's)."""
        child = self.current()
        if child is None:
            return False
        if child.mapper.knows(tool_call_id):
            self._send(child.session_id, child.mapper.terminal_attached(tool_call_id, terminal_id))
        return True

    async def cancel(self, session_id: str) -> bool:
        """`session/cancel` on a child: its current work stops (nothing else); False if it is not ours."""
        ids = split_child_id(session_id)
        if ids is None or ids[0] != self.parent_id:
            return False
        child = self._children.get(ids[1])
        if child is not None:
            child.stopping = child.running  # before its work ends, which may be while it is stopped
        launcher = self.core.subagents
        stopped = isinstance(launcher, Launcher) and await launcher.stop(ids[1])
        if child is not None and not stopped:
            child.stopping = False
        return True


async def cancel_child(open_sessions: dict[str, Any], session_id: str) -> None:
    """`session/cancel` naming a child session: its parent, if open here, stops that child's work."""
    ids = split_child_id(session_id)
    parent = open_sessions.get(ids[0]) if ids is not None else None
    if parent is not None and parent.children is not None:
        await parent.children.cancel(session_id)
