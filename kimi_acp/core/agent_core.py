"""The agent: one session's model, tools and history, and the turn loop that ties them together.

A turn is TurnBegin, then steps (StepBegin, the model's streamed reply, tool calls started as soon
as each is complete, their ToolResults, a StatusUpdate), then TurnEnd — always, whether the turn
finished, failed or was cancelled. One step (a model reply and its tool calls) is `core/step.py`;
retries, steering, compaction and the turn's end are here. Every message goes out on
`self.stream`; the session recorder and the front ends subscribe to it. Nothing here knows which
front end is listening.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from ..config import TEST_PROVIDER_TYPES, Config, ConfigError, LoadedConfig, ResolvedModel, resolve_model
from ..errors import ChatProviderError
from ..front_end import DEFAULT_FRONT_END, FrontEnd, QuestionSupport
from ..kaos.base import Kaos
from ..kaos.tasks import TaskTable
from ..llm.errors import is_context_overflow, is_retryable
from ..llm.types import ChatProvider, ChatStream, Message
from ..permissions.rules import Rules
from ..sandbox.session import SessionSandbox
from ..sessions import Session, shorten_title
from ..tools import DeferredTool, deferred_builtin_tools
from ..tools.base import SubagentLauncher, Tool, ToolContext, ToolEnv
from ..tools.plan import EXIT as EXIT_PLAN_MODE
from ..util.child_env import pass_env
from ..wire.file import WireRecorder
from ..wire.types import (
    AnswerT,
    AudioURLPart,
    ImageURLPart,
    QuestionRequest,
    Request,
    SteerInput,
    StepBegin,
    StepInterrupted,
    StepRetry,
    TextPart,
    TodoDisplayItem,
    ToolCall,
    TurnBegin,
    TurnEnd,
    UserInput,
    VideoURLPart,
    encodable_user_input,
    user_input_text,
)
from .approvals import Approvals
from .compaction import compact, should_compact
from .context import Context
from .errors import LLMNotSet, LLMNotSupported, NoTurnInProgress, TurnInProgress
from .hook_points import NO_HOOKS, HookRunner
from .messages import system_note, user_message
from .plan_file import plan_file_path
from .prompt import PromptBuilder, PromptInputs, default_prompt, format_skills, with_client_prompt
from .services import TurnService
from .session_controls import SessionControls
from .session_lock import TurnLock
from .slash import CommandProvider, SlashRegistry, parse_slash
from .slash_commands import BUILTIN_COMMANDS, run_slash_command
from .step import run_step
from .stream import MessageStream
from .titles import ask_for_title, first_exchange
from .toolset import ToolOutcome, Toolset
from .turn import (
    INTERNAL_SIGNALS,
    CommandsChanged,
    FromUser,
    ModeChanged,
    NestedTurn,
    TitleChanged,
    ToolStarted,
    TurnResult,
)
from .usage import UsageMeter

if TYPE_CHECKING:
    from .undo import Checkpoints

__all__ = ["INTERNAL_SIGNALS", "AgentCore", "FromUser", "ModeChanged", "TitleChanged", "TurnResult"]

log = logging.getLogger(__name__)

RETRY_INITIAL_S = 0.3
RETRY_MAX_S = 5.0
RETRY_AFTER_CAP_S = 60.0
SESSION_END_WAIT_S = 5.0  # SessionEnd hooks at close: bounded, the process may be exiting
TITLE_MAX_ATTEMPTS = 2  # model requests for a session's title, failed ones included
TITLE_TIMEOUT_S = 60.0
PLAN_MODE_REMINDER = (
    "<system-reminder>Plan mode is on. You MUST NOT make any edits (with the exception of the plan file "
    "below), run non-readonly tools, or otherwise change the system; this supersedes any other instruction.\n"
    "Plan file: {path} ({state}). It is the only file you may change.\n"
    "Workflow: understand the code (Glob, Grep, ReadFile), design one recommended approach, write the plan "
    "to the plan file with WriteFile or StrReplaceFile, then {finish}.</system-reminder>"
)


class AgentCore:
    """One session's agent: open it for a session (`AgentCore.open`), then drive it with `run_turn`.

    It keeps the turn (run, cancel, steer, close); the session's settings are its `controls`
    (core/session_controls.py). Between turns it holds no open files, so a server can keep
    thousands of idle sessions.
    """

    # A subagent's core (subagents/child.py) works for the model: its controls refuse every change.
    refuses_settings: ClassVar[bool] = False

    @classmethod
    def open(cls, *, session: Session, loaded_config: LoadedConfig, kaos: Kaos, **options: Any) -> Self:
        """The session's core with its history read from `context.jsonl`; a new session also gets
        its system prompt written (and the config's `default_plan_mode` saved). `options` are the
        constructor's."""
        core = cls(session=session, loaded_config=loaded_config, kaos=kaos, context=Context.load(session.context_file), **options)
        if core.context.is_new:
            core._begin_new_session()
        return core

    def __init__(
        self,
        *,
        session: Session,
        loaded_config: LoadedConfig,
        kaos: Kaos,
        context: Context,
        model_alias: str | None = None,
        thinking: bool | None = None,
        max_steps_per_turn: int | None = None,
        tools: Sequence[Tool[Any] | DeferredTool] | None = None,
        system_prompt: PromptBuilder | None = None,
        commands: Sequence[CommandProvider] = (),
        extra_dirs: Sequence[Path] = (),
        sandbox: SessionSandbox | None = None,
        checkpoints: Checkpoints | None = None,
        front_end: FrontEnd = DEFAULT_FRONT_END,
        approvals: Approvals | None = None,
    ) -> None:
        """`tools` and `system_prompt` come from an agent file (`kimi_acp/agent_file.py`); by default
        the session has every built-in tool and the default prompt. `commands` adds slash commands
        (skills and flows, `kimi_acp/skills/provider.py`); their skills are listed in the system prompt.
        `extra_dirs` are workspace directories of this process only (ACP additionalDirectories, --add-dir).
        `sandbox`: the session's OS sandbox (kimi_acp/sandbox), a subagent's its root's; by default
        the session's own, from the config's `[sandbox]`, which closes with it.
        `checkpoints`: what /undo restores from (core/undo.py); a subagent records into its root's
        turn and begins none of its own.
        `front_end`: what the front end supports and the modes it starts in (kimi_acp/front_end.py);
        `approvals`: a subagent's, made from its root's (by default the session's own, from the
        config's `[permissions]` and `front_end`).
        `context` is the session's history as read (`Context.load`): constructing a core does no
        I/O; `open` reads the history and starts a new session's file."""
        self.session = session
        self.loaded_config = loaded_config
        self.kaos = kaos
        self.stream = MessageStream()
        self.recorder = WireRecorder(session.wire_file)
        self.stream.subscribe(self._record)
        self.context = context
        self._turn_lock = TurnLock(session.dir)
        self._front_end = front_end
        config = loaded_config.config
        self.approvals = approvals if approvals is not None else Approvals(
            session,
            self.stream.send,
            rules=Rules.from_config(config),
            runtime_yolo=config.default_yolo if front_end.yolo is None else front_end.yolo,
            runtime_afk=front_end.afk,
            default_always_ask=config.permissions.always_ask if front_end.always_ask is None else front_end.always_ask,
        )
        self.toolset = Toolset(list(tools) if tools is not None else deferred_builtin_tools(), host=self)
        self.max_steps_override = max_steps_per_turn
        self._provider: ChatProvider | None = None
        self._retired_providers: list[ChatProvider] = []  # replaced while a turn may still use them
        self.usage = UsageMeter(session)  # what its model requests used (a subagent's core: its root's)
        # The session id the provider is told (prompt cache key; the scripted test model's queue);
        # a subagent uses its root's, so a scripted run plays one list of replies for the whole tree.
        self.provider_session_id = session.id
        self._steers: list[UserInput] = []
        self._turn: asyncio.Task[TurnResult] | None = None
        self._turn_state: Literal["idle", "starting", "running"] = "idle"
        self._cancel_before_start = False
        self._requests: dict[int, Request[Any]] = {}  # open requests of tools, by id()
        self.services: list[TurnService] = []  # e.g. the session's MCP servers (see services.py)
        self.tasks = TaskTable(session.dir / "tasks")  # background tasks: outlive turns, not the session
        self.services.append(self.tasks)
        # Where Shell commands run (kimi_acp/sandbox); after the tasks: they are killed before its temp dir goes.
        self.sandbox = sandbox if sandbox is not None else SessionSandbox(session, config.sandbox, runtime_mode=front_end.sandbox)
        if sandbox is None:
            self.services.append(self.sandbox)  # the one-time "no sandbox here" notice; closes the temp dir
        self.controls = SessionControls(
            session=session,
            config=config,
            stream=self.stream,
            approvals=self.approvals,
            sandbox=self.sandbox,
            model_alias=model_alias,
            thinking=thinking,
            extra_dirs=extra_dirs,
            refusing=self.refuses_settings,
            on_model_change=self._retire_provider,
            after_status=self._close_idle_files,
        )
        # extra_dirs the system prompt does not mention (a resumed session): tell the model at the next turn
        self.controls.dirs_changed = bool(extra_dirs) and not context.is_new
        self._records_turns = checkpoints is None
        self._checkpoints = checkpoints  # a session's own is made when a turn first needs it
        # Runs the Agent tool's subagents; a front end attaches it (kimi_acp/subagents/), a
        # subagent's own core has none, and without one the Agent tool is not offered.
        self.subagents: SubagentLauncher | None = None
        self.toolset.hidden.add("Agent")
        self.slash = SlashRegistry(BUILTIN_COMMANDS)  # the built-ins, and skills/flows from `commands`
        for provider in commands:
            self.slash.add_provider(provider)
        self.prompt_builder: PromptBuilder = system_prompt or default_prompt
        self.hooks: HookRunner = NO_HOOKS  # a front end attaches the engine (kimi_acp/hooks.py)
        self._hook_source = "startup" if self.context.is_new else "resume"  # for SessionStart
        self._session_started = False
        self._user_rejected = False  # the last agent loop ended on a tool call the user refused
        self._told_skills: tuple[Any, ...] | None = None  # the skills the model knows of (see _prepare_turn)

    def _begin_new_session(self) -> None:
        """A new session's first writes: the frozen system prompt, and plan mode if the config starts there."""
        self.context.start(self.fresh_system_prompt())
        self.context.close()
        self._told_skills = tuple(self.slash.skills())
        if self.config.default_plan_mode and not self.session.state.plan_mode:
            self.session.state.plan_mode = True
            self.session.save_state()

    # ------------------------------------------------------------------ properties

    @property
    def config(self) -> Config:
        return self.loaded_config.config

    @property
    def work_dir(self) -> Path:
        return self.session.work_dir

    @property
    def busy(self) -> bool:
        return self._turn is not None

    @property
    def checkpoints(self) -> Checkpoints:
        """What /undo restores from (core/undo.py, imported here: a session that only opens needs
        none of it)."""
        if self._checkpoints is None:
            from .undo import Checkpoints

            self._checkpoints = Checkpoints(
                self.session.dir / "undo", self.config.undo, lambda: [self.work_dir, *self.workspace_dirs()]
            )
        return self._checkpoints

    @property
    def plan_mode(self) -> bool:
        return self.session.state.plan_mode

    @property
    def front_end(self) -> FrontEnd:
        """What the front end supports and the modes it started in (kimi_acp/front_end.py)."""
        return self._front_end

    @property
    def max_steps(self) -> int:
        return self.max_steps_override or self.config.loop_control.max_steps_per_turn

    def resolved_model(self) -> ResolvedModel | None:
        return self.controls.resolved_model()

    @property
    def max_context_size(self) -> int | None:
        resolved = self.resolved_model()
        return resolved.model.max_context_size if resolved else None

    def tool_env(self) -> ToolEnv:
        """The session as its tools see it now (a `core/toolset.ToolsetHost` method)."""
        resolved = self.controls.resolved_model()
        return ToolEnv(self._front_end, resolved.capabilities if resolved else frozenset(), self.config.services)

    def client_declared(self, *, questions: QuestionSupport, plan_mode: bool) -> None:
        """A Wire client says what it can show at `initialize`, which comes when the client likes
        (after the core is built, perhaps twice): the front end's description is replaced whole."""
        self._front_end = dataclasses.replace(self._front_end, questions=questions, plan_mode=plan_mode)

    # ------------------------------------------------------------------ workspace, prompt, commands

    def workspace_dirs(self) -> list[Path]:
        """Directories the tools treat as inside the workspace besides the work dir (`SessionControls.workspace_dirs`)."""
        return self.controls.workspace_dirs()

    def readable_dirs(self) -> list[Path]:
        """Where the tools read without asking besides the workspace: the skills' directories and
        the plan file (tools/base.ToolContext.may_read adds the system temp dir)."""
        return [*(Path(s.path).parent for s in self.slash.skills()), self.plan_file_path()]

    def fresh_system_prompt(self) -> str:
        """The system prompt built now (new session, /clear, compaction)."""
        inputs = PromptInputs(self.work_dir, self.toolset.names(), self.workspace_dirs(), self.slash.skills())
        return self.prompt_builder(inputs)

    def refresh_commands(self) -> bool:
        """Re-read the command providers (skills on disk); front ends hear of a change (CommandsChanged)."""
        if not self.slash.refresh():
            return False
        self.stream.send(CommandsChanged())
        return True

    def _catch_up_with_disk(self) -> None:
        """Turns another process ran on this session since ours (an IDE and `kimi web` sharing it)
        are history the model must see: reread the context file when it is not as we left it."""
        if self.context.changed_elsewhere():
            log.info("session %s: its context was written by another process; reading it again", self.session.id)
            self.context = Context.load(self.session.context_file)

    def _prepare_turn(self) -> None:
        """Before a turn: pick up skills changed on disk. The system prompt is frozen with the
        session (Kimi's format), so a change of skills is told to the model in a note instead."""
        self.refresh_commands()
        skills = tuple(self.slash.skills())
        if self.context.system_prompt is None:
            self.context.start(self.fresh_system_prompt())
            self._told_skills, self.controls.dirs_changed = skills, False
        if self._told_skills is None:  # a resumed session: which skills does its frozen prompt list?
            prompt = self.context.system_prompt or ""
            self._told_skills = skills if all(s.path in prompt for s in skills) else ()
        notes = []
        if skills != self._told_skills:
            self._told_skills = skills
            notes.append("The available skills have changed.\n" + format_skills(skills))
        if self.controls.dirs_changed:
            self.controls.dirs_changed = False
            dirs = "\n".join(f"- {d}" for d in self.workspace_dirs()) or "(none)"
            notes.append(f"The workspace directories besides the working directory are now:\n{dirs}")
        if notes:
            self.context.append([user_message([system_note(n) for n in notes])])

    async def run_nested_turn(self, user_input: UserInput) -> NestedTurn:
        """A turn inside the running one (a flow node): TurnBegin, the model's steps, TurnEnd.

        The prompt goes to the context as a user message; the model's last reply is returned."""
        self.stream.send(TurnBegin(user_input=user_input))
        try:
            provider = self.require_provider()
            self._check_capabilities(user_input, provider)
            self.context.checkpoint()
            self.context.append([user_message(user_input)])
            result = await self._agent_loop(provider)
        finally:
            self.stream.send(TurnEnd())
        last = self.context.history[-1] if self.context.history else None
        final = last.text() if last is not None and last.role == "assistant" else ""
        return NestedTurn(result, final, rejected=self._user_rejected)

    def plan_file_path(self) -> Path:
        """The plan file of the current planning round (`core/plan_file.py`)."""
        return plan_file_path(self.session)

    async def generate_title(self) -> str | None:
        """Ask the session's model for a short title (after a turn), save it and announce it.

        At most TITLE_MAX_ATTEMPTS requests per session, none once a title was generated or given
        (`/rename`), none with `[session] generate_titles = false`, and none for the scripted test
        models, whose replies belong to the conversation. Failures are logged, never raised."""
        state = self.session.state
        if not self.config.session.generate_titles or state.title_generated or state.title_generate_attempts >= TITLE_MAX_ATTEMPTS:
            return None
        exchange = first_exchange(self.context.history)
        resolved = self.resolved_model()
        if exchange is None or resolved is None or resolved.provider.type in TEST_PROVIDER_TYPES:
            return None
        state.title_generate_attempts += 1
        self.session.save_state()
        try:
            title = await asyncio.wait_for(
                ask_for_title(self.require_provider(), *exchange, on_reply=self.record_usage), TITLE_TIMEOUT_S
            )
        except Exception as exc:  # a title is a nicety: the session goes on without one
            log.warning("session %s: no title from the model: %s", self.session.id, exc)
            return None
        if title is None or not self.controls.name_automatically(title, generated=True):
            return None  # nothing usable, or renamed meanwhile
        return title

    def request_system_prompt(self) -> str:
        """The system message of the next model request (a `StepHost` method): the prompt frozen
        with the session, with the IDE's own instructions (ACP `systemPrompt`, kept in state.json)
        applied on top, so a later change takes effect at the next request."""
        frozen = self.context.system_prompt or ""
        client = self.session.state.system_prompt
        if client is None:
            return frozen
        inputs = PromptInputs(self.work_dir, self.toolset.names(), self.workspace_dirs(), self.slash.skills())
        return with_client_prompt(frozen, client.mode, client.text, inputs)

    def steer(self, user_input: UserInput) -> None:
        if not self.busy:
            raise NoTurnInProgress()
        self._steers.append(encodable_user_input(user_input))

    def cancel(self) -> bool:
        """Cancel the running turn; returns False when there is none.

        A turn cancelled before its body ran (the cancel arrived in the same read as the prompt)
        is not cancelled as a task — a task cancelled before its first step never runs its own
        handlers, so it would send no TurnBegin/TurnEnd. It is marked instead, and the body ends
        itself as cancelled right after TurnBegin.
        """
        if self._turn is None or self._turn.done():
            return False
        if self._turn_state == "starting":
            self._cancel_before_start = True
        else:
            self._turn.cancel()
        return True

    def get_todos(self) -> list[TodoDisplayItem]:
        return list(self.session.state.todos)

    def set_todos(self, items: list[TodoDisplayItem]) -> None:
        self.session.state.todos = list(items)
        self.session.save_state()

    async def close(self) -> None:
        """End the turn (2 s at most), then the session's hooks, files, services and provider. A
        cancellation of the caller is not swallowed: what needs no waiting is still closed, then
        it goes on up."""
        self.cancel()
        if self._turn is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._turn), 2.0)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():  # the caller's, not the turn's own
                    self.approvals.reject_pending(background=True)
                    self.usage.save()
                    self._close_files()
                    raise
            except Exception:  # the turn's failure (reported by it) or the 2 s
                pass
        if self._session_started:  # SessionEnd pairs with the SessionStart of this core's first turn
            self._session_started = False
            try:
                ending = self.hooks.run("SessionEnd", "exit", {"reason": "exit"})
                await asyncio.wait_for(ending, SESSION_END_WAIT_S)
            except (TimeoutError, Exception):
                log.warning("session %s: SessionEnd hooks did not finish", self.session.id)
        try:
            await self.hooks.settle(cancel=True)
        except Exception:
            log.exception("stopping background hooks failed")
        self.approvals.reject_pending(background=True)  # background subagents' requests too
        self.usage.save()  # what background subagents spent since the last turn
        self._close_files()
        for service in self.services:
            try:
                await service.aclose()
            except Exception:
                log.exception("closing %s failed", type(service).__name__)
        self._retire_provider()
        await self._close_retired_providers()

    # ------------------------------------------------------------------ turn

    async def run_turn(self, prompt: UserInput | FromUser) -> TurnResult:
        """Run one turn to its end. Raises AgentError / ChatProviderError when it fails.

        Only a prompt the user typed (`FromUser`, what the front ends pass) may be a slash command;
        any other (a subagent's) goes to the model as text, whatever it starts with."""
        if self._turn is not None:
            raise TurnInProgress(user_input_text(prompt.user_input if isinstance(prompt, FromUser) else prompt))
        self._turn_lock.acquire()  # SessionBusy when another process runs a turn of this session
        try:
            self._catch_up_with_disk()
            self._prepare_turn()
        except BaseException:
            self._turn_lock.release()
            raise
        self._turn_state, self._cancel_before_start = "starting", False
        task = asyncio.create_task(self._turn_body(prompt))
        self._turn = task
        try:
            result = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our caller is being cancelled (shutdown): not a turn outcome
            result = TurnResult("cancelled")  # the task itself was cancelled from outside
        finally:
            self._turn, self._turn_state = None, "idle"
            self._turn_lock.release()
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise asyncio.CancelledError()
        return result

    async def _turn_body(self, prompt: UserInput | FromUser) -> TurnResult:
        typed = isinstance(prompt, FromUser)
        user_input = prompt.user_input if isinstance(prompt, FromUser) else prompt
        self._turn_state = "running"  # from here on, cancel() cancels this task
        user_input = encodable_user_input(user_input)  # written to wire.jsonl and context.jsonl below
        pass_env(self.config.permissions.pass_env)  # what this turn's child processes may keep (util/child_env.py)
        self.approvals.turn_id = uuid.uuid4().hex
        self._steers.clear()
        self.stream.send(TurnBegin(user_input=user_input))
        cancelled = False
        try:
            if self._cancel_before_start:
                return TurnResult("cancelled")
            text = user_input_text(user_input)
            if await self._prompt_blocked(text):
                return TurnResult("finished")
            slash = parse_slash(text) if typed else None  # the user's commands, never the model's
            if slash is not None:
                outcome = await run_slash_command(self, *slash)
                if isinstance(outcome, TurnResult):
                    return outcome
                user_input = outcome.user_input  # /init, /skill:<name>: the prompt it expands into
            provider = self.require_provider()
            self._check_capabilities(user_input, provider)
            if slash is None:
                self.controls.name_automatically(shorten_title(text) if text.strip() else "Untitled", generated=False)
            if self._records_turns:  # from here on the turn can be undone (core/undo.py)
                await self.checkpoints.begin_turn(text, self.context.path)
            self.context.checkpoint()
            self.context.append([user_message(user_input)])
            return await self._loop_with_stop_hook(provider)
        except asyncio.CancelledError:
            cancelled = True
            return TurnResult("cancelled")
        finally:
            await self._settle_hooks(cancel=cancelled)
            self.approvals.reject_pending()
            for request in list(self._requests.values()):
                request.decline()
            await self._end_checkpoint()
            await self._close_retired_providers(at_turn_end=True)
            self.stream.send(TurnEnd())
            self.usage.save()
            self._close_files()  # flushed and closed: idle sessions keep no file descriptors

    async def _end_checkpoint(self) -> None:
        """What the turn changed, written down for /undo; TurnEnd must follow whatever happens here."""
        if not self._records_turns:
            return
        try:
            await self.checkpoints.end_turn()
        except asyncio.CancelledError:
            pass  # cancelled again while it was written: the next turn or /undo ends the record

    def _close_files(self) -> None:
        """Close both session files, the second even when the first cannot be flushed (a full
        disk): the error of the first is raised after."""
        try:
            self.recorder.close()
        finally:
            self.context.close()

    async def _prompt_blocked(self, text: str) -> bool:
        """SessionStart (first turn of this core), then UserPromptSubmit. A block ends the turn with
        its reason as the agent's reply, before the prompt reaches the context."""
        if not self._session_started:
            self._session_started = True
            await self.hooks.run("SessionStart", self._hook_source, {"source": self._hook_source})
        verdict = await self.hooks.run("UserPromptSubmit", text, {"prompt": text})
        if verdict.blocked:
            self.say(verdict.reason or "Prompt blocked by hook.")
        return verdict.blocked

    async def _loop_with_stop_hook(self, provider: ChatProvider) -> TurnResult:
        """The agent loop, then the Stop hook: a block with a reason buys one more round, once."""
        result = await self._agent_loop(provider)
        while result.status == "finished" and self._consume_steers():  # steered just as the model finished
            result = await self._agent_loop(provider)
        if result.status != "finished" or self._user_rejected:
            return result
        verdict = await self.hooks.run("Stop", "", {"stop_hook_active": False})
        if not (verdict.blocked and verdict.reason):
            return result
        self.context.append([user_message(verdict.reason)])
        self.stream.send(SteerInput(user_input=verdict.reason))  # shown: why the agent goes on
        result = await self._agent_loop(provider)
        if result.status == "finished" and not self._user_rejected:
            await self.hooks.run("Stop", "", {"stop_hook_active": True})  # told, but no third round
        return result

    async def _settle_hooks(self, *, cancel: bool) -> None:
        """Hooks fired in the background (PostToolUse, …) end with the turn: awaited, or killed when
        the turn was cancelled. TurnEnd must follow whatever happens here."""
        try:
            await self.hooks.settle(cancel=cancel)
        except asyncio.CancelledError:
            pass  # cancelled while waiting: the engine has killed them
        except Exception:
            log.exception("background hooks failed")

    async def _agent_loop(self, provider: ChatProvider) -> TurnResult:
        self._user_rejected = False
        for service in self.services:
            await service.before_turn(self.stream.send)
        step = 0
        while True:
            step += 1
            if step > self.max_steps:
                return TurnResult("max_steps_reached", steps=self.max_steps)
            self.stream.send(StepBegin(n=step))
            await self._maybe_compact(provider)
            self.context.checkpoint()
            if note := self.tasks.take_finished_note():  # background tasks that ended: tell the model
                self.context.append([Message(role="user", content=note)])
            try:
                outcomes = await self._step_with_retries(provider, step)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self.stream.send(StepInterrupted())
                if isinstance(exc, Exception):
                    kind = type(exc).__name__
                    self.hooks.fire("StopFailure", kind, {"error_type": kind, "error_message": str(exc)})
                raise
            rejected_silently = any(o.rejected and not o.feedback for o in outcomes)
            self._user_rejected = rejected_silently
            steered = self._consume_steers()
            if steered:
                continue
            if rejected_silently:
                return TurnResult("finished")  # the user said no: wait for them
            if not outcomes:
                return TurnResult("finished")

    async def _step_with_retries(self, provider: ChatProvider, n: int) -> list[ToolOutcome]:
        attempts = self.config.loop_control.max_retries_per_step
        attempt = 1
        compacted = False
        while True:
            try:
                return await run_step(self, provider)
            except ChatProviderError as exc:
                if is_context_overflow(exc) and not compacted and self.context.history:
                    # The request did not fit the model's window: compact once, then ask again.
                    log.info("step %d: the model's window is full (%s); compacting", n, exc)
                    compacted = True
                    await compact(self, provider, trigger="auto")
                    continue
                if not is_retryable(exc) or attempt >= attempts:
                    raise
                wait = _backoff(attempt, getattr(exc, "retry_after", None))
                self.stream.send(
                    StepRetry(
                        n=n,
                        next_attempt=attempt + 1,
                        max_attempts=attempts,
                        wait_s=round(wait, 3),
                        error_type=type(exc).__name__,
                        status_code=getattr(exc, "status_code", None),
                    )
                )
                log.info("step %d attempt %d failed (%s); retrying in %.2fs", n, attempt, exc, wait)
                await asyncio.sleep(wait)
                attempt += 1

    def tool_context(self, call: ToolCall, tool_name: str) -> ToolContext:
        """Everything one tool call may use (a `StepHost` method, core/step.py)."""
        self.checkpoints.warm_up()  # the first tool call of a session starts reading the workspace for /undo
        context = self._context(call.id, tool_name, call.function.arguments or "")
        context.on_start = lambda: self.stream.send(ToolStarted(call.id))
        return context

    def command_context(self, command: str) -> ToolContext:
        """What a slash command the user typed (`/export`, `/import`) asks through: the tools'
        checks of a path (tools/permits.py), its approval card named after the command."""
        return self._context(f"{command.lstrip('/')}-{uuid.uuid4().hex[:8]}", command, "")

    def _context(self, call_id: str, tool_name: str, arguments: str) -> ToolContext:
        return ToolContext(
            work_dir=self.work_dir,
            kaos=self.kaos,
            tool_call_id=call_id,
            approver=self.approvals,
            todos=self,
            send_request=self.send_request,
            additional_dirs=self.workspace_dirs(),
            tool_name=tool_name,
            plan=self.controls,
            tasks=self.tasks,
            subagents=self.subagents,
            readable=self.readable_dirs(),
            sandbox=self.sandbox,
            arguments=arguments,
            checkpoints=self.checkpoints,
        )

    async def send_request(self, request: Request[AnswerT]) -> AnswerT:
        """Put a request on the stream and wait for whoever drives the session to answer it."""
        asks_question = isinstance(request, QuestionRequest)  # a flag, so `declined()` stays an AnswerT
        if asks_question and self.approvals.afk:
            return request.declined()  # afk: nobody to ask, dismissed at once
        self._requests[id(request)] = request
        try:
            self.stream.send(request)
            return await request.wait()
        finally:
            self._requests.pop(id(request), None)

    def _consume_steers(self) -> bool:
        if not self._steers:
            return False
        steers, self._steers = self._steers, []
        for steer in steers:
            self.context.append([user_message(steer)])
            self.stream.send(SteerInput(user_input=steer))
        return True

    def plan_reminder(self) -> str:
        """The note a step in plan mode adds after the history (a `StepHost` method)."""
        path = self.plan_file_path()
        state = "exists: read it first, then update it" if path.exists() else "does not exist yet: create it with WriteFile"
        can_exit = self.toolset.offers(EXIT_PLAN_MODE)
        finish = "call ExitPlanMode for the user's approval" if can_exit else "present the plan and wait for the user"
        return PLAN_MODE_REMINDER.format(path=path, state=state, finish=finish)

    # ------------------------------------------------------------------ model

    def record_usage(self, stream: ChatStream) -> None:
        """A model reply ended: its tokens and cost go to the session's meter (a `StepHost` and
        `CompactionHost` method; a subagent's core shares its root's meter)."""
        self.usage.record(stream, self.resolved_model())

    def require_provider(self) -> ChatProvider:
        """The session's chat provider, created on first use; LLMNotSet when no model is usable."""
        if self._provider is not None:
            return self._provider
        try:
            resolved = resolve_model(self.config, self.controls.model_alias)
        except ConfigError as exc:
            raise LLMNotSet(str(exc)) from None
        if resolved is None:
            raise LLMNotSet()
        if not resolved.usable:
            raise LLMNotSet(f"LLM is not set: model '{resolved.alias}' needs a base_url and a model name")
        from ..llm import create_provider

        thinking = self.controls.wanted_thinking()
        self._provider = create_provider(resolved, thinking=thinking, session_id=self.provider_session_id)
        return self._provider

    def _retire_provider(self) -> None:
        """The model or thinking changed: the next request makes a new provider. The old one may be
        in use by the running turn, so it is closed when the turn ends (or with the core)."""
        if self._provider is not None:
            self._retired_providers.append(self._provider)
            self._provider = None

    async def _close_retired_providers(self, *, at_turn_end: bool = False) -> None:
        """Close the providers `_retire_provider` kept; at a turn's end a cancel cannot stop the
        TurnEnd that must follow."""
        retired, self._retired_providers = self._retired_providers, []
        for provider in retired:
            try:
                await provider.aclose()
            except asyncio.CancelledError:
                if not at_turn_end:
                    raise
            except Exception:
                log.exception("closing a chat provider failed")

    def _check_capabilities(self, user_input: UserInput, provider: ChatProvider) -> None:
        if isinstance(user_input, str):
            return
        resolved = self.resolved_model()
        caps = resolved.capabilities if resolved else frozenset()
        needs = {ImageURLPart: "image_in", VideoURLPart: "video_in", AudioURLPart: "audio_in"}
        for part in user_input:
            capability = needs.get(type(part))
            if capability and capability not in caps:
                raise LLMNotSupported(provider.model_name, capability)

    async def _maybe_compact(self, provider: ChatProvider) -> None:
        max_size = self.max_context_size
        if not max_size or not should_compact(self.context.token_count, max_size, self.config.loop_control):
            return
        await compact(self, provider, trigger="auto")

    # ------------------------------------------------------------------ helpers

    def _close_idle_files(self) -> None:
        """Something was recorded between turns (a StatusUpdate of the session's controls): idle
        sessions keep no file open."""
        if not self.busy:
            self.recorder.close()

    def say(self, text: str) -> None:
        """Show text from the agent itself (slash command output) as an assistant chunk."""
        self.stream.send(TextPart(text=text))

    def _record(self, message: Any) -> None:
        if not isinstance(message, INTERNAL_SIGNALS):
            self.recorder.record(message)


def _backoff(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None and retry_after > 0:
        return min(retry_after, RETRY_AFTER_CAP_S)
    return min(RETRY_MAX_S, RETRY_INITIAL_S * (2.0 ** (attempt - 1))) + random.uniform(0, 0.3)
