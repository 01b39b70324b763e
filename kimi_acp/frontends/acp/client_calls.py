"""The requests `kimi acp` sends its client (permission prompts, questions, files, terminals).

Built on the SDK's public pieces (`acp.connection.Connection`, the request and response models,
`acp.utils.request_model`), the way its `AgentSideConnection` sends them, so that the server owns
its `Connection` and can put the request guard (guard.py) in front of the router without reaching
into the SDK's private attributes. Only what the server sends is here; updates go out through the
transport directly (transport.py).

A dialog (a permission request, a question form) that the agent stops waiting for is withdrawn:
when the task awaiting its answer is cancelled (`session/cancel`, `session/close`, a background
subagent stopped, the request settled some other way), the client gets `$/cancel_request` with
the request's JSON-RPC id, so no dead dialog stays on screen. The SDK assigns that id inside
`send_request`; an observer (`Connection.add_observer`, public) sees the request go out in the
same task, and a context variable tells it which call it belongs to.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from acp.connection import Connection, StreamDirection, StreamEvent
from acp.meta import CLIENT_METHODS
from acp.schema import (
    CreateFormSessionElicitationRequest,
    CreateTerminalRequest,
    CreateTerminalResponse,
    ElicitationFormSessionMode,
    EnvVariable,
    KillTerminalRequest,
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    TerminalOutputRequest,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
)
from acp.utils import request_model, serialize_params

log = logging.getLogger(__name__)

CANCEL_REQUEST = "$/cancel_request"  # ACP's protocol-level notification (schema: x-side "protocol")
_elicitation_answer: Any = None  # a TypeAdapter of the three answers, built on first use
# Set by `_withdrawable` around `send_request`: the observer puts the id of the request it sees
# go out in this task into the list.
_sent_ids: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("kimi_acp_sent_ids", default=None)


def refusal_text(exc: BaseException) -> str:
    """A client's error as a person reads it: its message, and the reason clients put in
    `data.details` (acpx, the SDKs: "Internal error" + "Path is outside allowed cwd subtree")."""
    message = str(exc).strip() or type(exc).__name__
    data = getattr(exc, "data", None)
    details = data.get("details") if isinstance(data, dict) else data
    if isinstance(details, str) and details.strip() and details.strip() not in message:
        message = f"{message}: {details.strip()}"
    return message


class ClientCalls:
    """Requests to the client of one connection; each returns the SDK's response model."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        connection.add_observer(self._observe)

    @staticmethod
    def _observe(event: StreamEvent) -> None:
        sent = _sent_ids.get()
        message = event.message
        if sent is not None and not sent and event.direction is StreamDirection.OUTGOING and "method" in message and "id" in message:
            sent.append(message["id"])

    async def _withdrawable(self, method: str, params: dict[str, Any]) -> Any:
        """`send_request`, and `$/cancel_request` for it when the caller stops waiting."""
        sent: list[Any] = []
        token = _sent_ids.set(sent)
        try:
            return await self.connection.send_request(method, params)
        except asyncio.CancelledError:
            if sent:
                await self._cancel_request(sent[0])
            raise
        finally:
            _sent_ids.reset(token)

    async def _cancel_request(self, request_id: Any) -> None:
        try:
            await self.connection.send_notification(CANCEL_REQUEST, {"requestId": request_id})
        except OSError as exc:  # the connection is gone (ConnectionError): no dialog is left to withdraw
            log.debug("could not withdraw request %r: %s", request_id, exc)

    async def request_permission(
        self,
        *,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        tool_name: str | None = None,
        **meta: Any,
    ) -> RequestPermissionResponse:
        """`tool_name`: the card's `name` (schema 1.25's ToolCallUpdate has it; the SDK's model
        does not, so it is added to the params after they are built). A diff's `oldText: null`
        (a new file) is put back after the SDK's serializer dropped it."""
        params = RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options, field_meta=meta or None)
        payload = serialize_params(params)
        card = payload.get("toolCall")
        if isinstance(card, dict):
            if tool_name:
                card["name"] = tool_name
            for item in card.get("content") or []:
                if isinstance(item, dict) and item.get("type") == "diff":
                    # a new file's diff: null, as the card's own updates send it (the SDK drops
                    # None, and Toad then skips its diff screen)
                    item.setdefault("oldText", None)
        answer = await self._withdrawable(CLIENT_METHODS["session_request_permission"], payload)
        return RequestPermissionResponse.model_validate(answer)

    async def create_elicitation(self, *, message: str, mode: ElicitationFormSessionMode, **meta: Any) -> Any:
        """A form bound to a session (the only kind the server asks for): accept, decline or cancel."""
        global _elicitation_answer
        params = CreateFormSessionElicitationRequest(
            message=message, mode="form", field_meta=meta or None, **mode.model_dump(mode="json", exclude_none=True)
        )
        answer = await self._withdrawable(CLIENT_METHODS["elicitation_create"], serialize_params(params))
        if _elicitation_answer is None:
            from acp.schema import (
                AcceptElicitationResponse,
                CancelElicitationResponse,
                DeclineElicitationResponse,
            )
            from pydantic import TypeAdapter

            _elicitation_answer = TypeAdapter(AcceptElicitationResponse | DeclineElicitationResponse | CancelElicitationResponse)
        return _elicitation_answer.validate_python(answer)

    async def read_text_file(
        self, *, session_id: str, path: str, line: int | None = None, limit: int | None = None
    ) -> ReadTextFileResponse:
        params = ReadTextFileRequest(session_id=session_id, path=path, line=line, limit=limit)
        return await request_model(self.connection, CLIENT_METHODS["fs_read_text_file"], params, ReadTextFileResponse)

    async def write_text_file(self, *, session_id: str, path: str, content: str) -> None:
        params = WriteTextFileRequest(session_id=session_id, path=path, content=content)
        await self.connection.send_request(CLIENT_METHODS["fs_write_text_file"], serialize_params(params))

    async def create_terminal(
        self,
        *,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> CreateTerminalResponse:
        params = CreateTerminalRequest(
            session_id=session_id, command=command, args=args, env=env, cwd=cwd, output_byte_limit=output_byte_limit
        )
        return await request_model(self.connection, CLIENT_METHODS["terminal_create"], params, CreateTerminalResponse)

    async def terminal_output(self, *, session_id: str, terminal_id: str) -> TerminalOutputResponse:
        params = TerminalOutputRequest(session_id=session_id, terminal_id=terminal_id)
        return await request_model(self.connection, CLIENT_METHODS["terminal_output"], params, TerminalOutputResponse)

    async def wait_for_terminal_exit(self, *, session_id: str, terminal_id: str) -> WaitForTerminalExitResponse:
        params = WaitForTerminalExitRequest(session_id=session_id, terminal_id=terminal_id)
        return await request_model(
            self.connection, CLIENT_METHODS["terminal_wait_for_exit"], params, WaitForTerminalExitResponse
        )

    async def kill_terminal(self, *, session_id: str, terminal_id: str) -> None:
        params = KillTerminalRequest(session_id=session_id, terminal_id=terminal_id)
        await self.connection.send_request(CLIENT_METHODS["terminal_kill"], serialize_params(params))

    async def release_terminal(self, *, session_id: str, terminal_id: str) -> None:
        params = ReleaseTerminalRequest(session_id=session_id, terminal_id=terminal_id)
        await self.connection.send_request(CLIENT_METHODS["terminal_release"], serialize_params(params))
