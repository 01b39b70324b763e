"""A prompt's token usage and the session's cost in ACP's shapes (`PromptResponse.usage`,
`usage_update.cost`), from the session's meter (core/usage.py).

The schema's token kinds are disjoint and `totalTokens` is their sum: `inputTokens` is the input
not read from or written to the provider's cache, `cachedReadTokens` / `cachedWriteTokens` the
cached input, `outputTokens` everything the model wrote (its thinking included: providers count it
as output, so no `thoughtTokens` is sent rather than counting it twice).
"""

from __future__ import annotations

from typing import Any

from ...core.usage import UsageMeter, UsageReading

COST_DIGITS = 9  # a sum of many small floats: no 0.30000000000000004 on the client's meter


def prompt_usage(used: UsageReading) -> dict[str, Any]:
    """`PromptResponse.usage`: what the prompt's model requests used, as their providers reported it."""
    return {
        "totalTokens": used.total,
        "inputTokens": used.input_other,
        "outputTokens": used.output,
        "cachedReadTokens": used.input_cache_read,
        "cachedWriteTokens": used.input_cache_creation,
    }


def session_cost(meter: UsageMeter) -> dict[str, Any] | None:
    """`usage_update.cost`: the session's cost so far, when it is known (and in one currency)."""
    known = meter.session_cost()
    if known is None:
        return None
    amount, currency = known
    return {"amount": round(amount, COST_DIGITS), "currency": currency}
