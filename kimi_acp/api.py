"""The agent as a Python library: `Agent.arun`, `arun_events`, `arun_wire`.

The same core and session files as `kimi --wire`; approvals and questions go to callbacks.
Without an approval callback every action is approved (yolo); without a question callback
questions are dismissed.

>>> import asyncio, json, tempfile
>>> from kimi_acp import Agent
>>> config = {"default_model": "echo", "models": {"echo": {"provider": "p", "model": "echo",
...           "max_context_size": 100000}}, "providers": {"p": {"type": "_echo"}}}
>>> agent = Agent(work_dir=tempfile.mkdtemp(), config=config)
>>> asyncio.run(agent.arun("text: Hello from the echo model"))
'Hello from the echo model'
>>> async def kinds():
...     return [type(e).__name__ async for e in agent.arun_events("text: hi")]
>>> asyncio.run(kinds())
['TurnBegin', 'StepBegin', 'TextPart', 'StatusUpdate', 'TurnEnd']
>>> async def lines(form):
...     return [line async for line in agent.arun_wire("text: hi", form=form)]
>>> [json.loads(line)["method"] for line in asyncio.run(lines("simple"))]
['RunBegin', 'TurnBegin', 'TextDelta', 'StepEnd', 'TurnEnd', 'RunEnd']
>>> first = json.loads(asyncio.run(lines("kimi"))[0])
>>> first["method"], first["params"]["type"]
('event', 'TurnBegin')

Two line forms (docs/web.md says which to use when): the simple stream of the NDJSON note
(`encode_event_line`, one notification per event, for browsers and mobile apps) is the default
of `arun_wire`; `form="kimi"` gives Kimi Wire's `event`/`request` lines, exactly what `kimi --wire`
writes (`encode_wire_line` / `decode_wire_line`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, overload

from .config import Config, LoadedConfig, load_config
from .core.agent_core import INTERNAL_SIGNALS, AgentCore, FromUser
from .core.undo import UndoReport as UndoReport  # re-exported: the package root serves it from here
from .simple_stream import SimpleEvent, SimpleStream, encode_event_line
from .wire import jsonrpc as rpc
from .wire.serde import WireDecodeError, from_envelope, to_envelope
from .wire.types import (
    ApprovalKind,
    ApprovalRequest,
    ApprovalResponse,
    QuestionRequest,
    QuestionResponse,
    Request,
    StepBegin,
    TextPart,
    UserInput,
    WireMessage,
)

# An approval callback gets the request and returns "approve" / "approve_for_session" / "reject",
# or (kind, feedback), or an ApprovalResponse; it may be async.
ApprovalAnswer = ApprovalKind | tuple[ApprovalKind, str] | ApprovalResponse
ApprovalHandler = Callable[[ApprovalRequest], ApprovalAnswer | Awaitable[ApprovalAnswer]]
# A question callback returns {question text: chosen label, or a list of labels for a multi-select
# question}; it may be async. Empty (or no callback) means dismissed.
QuestionAnswers = dict[str, str | list[str]]
QuestionHandler = Callable[[QuestionRequest], QuestionAnswers | Awaitable[QuestionAnswers]]

_END = object()
StreamForm = Literal["simple", "kimi"]

log = logging.getLogger(__name__)


class Agent:
    """A coding agent bound to a work dir and a session (new, resumed by id, or the last one)."""

    def __init__(
        self,
        *,
        work_dir: str | Path = ".",
        config: Config | dict[str, Any] | str | Path | None = None,
        model: str | None = None,
        session: str | None = None,
        continue_session: bool = False,
        yolo: bool = False,
        on_approval: ApprovalHandler | None = None,
        on_question: QuestionHandler | None = None,
        max_steps_per_turn: int | None = None,
    ) -> None:
        from . import sessions
        from .root_core import load_root_agent

        self._loaded = _load(config)
        # the config's agent_file, checked before a session is created (AgentFileError, a ValueError)
        self._agent = load_root_agent(self._loaded)
        self._session = sessions.select(Path(work_dir), session, continue_session)
        self._model = model
        self._yolo = yolo
        self._on_approval = on_approval
        self._on_question = on_question
        self._max_steps = max_steps_per_turn
        self._core: AgentCore | None = None

    @property
    def session_id(self) -> str:
        return self._session.id

    @property
    def core(self) -> AgentCore:
        if self._core is None:
            from .front_end import FrontEnd
            from .kaos.local import LocalKaos
            from .root_core import build_root_core
            from .util.process_guard import keep_process_private

            # Before the model can run a command: the host program's environment (a key variable)
            # and memory stay out of its reach, as in every front end (docs/security.md).
            keep_process_private()

            # the agent file, skills, [[hooks]] and the Agent tool, as in every front end
            self._core = build_root_core(
                self._session,
                self._loaded,
                LocalKaos(),
                agent=self._agent,
                front_end=FrontEnd(yolo=self._yolo or self._on_approval is None),
                model_alias=self._model,
                max_steps_per_turn=self._max_steps,
            )
        return self._core

    async def arun(self, user_input: UserInput) -> str:
        """Run one turn; returns the text of the model's final reply."""
        final: list[str] = []
        async for message in self.arun_events(user_input):
            if isinstance(message, StepBegin):
                final = []
            elif isinstance(message, TextPart):
                final.append(message.text)
        return "".join(final)

    @overload
    def arun_events(self, user_input: UserInput, *, form: Literal["kimi"] = ...) -> AsyncIterator[WireMessage]: ...

    @overload
    def arun_events(self, user_input: UserInput, *, form: Literal["simple"]) -> AsyncIterator[SimpleEvent]: ...

    async def arun_events(self, user_input: UserInput, *, form: StreamForm = "kimi") -> AsyncIterator[Any]:
        """Run one turn, yielding every Wire message in order (streamed chunks unmerged), or with
        `form="simple"` the simple stream's events (RunBegin … RunEnd) mapped from them.

        Errors of the turn (no model configured, provider failure) are raised after TurnEnd (RunEnd).
        """
        _check_form(form)
        if form == "simple":
            mapper = SimpleStream()
            async for message in self._wire_messages(user_input):
                for event in mapper.feed(message):
                    yield event
            return
        async for message in self._wire_messages(user_input):
            yield message

    async def _wire_messages(self, user_input: UserInput) -> AsyncIterator[WireMessage]:
        core = self.core
        queue: asyncio.Queue[Any] = asyncio.Queue()
        unsubscribe = core.stream.subscribe(queue.put_nowait)
        answering: set[asyncio.Task[None]] = set()
        turn = asyncio.create_task(core.run_turn(FromUser(user_input)))  # the program is the user
        turn.add_done_callback(lambda _: queue.put_nowait(_END))
        try:
            while True:
                message = await queue.get()
                if message is _END:
                    break
                if isinstance(message, INTERNAL_SIGNALS):
                    continue
                if isinstance(message, Request):
                    task = asyncio.create_task(self._answer(message))
                    answering.add(task)
                    task.add_done_callback(answering.discard)
                yield message
            turn.result()  # re-raises the turn's error, after its TurnEnd was yielded
            from . import sessions

            # Like `kimi --wire`: a turn that ran makes this the session `continue_session=True` picks.
            sessions.set_last_session_id(core.work_dir, core.session.id)
        finally:
            unsubscribe()
            if not turn.done():
                core.cancel()
                await asyncio.wait([turn], timeout=3.0)
            for task in answering:
                task.cancel()

    async def arun_wire(self, user_input: UserInput, *, form: StreamForm = "simple") -> AsyncIterator[str]:
        """`arun_events(user_input, form=form)` serialized: one NDJSON line (ending in `\\n`) per event.

        `form="simple"` (default): the simple stream's notifications (`encode_event_line`), for web
        and mobile clients. `form="kimi"`: Kimi Wire's `event`/`request` lines, as `kimi --wire`.
        """
        _check_form(form)
        if form == "simple":
            async for event in self.arun_events(user_input, form="simple"):
                yield encode_event_line(event)
        else:
            async for message in self.arun_events(user_input, form="kimi"):
                yield encode_wire_line(message)

    async def aundo(self, turns: int = 1, *, force: bool = False, dry_run: bool = False) -> UndoReport:
        """Take back the last `turns` turns, as `/undo` does (it runs as that command: the session
        files record it): the files they changed are restored, and they leave the conversation the
        model sees. A file changed since is left unless `force`; `dry_run` changes nothing. The
        report says what was restored, what was left and why (`report.text()`; `report.refused`
        when nothing was done). A running turn cannot be undone (TurnInProgress); a turn of this
        session running in another process raises SessionBusy."""
        if turns < 1:
            raise ValueError("turns must be at least 1")
        command = f"/undo {turns}" + (" --force" if force else "") + (" --dry-run" if dry_run else "")
        checkpoints = self.core.checkpoints
        checkpoints.last_report = None
        async for _ in self._wire_messages(command):
            pass
        report = checkpoints.last_report
        return report if report is not None else UndoReport(refused="The /undo did not run (a UserPromptSubmit hook blocked it).")

    def steer(self, user_input: UserInput) -> None:
        """Add input to the running turn; the model sees it after the current step."""
        self.core.steer(user_input)

    def cancel(self) -> bool:
        return self.core.cancel()

    async def aclose(self) -> None:
        if self._core is not None:
            await self._core.close()

    async def _answer(self, request: Request[Any]) -> None:
        try:
            if isinstance(request, ApprovalRequest):
                answer: Any = "approve"
                if self._on_approval is not None:
                    answer = await _maybe_await(self._on_approval(request))
                request.resolve(_approval(request, answer))
            elif isinstance(request, QuestionRequest):
                answers: QuestionAnswers = {}
                if self._on_question is not None:
                    answers = await _maybe_await(self._on_question(request))
                request.resolve(QuestionResponse(request_id=request.id, answers=answers or {}))
            else:
                request.decline()  # tool calls and hooks of a Wire client: none here
        except Exception:
            # A failing callback must not leave the turn waiting forever: refuse, as for a garbled answer.
            log.exception("%s callback failed; treating it as a refusal", type(request).__name__)
            request.decline()


