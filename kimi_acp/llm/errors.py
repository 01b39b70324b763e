"""Typed provider errors, and which of them are worth retrying."""

from __future__ import annotations

RETRYABLE_STATUS_CODES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class ChatProviderError(Exception):
    """Any failure talking to a model. The message is safe to show (never contains a key)."""


class APIConnectionError(ChatProviderError):
    """The server could not be reached or the connection broke mid-stream."""


class APITimeoutError(ChatProviderError):
    """The server did not answer (or stopped streaming) within the timeout."""


class APIStatusError(ChatProviderError):
    """The server answered with an HTTP error status."""

    def __init__(self, status_code: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


class APIEmptyResponseError(ChatProviderError):
    """The stream ended without any text or tool call (an empty or thinking-only reply)."""


def is_retryable(error: BaseException) -> bool:
    """Connection errors, timeouts, empty replies and 408/409/429/5xx-overload statuses."""
    if isinstance(error, (APIConnectionError, APITimeoutError, APIEmptyResponseError)):
        return True
    return isinstance(error, APIStatusError) and error.status_code in RETRYABLE_STATUS_CODES
