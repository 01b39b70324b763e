"""Which provider failures are retried, and how a retry notice names them (kimi_acp/llm/errors.py):
from the classes themselves, so a renamed class cannot leave a notice saying "an error"."""

from __future__ import annotations

import pytest

from kimi_acp.errors import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
)
from kimi_acp.llm.errors import RETRIED, is_retryable, retry_cause


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (APIConnectionError("reset"), "a connection error"),
        (APITimeoutError("slow"), "a timeout"),
        (APIEmptyResponseError("nothing"), "an empty reply"),
        (APIStatusError(503, "busy"), "a 503"),
        (APIStatusError(429, "slow down"), "a 429"),
    ],
)
def test_each_retried_failure_has_its_words(error: ChatProviderError, words: str) -> None:
    assert is_retryable(error)
    # what the core's StepRetry carries: the class name (the Wire spec's error_type) and the status
    assert retry_cause(type(error).__name__, getattr(error, "status_code", None)) == words


def test_the_table_is_what_is_retried_and_anything_else_is_an_error() -> None:
    assert all(is_retryable(error("x")) for error in RETRIED)
    assert not is_retryable(ChatProviderError("x")) and not is_retryable(APIStatusError(401, "no"))
    assert retry_cause("ChatProviderError") == retry_cause("SomethingNew") == "an error"
