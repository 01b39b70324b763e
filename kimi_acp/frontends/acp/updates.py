"""Wire messages -> ACP `session/update` payloads, for live turns and for history replay.

One `UpdateMapper` per session keeps the little state the mapping needs: which tool calls the
current turn has shown (ACP ids are made unique across turns), the arguments still streaming for
the open call, whether a call's output is shown by an embedded terminal, and the status each
card was last given.

A card's status says what the user can rely on: `pending` while the arguments stream and while
the user is asked, `in_progress` only once the call runs (the core's `ToolStarted`: after its
approval, if it asked; or when its terminal is embedded), then `completed` or `failed` (a
rejected or cancelled call is `failed`: ACP has no other end state). Nothing here guesses whether
a call will ask: the core says when it starts.

`UpdateMapper.map` reads each message with the one handler of its type (util/dispatch.py); the
updates come from the builders of builders.py. A client that takes plan operations
(`clientCapabilities.plan`) gets the todo list and plan mode's plan as plans of its own (plans.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.card_text import is_escapes_note
from ...core.tool_facts import tool_facts
from ...core.turn import PlanCleared, ToolStarted
from ...llm.errors import retry_cause
from ...util.dispatch import Handlers
from ...util.visible_text import markdown_text, one_line, shown_data
from ...wire.serde import WireDecodeError, from_envelope
from ...wire.types import (
    ApprovalRequest,
    BackgroundTaskDisplayBlock,
    BriefDisplayBlock,
    CompactionBegin,
    CompactionEnd,
    DiffDisplayBlock,
    ImageURLPart,
    Notification,
    PlanDisplay,
    ShellDisplayBlock,
    StatusUpdate,
    SteerInput,
    StepBegin,
    StepRetry,
    SubagentEvent,
    TextPart,
    ThinkPart,
    TodoDisplayBlock,
    ToolCall,
    ToolCallPart,
    ToolResult,
    ToolReturnValue,
    TurnBegin,
    UserInput,
)
from .arguments import StreamingArguments
from .builders import (
    location,
    notice,
    start_tool_call,
    text_block,
    tool_terminal_ref,
    update_agent_message,
    update_agent_message_text,
    update_agent_thought,
    update_compaction,
    update_plan,
    update_tool_call,
    update_usage,
    update_user_message,
)
from .convert import (
    TITLE_MAX,
    code_content,
    content_blocks_for_display,
    diff_content,
    plan_entries,
    plan_operations,
    read_locations,
    result_content,
    session_capability,
    task_lines,
    text_content,
    tool_kind,
    tool_locations,
    tool_title,
)
from .message_ids import Kind, MessageIds
from .permission_gist import permission_kind, titled
from .task_output import TerminalFeed, terminal_info, terminal_output_supported

if TYPE_CHECKING:
    from .builders import (
        ContentBlock,
        Location,
        MessageChunk,
        NoticeSeverity,
        ToolCallContent,
        ToolCallProgress,
        ToolCallStatus,
        Update,
        UsageUpdate,
    )
    from .plans import Plans

ENDED = ("completed", "failed")
TaskState = Callable[[str], BackgroundTaskDisplayBlock | None]  # a task's current state, if known here
TaskLog = Callable[[str], tuple[bytes, int | None]]  # a task's output so far, and its exit code once it ended
SessionCost = Callable[[], dict[str, Any] | None]  # the session's cost so far (usage.py), if known
# Messages after which the next chunk belongs to a new message (see message_ids.py); the recorder
# keeps each of them, so a replay meets them where the live turn did.
MESSAGE_BOUNDARIES = (StepBegin, StepRetry, SteerInput, ToolCall, ToolResult, CompactionBegin, CompactionEnd)
# Messages that leave the call whose arguments stream open: its next chunk, a subagent's message
# beside it, a call that starts (maybe another one). Any other message completes it first.
KEEP_OPEN_CALL = frozenset({ToolCallPart, SubagentEvent, ToolStarted})
RAW_OUTPUT_MAX = 20_000  # characters of a tool's output in a card's rawOutput
NOTICE_SEVERITIES: dict[str, NoticeSeverity] = {"info": "info", "warning": "warning", "error": "error"}


class _Call:
    """One card: the call it shows and what the client was told of it. (A plain class: as a
    dataclass it cost ~0.7 ms at start-up.)"""

    __slots__ = (
        "acp_id", "agent", "args", "closed", "display_terminal", "feed", "name", "prefix", "status", "task",
        "terminal", "title",
    )  # fmt: skip

    def __init__(self, acp_id: str, name: str, args: StreamingArguments, *, prefix: str = "", agent: str | None = None):
        self.acp_id = acp_id
        self.name = name
        self.args = args
        self.prefix = prefix  # "[explore] " for a subagent's call
        self.agent = agent  # the subagent whose call it is
        self.task: BackgroundTaskDisplayBlock | None = None  # the background task the card shows (a started Shell / Agent)
        self.title = ""
        self.terminal = False
        self.display_terminal: str | None = None  # the display-only terminal its tool_call registered (task output)
        self.feed: TerminalFeed | None = None  # the background task's output on that terminal
        self.closed = False
        self.status: ToolCallStatus = "pending"  # the last status the client was told

    @property
    def arguments(self) -> str:
        return self.args.text

    @property
    def running_task(self) -> bool:
        return self.task is not None and self.task.status == "running"


_on: Handlers[Callable[[UpdateMapper, Any], list[Update]]] = Handlers()


class UpdateMapper:
    """A card goes `in_progress` when the core says its call runs (`ToolStarted`), never while a
    permission request about it is open.

    What the agent does on its own is shown too: a retried model request and a compaction of the
    context as the client's `notice` / `compaction_update` when it advertised them
    (`client_capabilities`), else as a short italic line of the agent's message.

    A background subagent outlives the turn that started it: its open cards and the `Agent` card
    it is tied to are kept across `begin_turn`, so its later updates (also between prompts) find
    them. `task_state(task_id)` gives a background task's
    current state, so a task card created after the task ended says so.

    Every message chunk carries a `messageId` that a replay repeats (message_ids.py): give `map`
    the time each `TurnBegin` was recorded. A client with display-only terminals
    (`_meta.terminal_output`) sees a background command's output on its card (task_output.py):
    `task_log(task_id)` gives what the task wrote before its card was complete, `task_output` the rest.
    """

    def __init__(
        self,
        cwd: Path,
        *,
        replay: bool = False,
        tool_titles: Callable[[str], str | None] | None = None,
        client_capabilities: dict[str, Any] | None = None,
        task_state: TaskState | None = None,
        task_log: TaskLog | None = None,
        session_cost: SessionCost | None = None,
    ) -> None:
        """`tool_titles(name)` names tools the mapper cannot know, e.g. "server: tool" for MCP;
        `session_cost()` is what `usage_update` says the session cost so far."""
        self.cwd = cwd
        self.replay = replay
        self.notices = session_capability(client_capabilities, "notices")
        self.compaction_updates = session_capability(client_capabilities, "compaction")
        self._compactions = 0
        self._compaction_id: str | None = None
        self._tool_titles = tool_titles
        self._turn = uuid.uuid4().hex[:8]
        self._calls: dict[str, _Call] = {}
        self._prompt_begun = False
        self._open: _Call | None = None
        self._parents: dict[tuple[str, str], _Call] = {}  # (agent id, parent's LLM id) -> the Agent card of its run
        self._task_cards: dict[str, _Call] = {}  # running background task id -> the card that shows it
        self._task_state = task_state
        self._task_log = task_log
        self.terminal_output = terminal_output_supported(client_capabilities) and not replay
        self._ids = MessageIds()
        self.shown_output = False  # any agent text sent this turn (errors then need a visible note)
        self.last_usage: Update | None = None
        self._session_cost = session_cost
        # plan operations (plans.py); None: the old `plan` checklist and the plan as a message block
        self.plans = _plans(client_capabilities) if plan_operations(client_capabilities) else None

    def _title(self, name: str, arguments: str | dict[str, Any], prefix: str = "") -> str:
        custom = self._tool_titles(name) if self._tool_titles is not None else None
        return prefix + (custom or tool_title(name, arguments, self.cwd))

    def begin_turn(self, show_prompt: bool = False) -> None:
        """A prompt starts; `show_prompt` when the client does not show it itself (it did not send
        it as a prompt): its TurnBegin is then shown, with the `messageId` a replay repeats."""
        self._prompt_begun = show_prompt  # False: the prompt's own TurnBegin is still to come
        self._turn = uuid.uuid4().hex[:8]
        # What a background subagent still runs keeps its card; everything else is the last turn's.
        self._calls = {k: c for k, c in self._calls.items() if c.agent is not None and c.status not in ENDED}
        self._parents = {k: c for k, c in self._parents.items() if self._may_go_on(c)}
        self._open = None
        self.shown_output = False

    def follow(self, replayed: UpdateMapper) -> None:
        """After `replayed` sent this session's history again (session/load of an open session):
        the cards still to be updated live take the ids the client knows now."""
        pairs: list[tuple[dict[Any, _Call], dict[Any, _Call]]] = [
            (self._calls, replayed._calls), (self._parents, replayed._parents), (self._task_cards, replayed._task_cards),
        ]
        for mine, theirs in pairs:
            for key, call in mine.items():
                other = theirs.get(key)
                if other is not None:
                    call.acp_id = other.acp_id
        if self.plans is not None and replayed.plans is not None:
            self.plans.follow(replayed.plans)

    def task_ended(self, block: BackgroundTaskDisplayBlock, exit_code: int | None = None) -> list[Update]:
        """A background task ended: the card that shows it (its `Shell` / `Agent` call) says so, and
        ends the terminal that showed its output."""
        call = self._task_cards.pop(block.task_id, None)
        if call is None:
            return []
        call.task = block
        content = _task_content(call, block)
        meta = call.feed.exit(exit_code) if call.feed is not None else None
        call.feed = None
        return [update_tool_call(call.acp_id, content=content, meta=meta)]

    def task_output(self, task_id: str, data: bytes) -> list[Update]:
        """More output of a background task, for the display-only terminal of its card (if it has one)."""
        call = self._task_cards.get(task_id)
        meta = call.feed.feed(data) if call is not None and call.feed is not None else None
        if call is None or meta is None:
            return []
        return [update_tool_call(call.acp_id, meta=meta)]

    def acp_id(self, llm_id: str) -> str:
        call = self._calls.get(llm_id)
        return call.acp_id if call else f"{self._turn}/{llm_id}"

    # ------------------------------------------------------------------ mapping

    def map(self, message: Any, recorded_at: float | None = None) -> list[Update]:
        """The updates for one message; `recorded_at`: when a `TurnBegin` was written to wire.jsonl."""
        kind = type(message)
        handler = _on.get(kind)
        if kind in KEEP_OPEN_CALL:
            return handler(self, message) if handler is not None else []
        updates = self._close_open_call()
        if isinstance(message, MESSAGE_BOUNDARIES):
            self._ids.boundary()
        elif kind is TurnBegin:
            self._ids.turn(recorded_at)
        if handler is not None:
            updates.extend(handler(self, message))
        return updates

    # ------------------------------------------------------------------ one handler per message

    @_on(TextPart)
    def _text(self, message: TextPart) -> list[Update]:
        if not message.text:
            return []
        self.shown_output = True
        return [self._chunk("agent", text_block(message.text))]

    @_on(ThinkPart)
    def _think(self, message: ThinkPart) -> list[Update]:
        return [self._chunk("thought", text_block(message.think))] if message.think else []

    @_on(ImageURLPart)
    def _image(self, message: ImageURLPart) -> list[Update]:
        return [self._chunk("agent", content_blocks_for_display(message))]

    @_on(ToolCall)
    def _tool_call_begins(self, message: ToolCall) -> list[Update]:
        return [self._tool_call(message)]

    @_on(ToolStarted)
    def _tool_started(self, message: ToolStarted) -> list[Update]:
        """The call runs now (after its approval, if it asked): its card says so. A call whose
        arguments were still open is complete by now: its last update carries the status."""
        call = self._calls.get(_call_key(message.tool_call_id, message.agent_id))
        if call is None or call.status != "pending":
            return []
        if call is not self._open:
            return [self._status(call, "in_progress")]
        self._open = None
        update = self._complete(call)
        call.status = update["status"] = "in_progress"
        return [update]

    @_on(StatusUpdate)
    def _status_update(self, message: StatusUpdate) -> list[Update]:
        updates = self.plans.plan_mode_ended() if self.plans is not None and message.plan_mode is False else []
        usage = self._usage(message)
        if usage is None:
            return updates
        self.last_usage = usage
        return updates if self.replay else [*updates, usage]

    @_on(SteerInput)
    def _steer(self, message: SteerInput) -> list[Update]:
        return user_chunks(message.user_input, self._ids.next("user"))

    @_on(PlanDisplay)
    def _plan(self, message: PlanDisplay) -> list[Update]:
        if self.plans is not None:  # the plan is a plan of the client's own: not repeated in the message
            return self.plans.presented(message)
        return [self._agent_text(plan_text(message))]

    @_on(PlanCleared)
    def _plan_cleared(self, message: PlanCleared) -> list[Update]:
        return self.plans.cleared(message.path) if self.plans is not None else []

    @_on(StepRetry)
    def _step_retry(self, message: StepRetry) -> list[Update]:
        # A live event: what was retried then does not matter when reloading.
        return [] if self.replay else [self._retry(message)]

    @_on(Notification)
    def _notified(self, message: Notification) -> list[Update]:
        # E.g. "no sandbox here": about the live session, not its history.
        return [] if self.replay else [self._notification(message)]

    @_on(CompactionBegin)
    def _compaction_begins(self, message: CompactionBegin) -> list[Update]:
        return [self._compaction_begin()]

    @_on(CompactionEnd)
    def _compaction_ends(self, message: CompactionEnd) -> list[Update]:
        return self._compaction_end()

    @_on(TurnBegin)
    def _turn_begins(self, message: TurnBegin) -> list[Update]:
        if self.replay:
            self.begin_turn()
            return user_chunks(message.user_input, self._ids.next("user"))
        # Live, the client shows the prompt it sent; a turn nested in it (a flow node's prompt,
        # sent by the agent itself) would otherwise be invisible.
        message_id = self._ids.next("user")
        shown = user_chunks(message.user_input, message_id) if self._prompt_begun else []
        self._prompt_begun = True
        return shown

    def flush(self) -> list[Update]:
        """Updates still owed at the end of a turn (a call whose arguments just finished); at the
        end of a replay, also plans whose files are gone (plans.py)."""
        updates = self._close_open_call()
        if self.replay and self.plans is not None:
            updates += self.plans.history_ended()
        return updates

    def approval_requested(self, request: ApprovalRequest) -> list[Update]:
        """Updates owed before asking about a call: its card complete. It stays `pending` until it
        runs (`ToolStarted`, once approved)."""
        # A background subagent's card always is complete; the open call is then the root's, still
        # streaming beside it.
        return [] if request.source_kind == "background_agent" else self._close_open_call()

    def knows(self, llm_id: str) -> bool:
        """Whether a card for this call is shown (a subagent's call: its id without the agent's)."""
        return self._known_key(llm_id) in self._calls

    def terminal_attached(self, llm_id: str, terminal_id: str) -> ToolCallProgress:
        llm_id = self._known_key(llm_id)
        call = self._calls.get(llm_id)
        if call is not None:
            call.terminal = True
            call.status = "in_progress"  # a command runs in it: the card must say so
        return update_tool_call(self.acp_id(llm_id), status="in_progress", content=[tool_terminal_ref(terminal_id)])

    def permission_tool_call(self, request: ApprovalRequest) -> dict[str, Any]:
        """The `toolCall` of a permission request: the card the user is asked about."""
        key = self._request_key(request)
        call = self._calls.get(key)
        arguments = call.args.final() if call else {}
        name = call.name if call else request.sender
        # The request's text is already visible (core/card_text.py); the command is shown whole, in
        # a fence nothing in it can close, and the note on escapes comes before it.
        content: list[ToolCallContent] = [diff_content(b) for b in request.display if isinstance(b, DiffDisplayBlock)]
        if not content:
            shell = next((b for b in request.display if isinstance(b, ShellDisplayBlock)), None)
            content = [code_content(shell.command, shell.language, whole=True) if shell else text_content(request.description)]
            tasks = [b for b in request.display if isinstance(b, BackgroundTaskDisplayBlock)]
            if tasks:  # TaskStop: which task, in the words of its card
                content.append(text_content(task_lines(tasks)))
        if request.sandbox:  # where the command runs: inside the OS sandbox, or outside it and why (the model's words)
            content.append(text_content(f"**Sandbox:** {markdown_text(request.sandbox)}"))
        notes = [b.text for b in request.display if isinstance(b, BriefDisplayBlock) and is_escapes_note(b)]
        if request.warning:  # a file holding credentials, a protected path: said first
            notes.insert(0, request.warning)
        content[:0] = [text_content(f"**Warning:** {note}") for note in notes]
        return {
            "toolCallId": self.acp_id(key),
            "title": titled(call.title if call and call.title else one_line(request.description, TITLE_MAX), request),
            "name": name,
            "kind": permission_kind(tool_kind(name)),
            "status": "pending",
            "rawInput": shown_data(arguments),
            "locations": tool_locations(name, arguments, self.cwd),
            "content": content,
        }

    def _request_key(self, request: ApprovalRequest) -> str:
        """The key of the card a request asks about (a child session's mapper has only its own calls)."""
        return _call_key(request.tool_call_id, request.agent_id)

    # ------------------------------------------------------------------ pieces

    def _tool_call(
        self, message: ToolCall, key: str | None = None, prefix: str = "", agent: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Update:
        name = message.function.name
        key = key or message.id
        call = _Call(f"{self._turn}/{key}", name, StreamingArguments(message.function.arguments), prefix=prefix,
                     agent=agent)
        if key in self._calls:  # an id reused within one turn still gets its own card
            call.acp_id = f"{call.acp_id}#{len(self._calls)}"
        if agent is None:  # a new card for this id: subagent runs tied to an earlier one are over
            for stale in [k for k, c in self._parents.items() if k[1] == key and not self._may_go_on(c)]:
                del self._parents[stale]
        self._calls[key] = call
        final = call.args.final()
        arguments = final or call.args.partial
        call.title = self._title(name, arguments or call.arguments, prefix)
        self._settle(call)
        # A background command may show its output here: a display-only terminal can only be
        # registered by the tool_call, before it is known whether the call runs in the background
        # (unless its arguments came whole).
        if self.terminal_output and agent is None and tool_facts(name).task == "command" and (
            not final or final.get("run_in_background") is True
        ):
            call.display_terminal = call.acp_id
            meta = terminal_info(call.acp_id, str(self.cwd))
        self._open = call
        return start_tool_call(
            call.acp_id, call.title, name=name, kind=tool_kind(name), raw_input=shown_data(arguments),
            locations=tool_locations(name, arguments, self.cwd), meta=meta,
        )

    @_on(ToolCallPart)
    def _tool_call_part(self, message: ToolCallPart) -> list[Update]:
        call = self._open
        if call is None or not message.arguments_part:
            return []
        if not call.args.append(message.arguments_part):  # read incrementally (arguments.py)
            return []
        title = self._title(call.name, call.args.partial, call.prefix)
        self._settle(call)
        if title == call.title:
            return []  # nothing the user would see changed: no update per argument chunk
        call.title = title
        return [update_tool_call(call.acp_id, title=title, raw_input=shown_data(call.args.partial))]

    def _settle(self, call: _Call) -> None:
        """Stop reading a call's arguments as they stream once its title cannot change any more."""
        if not call.args.watching:
            return
        key = tool_facts(call.name).subject
        custom = self._tool_titles(call.name) if self._tool_titles is not None else None
        if key is None or custom or call.args.complete(key):
            call.args.stop_watching()

    def _close_open_call(self) -> list[Update]:
        call, self._open = self._open, None
        if call is None or call.closed:
            return []
        return [self._complete(call)]

    def _complete(self, call: _Call) -> ToolCallProgress:
        """The update that completes a card: its final title, arguments and locations."""
        call.closed = True
        arguments = call.args.final()
        # read once: the title from the parsed arguments, from the text only when it is not JSON
        call.title = self._title(call.name, arguments or call.arguments, call.prefix)
        locations = tool_locations(call.name, arguments, self.cwd)
        return update_tool_call(call.acp_id, title=call.title, raw_input=shown_data(arguments), locations=locations)

    @staticmethod
    def _status(call: _Call, status: ToolCallStatus) -> ToolCallProgress:
        call.status = status
        return update_tool_call(call.acp_id, status=status)

    @_on(ToolResult)
    def _tool_result(self, message: ToolResult, key: str | None = None) -> list[Update]:
        key = key or message.tool_call_id
        call = self._calls.get(key)
        name = call.name if call else ""
        result = message.return_value
        terminal_shown = bool(call and call.terminal and not self.replay)
        status: ToolCallStatus = "failed" if result.is_error else "completed"
        if call is not None:
            call.status = status
        edits = [b for b in result.display if isinstance(b, DiffDisplayBlock) and b.new_start]
        locations: list[Location] | None
        if edits and call is not None:
            locations = [location(b.path, first_changed_line(b)) for b in edits[:20]]
        else:
            locations = read_locations(name, call.args.final(), result, self.cwd) if call is not None else None
        update = update_tool_call(
            self.acp_id(key), status=status, content=result_content(name, result, terminal_shown=terminal_shown),
            raw_output=raw_output(result), locations=locations,
        )
        tasks = [b for b in result.display if isinstance(b, BackgroundTaskDisplayBlock)]
        updates: list[Update] = [update]
        if call is not None and call.agent is None and tool_facts(name).task and len(tasks) == 1 and not result.is_error:
            updates += self._show_task(call, tasks[0], update)
        if self.plans is not None:
            updates += self.plans.tool_result(result, call.agent if call is not None else None)
        else:
            updates += [update_plan(plan_entries(b)) for b in result.display if isinstance(b, TodoDisplayBlock)]
        return updates

    def _show_task(self, call: _Call, block: BackgroundTaskDisplayBlock, update: ToolCallProgress) -> list[Update]:
        """The card of a started background task: it shows the task's state, now and when it ends,
        and on a display-only terminal the command's output (what it wrote so far, then as it comes)."""
        current = self._task_state(block.task_id) if self._task_state is not None else None
        if current is not None and current.status != block.status:  # it ended before its card was complete
            block = current
            update["content"] = [text_content(task_lines([block]))]
        call.task = block
        if call.running_task:
            self._task_cards[block.task_id] = call
        if call.display_terminal is None or block.kind != "bash" or self._task_log is None:
            return []
        call.feed = TerminalFeed(call.display_terminal)
        update["content"] = _task_content(call, block)
        data, exit_code = self._task_log(block.task_id)
        meta = call.feed.feed(data) or {}
        if not call.running_task:  # no end will be announced for it any more
            meta.update(call.feed.exit(exit_code))
            call.feed = None
        return [update_tool_call(call.acp_id, meta=meta)] if meta else []

    def _may_go_on(self, parent: _Call) -> bool:
        """Whether a subagent tied to this `Agent` card may still send events: its background task
        runs (live), or it ran in the background at all (a replay: the state it shows is today's)."""
        return parent.running_task or (self.replay and parent.task is not None)

    def _parent(self, agent: str, parent_id: str) -> _Call | None:
        """The `Agent` card a subagent's run is tied to: found once in the turn that made it, then kept."""
        key = (agent, parent_id)
        parent = self._parents.get(key)
        if parent is None:
            parent = self._calls.get(parent_id)
            if parent is not None:
                self._parents[key] = parent
        return parent

    @_on(SubagentEvent)
    def _subagent_event(self, message: SubagentEvent) -> list[Update]:
        """A subagent's call is a card of its own: titled with the subagent's type, tied to the
        parent's card in `_meta`, keyed by agent so its approvals find it. The subagent's text is
        shown in the parent's card while it runs (the result replaces it)."""
        try:
            event = from_envelope(message.event.model_dump())
        except WireDecodeError:
            return []
        agent = message.agent_id or "subagent"
        parent_id = message.parent_tool_call_id or ""
        parent = self._parent(agent, parent_id)
        if isinstance(event, ToolCall):
            key = _call_key(event.id, agent)
            streaming = self._open
            parent_acp_id = parent.acp_id if parent is not None else self.acp_id(parent_id)
            meta = {"kimi": {"parentToolCallId": parent_acp_id, "agentId": agent, "subagentType": message.subagent_type}}
            prefix = f"[{message.subagent_type or 'subagent'}] "
            updates = [self._tool_call(event, key, prefix=prefix, agent=agent, meta=meta)]
            updates += self._close_open_call()  # it arrives whole
            self._open = streaming
            return updates
        if isinstance(event, ToolResult):
            return self._tool_result(event, _call_key(event.tool_call_id, agent))
        if isinstance(event, TextPart) and event.text.strip() and parent is not None:
            content: list[ToolCallContent] = [text_content(event.text)]
            if parent.task is not None:  # a background agent: its card shows the task's state, then its latest message
                if self.replay or not parent.running_task:
                    return []
                content.insert(0, text_content(task_lines([parent.task])))
            elif parent.status in ENDED:
                return []
            return [update_tool_call(parent.acp_id, content=content)]
        return []

    def _known_key(self, llm_id: str) -> str:
        """`llm_id` as a key of `_calls`: itself, or the one subagent call with that id."""
        if llm_id in self._calls:
            return llm_id
        matches = [k for k in self._calls if k.endswith("/" + llm_id)]
        return matches[-1] if matches else llm_id

    def _agent_text(self, text: str) -> MessageChunk:
        self.shown_output = True
        return self._chunk("agent", text_block(text))

    def _chunk(self, kind: Kind, content: ContentBlock) -> MessageChunk:
        build = update_agent_thought if kind == "thought" else update_agent_message
        return build(content, self._ids.next(kind))

    def note(self, text: str) -> MessageChunk:
        """A line of the agent's message shown live only (the MCP status, a model error): a message of
        its own, whose id leaves those of the messages a replay shows alone."""
        return update_agent_message_text(text, self._ids.note())

    def _retry(self, message: StepRetry) -> Update:
        cause = retry_cause(message.error_type, message.status_code)
        title = f"Retrying after {cause} (attempt {message.next_attempt} of {message.max_attempts})"
        if self.notices:
            return notice("warning", title, f"The model request failed; trying again in {message.wait_s:g} s.")
        self.shown_output = True
        return self.note(f"\n\n_{title}…_\n\n")  # live only: a replay skips retries

    def _notification(self, message: Notification) -> Update:
        """A notice of the agent's own (no sandbox on this machine, …): the client's `notice` when it
        advertised them, else a line of the agent's message."""
        if self.notices:
            return notice(NOTICE_SEVERITIES.get(message.severity, "info"), message.title, message.body)
        self.shown_output = True
        return self.note(f"\n\n**{message.title}.** {message.body}\n\n")

    def _compaction_begin(self) -> Update:
        self._compactions += 1
        self._compaction_id = f"{self._turn}-compaction-{self._compactions}"
        if self.compaction_updates:
            return update_compaction(self._compaction_id, "in_progress")
        return self._agent_text("\n\n_Compacting the conversation to free up context…_\n\n")

    def _compaction_end(self) -> list[Update]:
        compaction_id, self._compaction_id = self._compaction_id, None
        if self.compaction_updates:
            if compaction_id is None:
                return []
            return [update_compaction(compaction_id, "completed")]
        return [self._agent_text("_Context compacted: older messages are now a summary._\n\n")]

    def _usage(self, message: StatusUpdate) -> UsageUpdate | None:
        if message.context_tokens is None or not message.max_context_tokens:
            return None
        cost = self._session_cost() if self._session_cost is not None else None
        return update_usage(max(0, message.context_tokens), message.max_context_tokens, cost)


def _plans(client_capabilities: dict[str, Any] | None) -> Plans:
    """What a client that takes plan operations is shown of the plans (imported only for one)."""
    from .plans import Plans, opens_files

    return Plans(files=opens_files(client_capabilities))


def _task_content(call: _Call, block: BackgroundTaskDisplayBlock) -> list[ToolCallContent]:
    """A task card's content: the task's state, below the terminal that shows its output (if any)."""
    content: list[ToolCallContent] = [text_content(task_lines([block]))]
    if call.display_terminal is not None and call.feed is not None:
        content.insert(0, tool_terminal_ref(call.display_terminal))
    return content


def raw_output(result: ToolReturnValue) -> dict[str, Any]:
    """What the tool returned to the model, as a card's `rawOutput`: its message and its output
    (media parts named, not sent), each cut at RAW_OUTPUT_MAX characters."""
    if isinstance(result.output, str):
        output = result.output
    else:
        output = "".join(p.text if isinstance(p, TextPart) else f"[{p.type}]" for p in result.output)
    raw: dict[str, Any] = {"is_error": result.is_error, "message": result.message[:RAW_OUTPUT_MAX], "output": output[:RAW_OUTPUT_MAX]}
    if len(output) > RAW_OUTPUT_MAX:
        raw["output_cut"] = len(output) - RAW_OUTPUT_MAX  # characters left out
    return raw


def _call_key(llm_id: str, agent_id: str | None) -> str:
    """Calls of subagents are kept apart from the parent's (their ids may repeat)."""
    return f"{agent_id}/{llm_id}" if agent_id else llm_id


def first_changed_line(block: DiffDisplayBlock) -> int:
    """The line a hunk's change starts at (its context lines skipped), for jump-to-edit."""
    old, new = block.old_text.splitlines(), block.new_text.splitlines()
    same = 0
    while same < min(len(old), len(new)) and old[same] == new[same]:
        same += 1
    return (block.new_start or 1) + same


def plan_text(message: PlanDisplay) -> str:
    """ExitPlanMode's plan as the user reads it before approving: a titled block of the chat."""
    body = message.content.strip("\n")
    return f"\n\n**Plan** (`{message.file_path}`)\n\n{body}\n\n"


def user_chunks(user_input: UserInput, message_id: str | None = None) -> list[Update]:
    """The chunks of one user message; `message_id` (the mapper's) groups them."""
    if isinstance(user_input, str):
        return [update_user_message(text_block(user_input), message_id)]
    return [update_user_message(content_blocks_for_display(p), message_id) for p in user_input]
