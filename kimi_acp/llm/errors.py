"""The provider errors (defined in kimi_acp/errors.py, the one exception tree), which are worth
retrying, and which say the history no longer fits the model's window."""

from __future__ import annotations

import re

from ..errors import (  # the provider part of the tree, imported from here by llm/ and the core
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
)

__all__ = [  # the re-exported exceptions, and what is defined here
    "RETRIED",
    "RETRYABLE_STATUS_CODES",
    "APIConnectionError",
    "APIEmptyResponseError",
    "APIStatusError",
    "APITimeoutError",
    "ChatProviderError",
    "is_context_overflow",
    "is_retryable",
    "retry_cause",
]

RETRYABLE_STATUS_CODES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# The failures retried whatever their status, and how a retry notice names each.
RETRIED: dict[type[ChatProviderError], str] = {
    APIConnectionError: "a connection error",
    APITimeoutError: "a timeout",
    APIEmptyResponseError: "an empty reply",
}


def is_retryable(error: BaseException) -> bool:
    """Connection errors, timeouts, empty replies and 408/409/429/5xx-overload statuses."""
    if isinstance(error, tuple(RETRIED)):
        return True
    return isinstance(error, APIStatusError) and error.status_code in RETRYABLE_STATUS_CODES


def retry_cause(error_type: str, status_code: int | None = None) -> str:
    """What a retried request failed with, in a few words ("a 503", "a connection error"), from a
    `StepRetry`'s `error_type` (the class name, as the Wire spec has it) and status."""
    if status_code:
        return f"a {status_code}"
    return next((words for error, words in RETRIED.items() if error.__name__ == error_type), "an error")


# What the servers say when the request is larger than the model's context window: OpenAI (Chat
# Completions and Responses: `context_length_exceeded`), Anthropic ("prompt is too long"), Gemini
# and Vertex AI ("input token count (N) exceeds the maximum number of tokens"), Moonshot, vLLM and
# other OpenAI-compatible servers ("maximum context length").
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|context[ _]window|maximum context length|context length"
    r"|prompt is too long|input token count|exceeds the maximum number of tokens|too many tokens",
    re.IGNORECASE,
)


def is_context_overflow(error: BaseException) -> bool:
    """The request did not fit the model's window: not worth a plain retry, but compacting the
    history and asking again helps. Only a 400 or 413 (or an error reported inside the stream,
    which has no status) counts, so a rate-limit text that mentions tokens does not."""
    if not isinstance(error, ChatProviderError) or isinstance(error, (APIConnectionError, APITimeoutError)):
        return False
    status = getattr(error, "status_code", None)
    if status is not None and status not in (400, 413):
        return False
    return _CONTEXT_OVERFLOW.search(str(error)) is not None
