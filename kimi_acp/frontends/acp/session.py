"""One ACP session: its agent core, its prompts, and what the client sees of them.

The core's message stream is mapped to `session/update` notifications as it happens (written in
the same loop step, see `transport.py`); approvals become `session/request_permission` requests
that run beside the stream, so other updates keep flowing and `session/cancel` never waits for the
user. Prompts for one session run one at a time, in arrival order.

The root agent's own messages are shown while a prompt is answered. What background subagents do
(`SubagentEvent`s, their approvals and answers, their terminals) and the end of a background task
are shown whenever they happen while the session is open, between prompts too; nothing is sent
once it is closed. For a client that advertised `clientCapabilities.subagents`, a subagent is a
child session of its own instead of cards in this one (children.py, `self.children`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError
from acp.schema import PermissionOption, ToolCallUpdate

from ...core.agent_core import AgentCore, FromUser, ModeChanged, TitleChanged
from ...core.errors import LLMNotSet, LLMNotSupported, SessionBusy, SessionDeleted
from ...core.slash import acp_entries
from ...core.turn import CommandsChanged, ModelChanged, SandboxChanged, ToolStarted
from ...core.usage import UsageReading
from ...errors import ChatProviderError, SignInRequired
from ...sessions import iso_time
from ...wire.file import read_wire_file
from ...wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    BackgroundTaskDisplayBlock,
    MCPLoadingEnd,
    QuestionRequest,
    Request,
    StatusUpdate,
    SubagentEvent,
    TurnBegin,
)
from . import questions
from .builders import (
    update_available_commands,
    update_config_options,
    update_current_mode,
    update_session_info,
)
from .children import ChildSessions, subagents_supported
from .convert import prompt_to_user_input
from .errors import auth_required, internal_error, invalid_params, session_busy, session_not_found
from .handshake import auth_methods
from .options import config_options, modes_state
from .task_output import LIMIT as TASK_OUTPUT_LIMIT
from .updates import UpdateMapper
from .usage import prompt_usage, session_cost

if TYPE_CHECKING:
    from .builders import Update

log = logging.getLogger(__name__)

STOP_REASONS = {"finished": "end_turn", "cancelled": "cancelled", "max_steps_reached": "max_turn_requests"}
def permission_options(request: ApprovalRequest) -> list[dict[str, str]]:
    """The choices of a permission dialog. "Always allow" names exactly what it covers and is not
    offered when nothing may be remembered (a file holding credentials, a protected path, a
    command line that cannot be judged word by word, an `ask` rule)."""
    options = [{"optionId": "approve", "name": "Approve once", "kind": "allow_once"}]
    if request.session_scope:
        name = f"Always allow {request.session_scope} in this session"
        options.append({"optionId": "approve_for_session", "name": name, "kind": "allow_always"})
    options.append({"optionId": "reject", "name": "Reject", "kind": "reject_once"})
    return options


class SessionHost(Protocol):
    """What a session needs from the server that owns it (the server implements it)."""

    transport: Any  # .notify(method, params)
    connection: Any  # client_calls.ClientCalls: requests to the client
    client_capabilities_raw: dict[str, Any]


class AcpSession:
    def __init__(self, server: SessionHost, core: AgentCore) -> None:
        self.server = server
        self.core = core
        self.id = core.session.id
        self._mapper = UpdateMapper(
            core.work_dir,
            tool_titles=self._tool_title,
            client_capabilities=server.client_capabilities_raw,
            task_state=self._task_state,
            task_log=self._task_log,
            session_cost=self._session_cost,
        )
        # Subagents as child sessions, for a client that takes them; None: their cards are this session's.
        self.children: ChildSessions | None = None
        if subagents_supported(server.client_capabilities_raw):
            self.children = ChildSessions(
                self.id, core, self._send_to, card_id=self._mapper.acp_id,
                client_capabilities=server.client_capabilities_raw, tool_titles=self._tool_title,
            )
        self._live = False  # the root's turn updates flow only while a prompt is being answered
        self._closed = False  # session/close (or delete, or exit): nothing more is sent
        self._turn_lock = asyncio.Lock()
        self._generation = 0  # bumped by cancel: prompts queued before it are cancelled too
        self._permissions: set[asyncio.Task[None]] = set()  # open permission and question requests
        self._background_permissions: set[asyncio.Task[None]] = set()  # those of background subagents
        self._side_tasks: set[asyncio.Task[Any]] = set()  # title requests, turns started by steering
        # The mode and config options as the client last heard them (the options: None until a
        # response carried them); while it sets one itself, the change is not echoed back.
        self._shown: tuple[str, list[dict[str, Any]] | None] = (core.controls.mode, None)
        self._client_setting = False
        self._unsubscribe = core.stream.subscribe(self._on_message)
        self._unsubscribe_tasks = core.tasks.on_end(self._on_task_end)
        # A background command's output on its card, for clients that show display-only terminals.
        self._unsubscribe_output = core.tasks.on_output(self._on_task_output) if self._mapper.terminal_output else _nothing
        self.mcp: Any = None  # the session's McpService, when it has MCP servers

    # ------------------------------------------------------------------ MCP servers

    def attach_mcp(self, servers: Any) -> None:
        """Connect the session's MCP servers in the background (nothing happens without any)."""
        if servers is None or (not servers.servers and not servers.problems):
            return
        from ...mcp.session import attach  # only sessions with servers load the MCP layer

        self.mcp = attach(self.core, servers)
        if self.mcp is not None:
            self.mcp.start()

    async def use_mcp_servers(self, servers: Any) -> None:
        """load / resume of an open session: switch to the list the client gave this time."""
        if self.mcp is None:
            self.attach_mcp(servers)
            return
        if servers is None:  # none any more: the running ones are closed
            from ...mcp.config import ResolvedServers

            servers = ResolvedServers([], [])
        await self.mcp.update(servers)

    def _tool_title(self, name: str) -> str | None:
        """A tool's own card title (MCP tools: "server: tool"), if it has one."""
        return getattr(self.core.toolset.get(name), "title", None)

    def _announce_mcp(self) -> None:
        """Tell the user which servers connected or failed (once per state), as a chat notice."""
        lines = self.mcp.unannounced() if self.mcp is not None else []
        if lines:
            text = "".join(f"> {line}\n" for line in lines) + "\n"
            self.send_update(self._mapper.note(text))

    # ------------------------------------------------------------------ outbound

    def send_update(self, update: Update, session_id: str | None = None) -> None:
        """An update of this session, or (`session_id`) of one of its child sessions."""
        if self._closed:
            return
        self.server.transport.notify("session/update", {"sessionId": session_id or self.id, "update": update})

    def _send_to(self, session_id: str, update: Any) -> None:
        self.send_update(update, session_id)

    def send_available_commands(self) -> None:
        """The session's slash commands (built-ins, skills, flows): the registry `/help` reads too."""
        commands = acp_entries(self.core.slash.commands())
        self.send_update(update_available_commands(commands))

    def settings(self) -> dict[str, Any]:
        """The modes and config options now, as a response carries them (session/new, load,
        resume, fork): the client knows them from there."""
        modes, options = modes_state(self.core), self._config_options()
        self._shown = (modes["currentModeId"], options)
        return {"modes": modes, "configOptions": options}

    def client_sets(self, change: Callable[[], None]) -> list[dict[str, Any]]:
        """A mode or option the client sets itself (session/set_mode, set_config_option): its
        response carries the options, so the controls' announcement is not echoed as updates.
        Returns the options now."""
        self._client_setting = True
        try:
            change()
        finally:
            self._client_setting = False
        options: list[dict[str, Any]] = self.settings()["configOptions"]  # what _config_options made
        return options

    def _config_options(self) -> list[dict[str, Any]]:
        return config_options(self.core, self.server.client_capabilities_raw)

    def _show_settings(self) -> None:
        """A setting changed (a slash command, a plan tool, another picker): the client hears what
        it does not know yet, the mode and the options each in its own update."""
        mode, options = self.core.controls.mode, self._config_options()
        shown_mode, shown_options = self._shown
        if mode != shown_mode:
            self.send_update(update_current_mode(mode))
        if options != shown_options:
            self.send_update(update_config_options(options))
        self._shown = (mode, options)

    def _on_message(self, message: Any) -> None:
        if isinstance(message, CommandsChanged):  # a skill appeared, changed or went away
            self.send_available_commands()
            return
        if isinstance(message, (ModeChanged, ModelChanged, SandboxChanged)):  # /yolo, /model, /sandbox, ...
            if not self._client_setting:
                self._show_settings()
            return
        if isinstance(message, TitleChanged):
            self.send_update(update_session_info(message.title, iso_time(self.core.session.updated_at())))
            return
        if isinstance(message, Request):
            self._on_request(message)
            return
        # A background subagent goes on after the turn that started it: its events, the answers to
        # its requests and its calls' starts are shown at any time (during a prompt they are part of
        # the turn's stream).
        if not self._live and not isinstance(message, (SubagentEvent, ApprovalResponse, ToolStarted)):
            if not _plan_mode_ended(message):  # the IDE's picker ended plan mode: a plan may go (plans.py)
                return
        # The recorder (subscribed first) has just written it: a turn's message ids follow its record.
        if self.children is not None and self.children.take(message, self.core.recorder.last_timestamp):
            return  # a subagent's: shown in its child session (its turns' ids follow their records too)
        recorded_at = self.core.recorder.last_timestamp if isinstance(message, TurnBegin) else None
        for update in self._mapper.map(message, recorded_at):
            self.send_update(update)
        if isinstance(message, MCPLoadingEnd) or (isinstance(message, StatusUpdate) and message.mcp_status is not None):
            self._announce_mcp()

    def on_terminal(self, tool_call_id: str, terminal_id: str) -> None:
        """A command started in a client terminal: show it inside its tool call card (between
        prompts, only a background subagent's call can run one)."""
        if self.children is not None and self.children.terminal_attached(tool_call_id, terminal_id):
            return
        if self._live or self._mapper.knows(tool_call_id):
            self.send_update(self._mapper.terminal_attached(tool_call_id, terminal_id))

    def _session_cost(self) -> dict[str, Any] | None:
        return session_cost(self.core.usage)

    def _task_state(self, task_id: str) -> BackgroundTaskDisplayBlock | None:
        task = self.core.tasks.get(task_id)
        return task.display_block() if task is not None else None

    def _on_task_end(self, task: Any) -> None:
        """A background task ended: the card that started it shows its final state (and a
        background subagent's child session its end)."""
        if self.children is not None:
            self.children.task_ended(task)
        for update in self._mapper.task_ended(task.display_block(), task.exit_code):
            self.send_update(update)

    def _task_log(self, task_id: str) -> tuple[bytes, int | None]:
        """What a background task wrote so far (as much as a card shows), and its exit code."""
        task = self.core.tasks.get(task_id)
        if task is None:
            return b"", None
        try:
            with task.output_path.open("rb") as f:
                return f.read(TASK_OUTPUT_LIMIT + 1), task.exit_code
        except OSError:
            return b"", task.exit_code

    def _on_task_output(self, task: Any, data: bytes) -> None:
        for update in self._mapper.task_output(task.id, data):
            self.send_update(update)

    # ------------------------------------------------------------------ requests from the core

    def _on_request(self, request: Request[Any]) -> None:
        mapper: UpdateMapper  # the child session's when a subagent asks, else this session's
        if isinstance(request, ApprovalRequest):
            child = self.children.asked(request) if self.children is not None else None
            if child is not None:  # a subagent's, asked in its child session
                mapper, session_id, owed = child.mapper, child.session_id, child.mapper.flush()
            else:
                mapper, session_id, owed = self._mapper, self.id, self._mapper.approval_requested(request)
            for update in owed:  # the card, complete and pending
                self.send_update(update, session_id)
            task = asyncio.create_task(self._ask_permission(request, mapper, session_id))
            # A background subagent's request outlives the turn (and its cancel): only close ends it.
            tasks = self._background_permissions if request.source_kind == "background_agent" else self._permissions
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            _withdraw_when_settled(request, task)
        elif isinstance(request, QuestionRequest):
            child = self.children.current() if self.children is not None else None
            mapper, session_id = (child.mapper, child.session_id) if child is not None else (self._mapper, self.id)
            for update in mapper.flush():  # the card is complete before the user is asked
                self.send_update(update, session_id)
            form = questions.form_supported(self.server.client_capabilities_raw)
            acp_id = mapper.acp_id(request.tool_call_id)
            task = asyncio.create_task(questions.ask(self.server.connection, session_id, acp_id, request, form=form))
            self._permissions.add(task)  # cancelled with the turn, like a permission request
            task.add_done_callback(self._permissions.discard)
            _withdraw_when_settled(request, task)
        else:
            request.decline()  # tool calls of a Wire client, hooks a Wire client subscribed to

    async def _ask_permission(self, request: ApprovalRequest, mapper: UpdateMapper, session_id: str) -> None:
        answer = "reject"
        try:
            card = mapper.permission_tool_call(request)
            response = await self.server.connection.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate.model_validate(card),
                options=[PermissionOption.model_validate(o) for o in permission_options(request)],
                tool_name=card.get("name"),
            )
            outcome = response.outcome
            if getattr(outcome, "outcome", None) == "selected":
                chosen = getattr(outcome, "option_id", "")
                if chosen in ("approve", "approve_for_session", "reject"):
                    answer = chosen
                else:
                    log.warning("unknown permission option %r treated as reject", chosen)
        except asyncio.CancelledError:
            request.decline()
            raise
        except Exception as exc:
            log.warning("permission request failed (%s); treating it as reject", exc)
        request.resolve(ApprovalResponse(request_id=request.id, response=answer))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ prompts

    async def prompt(self, blocks: list[Any], *, show_prompt: bool = False) -> dict[str, Any]:
        """One turn; `show_prompt` when the client did not send it as a prompt (steering) and so
        does not show it in the thread yet."""
        user_input = prompt_to_user_input(blocks)
        generation = self._generation
        async with self._turn_lock:
            if generation != self._generation:  # cancelled while waiting for the previous prompt
                return {"stopReason": "cancelled", "usage": prompt_usage(UsageReading())}
            before = self.core.usage.reading()
            self._mapper.begin_turn(show_prompt)
            self._live = True
            try:
                result = await self.core.run_turn(FromUser(user_input))
            except Exception as exc:
                raise self._prompt_error(exc) from None
            finally:
                for update in self._mapper.flush():
                    self.send_update(update)
                self._live = False
                for task in list(self._permissions):
                    task.cancel()
                # Skills the turn created or changed: the client hears of them after the response.
                asyncio.get_running_loop().call_soon(self.core.refresh_commands)
        used = prompt_usage(self.core.usage.reading() - before)  # its subagents' requests included
        if result.status == "finished":
            self._side_task(self.core.generate_title())  # the answer does not wait for a title
        return {"stopReason": STOP_REASONS.get(result.status, "end_turn"), "usage": used}

    def start_turn(self, blocks: list[Any]) -> None:
        """A turn nobody awaits (`_session/steering` on an idle session); failures are logged."""
        self._side_task(self.prompt(blocks, show_prompt=True))

    def _side_task(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._side_tasks.add(task)
        task.add_done_callback(_log_failure)
        task.add_done_callback(self._side_tasks.discard)

    def _prompt_error(self, exc: Exception) -> RequestError:
        """The JSON-RPC error for a failed turn; a visible note too when output had started."""
        if isinstance(exc, LLMNotSet):
            return auth_required(_sentence(str(exc)), auth_methods(self.server.client_capabilities_raw))
        if isinstance(exc, LLMNotSupported):
            return invalid_params("prompt", str(exc))
        if isinstance(exc, SignInRequired):  # a Kimi account that must sign in again
            return auth_required(str(exc), auth_methods(self.server.client_capabilities_raw))
        if isinstance(exc, SessionBusy):  # another process (kimi web, a second IDE) runs a turn of it
            return session_busy(str(exc), exc.holder)
        if isinstance(exc, SessionDeleted):  # another process deleted it while this one had it open
            return session_not_found(self.id)
        message = str(exc) or type(exc).__name__
        if isinstance(exc, ChatProviderError):
            if self._mapper.shown_output:
                self.send_update(self._mapper.note(f"\n\n**Model error:** {message}"))
            return internal_error("Model provider error", message)
        log.error("prompt failed", exc_info=exc)
        return internal_error("Internal error", message)

    def client_session(self) -> str:
        """The session id of the current work's client calls (files, terminals): a child's for a
        subagent shown as one, else this session's."""
        child = self.children.client_session() if self.children is not None else None
        return child or self.id

    def cancel(self) -> None:
        self._generation += 1
        self.core.cancel()
        for task in list(self._permissions):
            task.cancel()

    # ------------------------------------------------------------------ history

    def replay(self) -> None:
        """Send the recorded history as updates (session/load), all before the load response.

        Background subagents' cards replay like foreground ones; a background task this process
        knows shows its current state. Cards a running background subagent will still update take
        the replayed ids (the client has just been given those)."""
        self.core.recorder.flush()
        mapper = UpdateMapper(self.core.work_dir, replay=True, client_capabilities=self.server.client_capabilities_raw,
                              task_state=self._task_state, session_cost=self._session_cost)
        children = self.children.replayer(mapper.acp_id) if self.children is not None else None
        for record in read_wire_file(self.core.session.wire_file):
            if isinstance(record.message, (Request, ApprovalResponse)):
                continue
            if children is not None and children.take(record.message, record.timestamp):
                continue
            for update in mapper.map(record.message, record.timestamp):
                self.send_update(update)
        for update in mapper.flush():
            self.send_update(update)
        if children is not None:
            children.finish()
        if mapper.last_usage is not None:
            self.send_update(mapper.last_usage)
        self._mapper.follow(mapper)
        if self.children is not None and children is not None:
            self.children.follow(children)

    async def close(self) -> None:
        self._closed = True
        self.cancel()
        for task in [*self._background_permissions, *self._side_tasks]:
            task.cancel()
        self._unsubscribe()
        self._unsubscribe_tasks()
        self._unsubscribe_output()
        await self.core.close()


def _withdraw_when_settled(request: Request[Any], task: asyncio.Task[None]) -> None:
    """A dialog settled by anything but its answer (the turn ended, "approve for this session"
    covered it, its background subagent was stopped) is withdrawn: cancelling the task that waits
    for the client sends `$/cancel_request` (client_calls.py). An answered one has ended its task."""
    request.future.add_done_callback(lambda _future: task.cancel())


def _nothing() -> None:
    return None


def _plan_mode_ended(message: Any) -> bool:
    return isinstance(message, StatusUpdate) and message.plan_mode is False


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("background work of the session failed: %s", task.exception())


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."
