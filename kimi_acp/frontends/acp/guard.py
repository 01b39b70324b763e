"""Between the SDK's connection and its router: the checks and answers the SDK does not give.

The SDK (0.12.1) validates params leniently (an `initialize` whose `protocolVersion` is an object
becomes version 1, a `clientInfo` that is a string becomes none, invalid `mcpServers` entries are dropped), answers a pydantic error with a bare
"Invalid params", has no route for `session/delete`, `session/set_title`, `session/status`,
`session/archive`, `session/unarchive` or `logout`, and lets a `CancelledError` escape its request
runner, which then sends nothing. This wrapper fixes each of those, so every request gets one
answer whose `message` a person can act on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from acp import RequestError
from pydantic import ValidationError

from ...wire.serde import describe_validation_error
from .errors import invalid_params, request_cancelled
from .handshake import initialize_problem

Router = Callable[[str, Any, bool], Awaitable[Any]]
METHOD_NOT_FOUND = -32601
# Routed here: the SDK 0.12.1 knows none of them (session_admin.py, server.py).
SESSION_ADMIN_METHODS = frozenset(
    {"session/delete", "session/set_title", "session/status", "session/archive", "session/unarchive"}
)


class ExtraMethods(Protocol):
    """What the agent serves beyond the SDK's routes."""

    async def delete_session(self, session_id: str) -> dict[str, Any]: ...

    async def set_session_title(self, session_id: str, title: str) -> dict[str, Any]: ...

    async def session_status(self, session_id: str) -> dict[str, Any]: ...

    async def archive_session(self, session_id: str) -> dict[str, Any]: ...

    async def unarchive_session(self, session_id: str) -> dict[str, Any]: ...

    async def logout(self) -> dict[str, Any]: ...

    def remember_initialize(self, params: dict[str, Any]) -> None:
        """The client's `initialize` params as sent, before the SDK's models drop unknown keys."""
        ...

    def check_session_params(self, method: str, params: dict[str, Any]) -> None:
        """Raise RequestError for params the SDK would silently repair."""
        ...


class RequestGuard:
    def __init__(self, router: Router, agent: ExtraMethods) -> None:
        self._router = router
        self._agent = agent

    async def __call__(self, method: str, params: Any, is_notification: bool) -> Any:
        try:
            if method == "logout" and not is_notification and params is None:
                params = {}  # LogoutRequest has no required field: omitted params mean none
            if not isinstance(params, dict):
                raise invalid_params("params", "must be an object")
            if method == "initialize":
                problem = initialize_problem(params)
                if problem is not None:
                    raise invalid_params(*problem)
                self._agent.remember_initialize(params)
            self._agent.check_session_params(method, params)
            if method in SESSION_ADMIN_METHODS and not is_notification:
                return await self._session_admin(method, params)
            if method == "logout" and not is_notification:
                return await self._agent.logout()
            return await self._router(method, params, is_notification)
        except RequestError as exc:
            if exc.code == METHOD_NOT_FOUND and str(exc) == "Method not found":
                raise RequestError(METHOD_NOT_FOUND, f"Method not found: {method}", exc.data) from None
            raise
        except ValidationError as exc:
            detail = describe_validation_error(exc, limit=3, unlocated="params")
            message = f"Invalid params for {method}: {detail}"
            raise RequestError(-32602, message, {"details": message, "errors": _errors(exc)}) from None
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if is_notification or (current is not None and current.cancelling()):
                raise  # shutdown: the transport answers what is still open
            raise request_cancelled() from None

    async def _session_admin(self, method: str, params: dict[str, Any]) -> Any:
        """The session methods the SDK has no route for, each naming one session."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise invalid_params("sessionId", "required (a session id string)")
        if method == "session/set_title":
            title = params.get("title")
            if not isinstance(title, str):
                raise invalid_params("title", "required (a string)")
            return await self._agent.set_session_title(session_id, title)
        if method == "session/status":
            return await self._agent.session_status(session_id)
        if method == "session/archive":
            return await self._agent.archive_session(session_id)
        if method == "session/unarchive":
            return await self._agent.unarchive_session(session_id)
        return await self._agent.delete_session(session_id)


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    """The pydantic errors without the offending input, which may be huge or deeply nested."""
    return [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors(include_url=False)[:10]]
