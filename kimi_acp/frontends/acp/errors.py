"""The JSON-RPC errors `kimi acp` answers with, each with the actionable text in `message`.

Clients such as acpx print only `error.message`, so what a person must do ("run `kimi login`",
which param is wrong) goes there; `data` repeats it in machine-readable form, and as
`data.details` too, the one field Toad shows.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

LOGIN_HINT = "Run `kimi login` in a terminal (or set KIMI_API_KEY), then try again."


def _error(code: int, text: str, **data: Any) -> RequestError:
    return RequestError(code, text, {"details": text, **data})


def invalid_params(param: str, problem: str) -> RequestError:
    return _error(INVALID_PARAMS, f"Invalid params: {param}: {problem}", **{param: problem})


def auth_required(reason: str, auth_methods: list[dict[str, Any]]) -> RequestError:
    hint = "" if "kimi login" in reason else f" {LOGIN_HINT}"
    message = f"Authentication required: {reason}{hint}"
    return _error(AUTH_REQUIRED, message, message=message, authMethods=auth_methods)


def session_not_found(session_id: str) -> RequestError:
    return _error(INVALID_PARAMS, f"Session not found: {session_id}", sessionId=session_id)


def resource_not_found(session_id: str) -> RequestError:
    """-32002, the schema's "Resource not found", which the newer session methods (status, title,
    archive) answer for a session the agent does not know, with the id in `data`."""
    return _error(RESOURCE_NOT_FOUND, f"Session not found: {session_id}", sessionId=session_id)


def internal_error(prefix: str, detail: str) -> RequestError:
    return _error(INTERNAL_ERROR, f"{prefix}: {detail}", error=detail)


def session_busy(message: str, holder_pid: int | None) -> RequestError:
    """A prompt refused because another process is running a turn of the session."""
    return _error(INTERNAL_ERROR, message, error=message, holderPid=holder_pid)


def request_cancelled() -> RequestError:
    return RequestError(REQUEST_CANCELLED, "Request cancelled")
