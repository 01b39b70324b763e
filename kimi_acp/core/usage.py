"""What a session's model requests used: tokens, and money where it can be known.

Every request the session makes is counted as its reply ends: the root's steps, its subagents'
(their cores share the root's meter), compaction summaries and title requests. A front end reads
the meter before and after a prompt (ACP `PromptResponse.usage` is the difference) and shows the
session's cost (ACP `usage_update.cost`), which is kept in `state.json` (`cost`, per currency) so
it survives a restart. A request's cost is what the provider reported (OpenRouter, in US dollars),
else what the model's `price` in config.toml makes of its tokens, else unknown.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..wire.types import TokenUsage

if TYPE_CHECKING:
    from ..config import ResolvedModel
    from ..llm.types import ChatStream
    from ..sessions import Session

log = logging.getLogger(__name__)

PROVIDER_COST_CURRENCY = "USD"  # OpenRouter reports credits, one US dollar each


def context_figures(tokens: int, max_size: int | None) -> dict[str, Any]:
    """A StatusUpdate's context meter: how full the context is, of how much (the step's reply,
    a compaction, an undo report it the same way); no usage when the model's size is unknown."""
    return {
        "context_usage": round(tokens / max_size, 6) if max_size else None,
        "context_tokens": tokens,
        "max_context_tokens": max_size,
    }


@dataclass(frozen=True)
class UsageReading:
    """The meter's totals at one moment; subtract two readings for what happened between them."""

    input_other: int = 0
    input_cache_read: int = 0
    input_cache_creation: int = 0
    output: int = 0
    requests: int = 0

    def __sub__(self, earlier: UsageReading) -> UsageReading:
        return UsageReading(
            self.input_other - earlier.input_other,
            self.input_cache_read - earlier.input_cache_read,
            self.input_cache_creation - earlier.input_cache_creation,
            self.output - earlier.output,
            self.requests - earlier.requests,
        )

    @property
    def total(self) -> int:
        return self.input_other + self.input_cache_read + self.input_cache_creation + self.output


class UsageMeter:
    """One per root session, whose `state.cost` it adds to (and saves, at the end of each turn)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._state = session.state
        self._reading = UsageReading()
        self._unsaved = False  # `state.cost` changed since the state was last saved

    def save(self) -> None:
        """Write the session's cost down if it changed (a full disk is only logged: it is a figure)."""
        if not self._unsaved:
            return
        self._unsaved = False
        try:
            self._session.save_state()
        except OSError as exc:
            log.warning("session %s: cost not saved: %s", self._session.id, exc)

    def reading(self) -> UsageReading:
        return self._reading

    def record(self, stream: ChatStream, model: ResolvedModel | None) -> None:
        """A reply has ended: count its tokens (when the provider reported them) and its cost."""
        usage = stream.usage
        previous = self._reading
        if usage is not None:
            self._reading = UsageReading(
                previous.input_other + usage.input_other,
                previous.input_cache_read + usage.input_cache_read,
                previous.input_cache_creation + usage.input_cache_creation,
                previous.output + usage.output,
                previous.requests + 1,
            )
        priced = request_cost(usage, stream.cost, model)
        if priced is not None:
            amount, currency = priced
            costs = dict(self._state.cost or {})
            if amount > 0 or currency not in costs:  # a free model's cost is known too: 0
                costs[currency] = costs.get(currency, 0.0) + amount
                self._state.cost = costs
                self._unsaved = True

    def session_cost(self) -> tuple[float, str] | None:
        """The session's cost so far, when it is known in one currency (two cannot be added up)."""
        costs = self._state.cost or {}
        if len(costs) != 1:
            return None
        ((currency, amount),) = costs.items()
        return amount, currency


def request_cost(usage: TokenUsage | None, reported: float | None, model: ResolvedModel | None) -> tuple[float, str] | None:
    """(amount, currency) of one request: the provider's own figure first, else the config's prices."""
    if reported is not None:
        return reported, PROVIDER_COST_CURRENCY
    price = model.model.price if model is not None else None
    if price is None or usage is None:
        return None
    return price.cost(usage), price.currency