def encode_wire_line(message: WireMessage) -> str:
    """One Wire message as a Kimi Wire NDJSON line: `event` notification, or `request` (with id)."""
    envelope = to_envelope(message)
    if isinstance(message, Request):
        data = rpc.request_message(message.id, "request", envelope)
    else:
        data = rpc.notification_message("event", envelope)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def decode_wire_line(line: str | bytes) -> WireMessage:
    """Inverse of `encode_wire_line`; raises ValueError with a one-line reason on bad input."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ValueError(f"not a JSON line: {exc}") from None
    if not isinstance(data, dict) or data.get("method") not in ("event", "request"):
        raise ValueError('not a Wire event line (expected method "event" or "request")')
    try:
        return from_envelope(data.get("params"))  # type: ignore[arg-type]
    except WireDecodeError as exc:
        raise ValueError(str(exc)) from None


def _check_form(form: str) -> None:
    if form not in ("simple", "kimi"):
        raise ValueError(f"form must be 'simple' (the simple event stream) or 'kimi' (Kimi Wire), not {form!r}")


def _load(config: Config | dict[str, Any] | str | Path | None) -> LoadedConfig:
    if isinstance(config, Config):
        return LoadedConfig(config, None, False)
    if isinstance(config, dict):
        return load_config(config_text=json.dumps(config))
    if config is not None:
        return load_config(config_file=config)
    return load_config()


def _approval(request: ApprovalRequest, answer: Any) -> ApprovalResponse:
    if isinstance(answer, ApprovalResponse):
        return answer
    feedback = ""  # none (ApprovalResponse reads a None from the tuple as "" too)
    if isinstance(answer, tuple):
        answer, feedback = answer
    if answer not in ("approve", "approve_for_session", "reject"):
        answer = "reject"
    return ApprovalResponse(request_id=request.id, response=answer, feedback=feedback)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value

