"""The provider errors (defined in kimi_acp/errors.py, the one exception tree), and which are worth retrying."""

from __future__ import annotations

from ..errors import (  # noqa: F401  (the provider part of the tree, imported from here by llm/ and the core)
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
)

RETRYABLE_STATUS_CODES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def is_retryable(error: BaseException) -> bool:
    """Connection errors, timeouts, empty replies and 408/409/429/5xx-overload statuses."""
    if isinstance(error, (APIConnectionError, APITimeoutError, APIEmptyResponseError)):
        return True
    return isinstance(error, APIStatusError) and error.status_code in RETRYABLE_STATUS_CODES
