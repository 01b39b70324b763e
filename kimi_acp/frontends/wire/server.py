"""`kimi --wire`: the agent over Kimi's Wire protocol (JSON-RPC 2.0 on stdio, version 1.10).

One session per process. Inbound: initialize, prompt, steer, replay, set_plan_mode, cancel.
Outbound: `event` notifications for every message of a turn (streamed chunks unmerged) and
`request`s (approvals, external tool calls, questions) that the client answers. Departures from
Kimi Code CLI, all in the client's favour: numeric ids work, approvals reach a client that never
sent `initialize`, approvals are recorded (so `replay` shows them), and notifications of known
methods are executed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...core.agent_core import INTERNAL_SIGNALS, AgentCore, FromUser
from ...core.errors import LLMNotSet, LLMNotSupported, NoTurnInProgress, SessionBusy, TurnInProgress
from ...errors import ChatProviderError, SessionError, SignInRequired
from ...hooks import attach as attach_hooks
from ...startup.stdio import StdoutWriter, stdin_is_regular_file
from ...wire import jsonrpc as rpc
from ...wire.file import read_wire_file
from ...wire.serde import describe_validation_error, to_envelope
from ...wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    BriefDisplayBlock,
    ContentPart,
    HookResponse,
    PlanQuestion,
    QuestionNotSupported,
    QuestionRequest,
    QuestionResponse,
    Request,
    ToolCallRequest,
    ToolResult,
    ToolReturnValue,
    TurnEnd,
    user_input_text,
)
from .handshake import initialize_result

if TYPE_CHECKING:
    from ...front_end import QuestionSupport

log = logging.getLogger(__name__)
SHUTDOWN_GRACE_S = 3.0
SHUTDOWN_MESSAGE = "The server is shutting down; the request was not completed."

# --------------------------------------------------------------------------- params


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ClientInfo(_Params):
    name: str
    version: str | None = None


class ExternalToolDef(_Params):
    name: str
    description: str = ""
    parameters: Any = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ClientCapabilities(_Params):
    supports_question: bool = False
    supports_plan_mode: bool = False


class InitializeParams(_Params):
    protocol_version: str
    client: ClientInfo | None = None
    external_tools: list[ExternalToolDef] | None = None
    capabilities: ClientCapabilities | None = None
    hooks: list[dict[str, Any]] | None = None


class PromptParams(_Params):
    user_input: str | list[ContentPart]


class SetPlanModeParams(_Params):
    enabled: bool


class _NoParams(_Params):
    pass


PARAMS: dict[str, type[_Params]] = {
    "initialize": InitializeParams,
    "prompt": PromptParams,
    "steer": PromptParams,
    "set_plan_mode": SetPlanModeParams,
    "replay": _NoParams,
    "cancel": _NoParams,
}


# --------------------------------------------------------------------------- server


class WireServer:
    def __init__(
        self,
        core: AgentCore,
        reader: asyncio.StreamReader,
        writer: StdoutWriter,
        *,
        early_initialize: dict[str, Any] | None = None,
        batch_input: bool | None = None,
    ) -> None:
        """`early_initialize`: params of an `initialize` already answered at start-up (`main.py`).
        `batch_input`: the end of input is the end of a batch (see `_finish_batch`); None: when
        stdin is a regular file."""
        self.core = core
        self.batch_input = batch_input
        self.reader = reader
        self.writer = writer
        self.capabilities = ClientCapabilities()
        if early_initialize is not None:
            try:
                self.capabilities = InitializeParams.model_validate(early_initialize).capabilities or self.capabilities
            except ValidationError:
                pass
        self._declare_client()
        # the core's hook engine (root_core attached it; attach is idempotent): [[hooks]] now, the
        # client's subscriptions at initialize
        self.hooks = attach_hooks(core)
        self._pending: dict[rpc.RequestId, Request[Any]] = {}  # of any kind, by the id we sent
        self._tasks: set[asyncio.Task[None]] = set()
        self._replay: asyncio.Task[dict[str, Any]] | None = None
        self._closing = False
        self._stop_requested = False
        self._input_closed = False
        core.stream.subscribe(self._on_message)

    # ------------------------------------------------------------------ outbound

    def _send(self, message: dict[str, Any]) -> None:
        self.writer.write(rpc.dumps(message))

    def _declare_client(self) -> None:
        """What the client said it can show: AskUserQuestion is offered to the model only with
        `supports_question`, EnterPlanMode / ExitPlanMode only with `supports_plan_mode`."""
        capabilities = self.capabilities
        questions: QuestionSupport = "full" if capabilities.supports_question else "none"
        self.core.client_declared(questions=questions, plan_mode=capabilities.supports_plan_mode)

    def _on_message(self, message: Any) -> None:
        if isinstance(message, INTERNAL_SIGNALS):
            return
        if isinstance(message, PlanQuestion):
            # The plan tools' questions go to a client that declared plan mode, questions or not.
            if not self.capabilities.supports_plan_mode:
                message.resolve(QuestionNotSupported())
                return
        elif isinstance(message, QuestionRequest) and not self.capabilities.supports_question:
            message.resolve(QuestionNotSupported())  # failed here: the client cannot show it
            return
        if isinstance(message, Request):
            # Sent whether or not the client sent `initialize`: a client that skipped the handshake
            # still gets to answer (Kimi Code CLI would hang here instead).
            self._pending[message.id] = message
            self._send(rpc.request_message(message.id, "request", to_envelope(message)))
            if self._input_closed or self._closing:  # nobody will answer (e.g. SessionEnd hooks at exit)
                message.decline()
            return
        self._send(rpc.notification_message("event", to_envelope(message)))
        if isinstance(message, TurnEnd):
            # Requests the core settled itself (turn over) no longer wait for the client.
            self._pending = {k: r for k, r in self._pending.items() if not r.resolved}

    # ------------------------------------------------------------------ inbound

    async def serve(self) -> None:
        """Read requests until stdin closes, then shut down cleanly."""
        try:
            while not self._closing:
                try:
                    line = await self.reader.readline()
                except ValueError:  # a line over the limit: answer and skip the rest of it
                    self._send(rpc.error_message(None, rpc.JsonRpcError(rpc.INVALID_REQUEST, "Request too large")))
                    continue
                if not line:
                    break
                if line.strip():
                    self._handle_line(line)
            batch = stdin_is_regular_file() if self.batch_input is None else self.batch_input
            if not self._stop_requested and batch:
                await self._finish_batch()
        finally:
            await self.shutdown()

    def request_stop(self) -> None:
        """A signal: stop reading and shut down, whatever is still running."""
        self._stop_requested = True
        self.reader.feed_eof()

    async def _finish_batch(self) -> None:
        """Stdin was a file (`kimi --wire < requests.jsonl`) and it ended: that is the end of the
        input, not a client gone away, so what was asked still runs to its end. Nobody can answer
        requests any more; they are settled at once as on a closed connection."""
        self._input_closed = True
        for request in list(self._pending.values()):
            request.decline()
        while self._tasks and not self._stop_requested:
            await asyncio.wait(list(self._tasks), timeout=0.2)

    def _handle_line(self, line: bytes) -> None:
        try:
            incoming = rpc.parse_line(line)
        except rpc.JsonRpcError as exc:
            self._send(rpc.error_message(exc.request_id, exc))
            return
        except rpc.InvalidResponse as exc:
            log.warning("ignoring a malformed response from the client: %s", exc)
            return
        if incoming.is_response:
            self._on_response(incoming)
            return
        task = asyncio.create_task(self._dispatch(incoming))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _dispatch(self, incoming: rpc.Incoming) -> None:
        method = incoming.method or ""
        try:
            handler = getattr(self, f"_m_{method}", None) if method in PARAMS else None
            if handler is None:
                if incoming.has_id:
                    raise rpc.JsonRpcError(rpc.METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
                return
            try:
                params = PARAMS[method].model_validate(incoming.params or {})
            except ValidationError as exc:
                raise rpc.JsonRpcError(
                    rpc.INVALID_PARAMS, f"Invalid parameters for method `{method}`: {describe_validation_error(exc)}"
                ) from None
            result = await handler(params)
        except asyncio.CancelledError:
            # Only shutdown cancels a handler; its request still gets its one answer.
            if incoming.has_id:
                self._send(rpc.error_message(incoming.id, rpc.JsonRpcError(rpc.INTERNAL_ERROR, SHUTDOWN_MESSAGE)))
            raise
        except rpc.JsonRpcError as exc:
            if incoming.has_id:
                self._send(rpc.error_message(incoming.id, exc))
            else:
                log.info("notification %s failed: %s", method, exc.message)
            return
        except Exception as exc:  # never a traceback on stdout
            log.exception("internal error in %s", method)
            if incoming.has_id:
                error = rpc.JsonRpcError(rpc.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
                self._send(rpc.error_message(incoming.id, error))
            return
        if incoming.has_id:
            self._send(rpc.result_message(incoming.id, result))

    # ------------------------------------------------------------------ methods

    async def _m_initialize(self, params: InitializeParams) -> dict[str, Any]:
        if self.core.busy:
            raise rpc.JsonRpcError(rpc.INVALID_STATE, str(TurnInProgress()))
        self.capabilities = params.capabilities or ClientCapabilities()
        self._declare_client()
        self.core.refresh_commands()  # skills added on disk since start-up are listed (and work)
        result = initialize_result(self.core.slash.commands())
        if params.external_tools is not None:
            accepted: list[str] = []
            rejected: list[dict[str, str]] = []
            for tool in params.external_tools:
                try:
                    self.core.toolset.register_external(tool.name, tool.description, tool.parameters)
                    accepted.append(tool.name)
                except ValueError as exc:
                    rejected.append({"name": tool.name, "reason": str(exc)})
            result["external_tools"] = {"accepted": accepted, "rejected": rejected}
        self.hooks.subscribe(params.hooks or [])  # answered through HookRequest; replaces earlier ones
        result["hooks"] = self.hooks.info()
        return result

    async def _m_prompt(self, params: PromptParams) -> dict[str, Any]:
        if self.core.busy or self._replay is not None:
            raise rpc.JsonRpcError(rpc.INVALID_STATE, str(TurnInProgress(user_input_text(params.user_input))))
        try:
            result = await self.core.run_turn(FromUser(params.user_input))
        except (TurnInProgress, SessionBusy) as exc:  # SessionBusy: another process runs a turn of it
            raise rpc.JsonRpcError(rpc.INVALID_STATE, str(exc)) from None
        except LLMNotSet as exc:
            raise rpc.JsonRpcError(rpc.LLM_NOT_SET, str(exc)) from None
        except LLMNotSupported as exc:
            raise rpc.JsonRpcError(rpc.LLM_NOT_SUPPORTED, str(exc)) from None
        except SignInRequired as exc:  # a Kimi account whose login is gone, expired or revoked
            raise rpc.JsonRpcError(rpc.AUTH_EXPIRED, str(exc)) from None
        except ChatProviderError as exc:
            raise rpc.JsonRpcError(rpc.CHAT_PROVIDER_ERROR, str(exc) or type(exc).__name__) from None
        except SessionError as exc:
            raise rpc.JsonRpcError(rpc.INTERNAL_ERROR, str(exc)) from None
        from ... import sessions

        sessions.set_last_session_id(self.core.work_dir, self.core.session.id)
        if result.status == "max_steps_reached":
            return {"status": "max_steps_reached", "steps": result.steps}
        return {"status": result.status}

    async def _m_steer(self, params: PromptParams) -> dict[str, Any]:
        try:
            self.core.steer(params.user_input)
        except NoTurnInProgress as exc:
            raise rpc.JsonRpcError(rpc.INVALID_STATE, str(exc)) from None
        return {"status": "steered"}

    async def _m_set_plan_mode(self, params: SetPlanModeParams) -> dict[str, Any]:
        self.core.controls.set_plan_mode(params.enabled)
        return {"status": "ok", "plan_mode": self.core.plan_mode}

    async def _m_cancel(self, params: _NoParams) -> dict[str, Any]:
        if self.core.cancel():
            return {}
        if self._replay is not None and not self._replay.done():
            self._replay.cancel()
            return {}
        raise rpc.JsonRpcError(rpc.INVALID_STATE, str(NoTurnInProgress()))

    async def _m_replay(self, params: _NoParams) -> dict[str, Any]:
        if self.core.busy or self._replay is not None:
            raise rpc.JsonRpcError(rpc.INVALID_STATE, str(TurnInProgress()))
        counts = {"events": 0, "requests": 0}
        self._replay = asyncio.create_task(self._replay_records(counts))
        try:
            await self._replay
            status = "finished"
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            status = "cancelled"
        finally:
            self._replay = None
        return {"status": status, **counts}

    async def _replay_records(self, counts: dict[str, int]) -> dict[str, Any]:
        self.core.recorder.flush()
        for n, record in enumerate(read_wire_file(self.core.session.wire_file)):
            message = record.message
            envelope = to_envelope(message)
            if isinstance(message, Request):
                # Replayed requests are history: clients must not answer them.
                self._send(rpc.request_message(message.id, "request", envelope))
                counts["requests"] += 1
            else:
                self._send(rpc.notification_message("event", envelope))
                counts["events"] += 1
            if n % 64 == 63:
                await asyncio.sleep(0)  # let `cancel` in, keep the pipe flowing
        return counts

    # ------------------------------------------------------------------ responses to our requests

    def _on_response(self, incoming: rpc.Incoming) -> None:
        request = self._pending.pop(incoming.id, None) if incoming.id is not None else None
        if request is None:
            log.info("ignoring response to unknown request id %r", incoming.id)
            return
        request.resolve(_interpret_answer(request, incoming))

    async def shutdown(self) -> None:
        """Stdin closed or a signal: settle pending requests, end the turn, flush, return."""
        if self._closing:
            return
        self._closing = True
        for request in list(self._pending.values()):
            request.decline()
        self._pending.clear()
        self.core.cancel()
        if self._replay is not None:
            self._replay.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=SHUTDOWN_GRACE_S)
        late = [task for task in self._tasks if not task.done()]
        for task in late:
            task.cancel()  # each answers its request on the way out (see _dispatch)
        if late:
            await asyncio.wait(late, timeout=SHUTDOWN_GRACE_S)
        await self.core.close()
        await self.writer.drain()


# What a client's answer to each kind of request parses as (a tool call's: its `ToolResult`).
ANSWER_TYPES: dict[str, type[ApprovalResponse | QuestionResponse | HookResponse]] = {
    "ApprovalRequest": ApprovalResponse, "QuestionRequest": QuestionResponse, "HookRequest": HookResponse,
}


def _interpret_answer(request: Request[Any], incoming: rpc.Incoming) -> Any:
    """Turn a client's JSON-RPC answer into what the waiting core expects (lenient, never raising):
    an answer that does not parse is the request's declined answer (an approval is then rejected)."""
    result = incoming.result if isinstance(incoming.result, dict) else None
    error = incoming.error
    if isinstance(request, ToolCallRequest):
        if error is not None:
            return ToolReturnValue(
                is_error=True,
                message=str(error.get("message") or "External tool error"),
                display=[BriefDisplayBlock(text="External tool error")],
            )
        try:
            return ToolResult.model_validate(result).return_value
        except ValidationError:
            return ToolReturnValue(
                is_error=True,
                message="Invalid tool result payload from client.",
                display=[BriefDisplayBlock(text="Invalid tool result")],
            )
    answer_type = ANSWER_TYPES.get(type(request).wire_type)
    if answer_type is None:
        return result
    if result is None and isinstance(request, ApprovalRequest):
        return request.declined()
    try:
        return answer_type.model_validate({**(result or {}), "request_id": request.id})
    except ValidationError:
        return request.declined()

