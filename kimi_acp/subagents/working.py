"""Which subagent's work runs now, and the words of one the user stopped (no imports: the runner and
the front ends both read them)."""

from __future__ import annotations

from contextvars import ContextVar

# The subagent whose work runs in this context (its turns, its tools' calls and what they send): set
# by the runner around a child's turns, inherited by every task they start. A front end reads it to
# tell a subagent's client calls (files, terminals, questions) from the root's.
WORKING_FOR: ContextVar[str | None] = ContextVar("kimi_subagent", default=None)
# The Agent call of a subagent the user stopped ends with this (runner.py); front ends recognise it.
USER_STOPPED = (
    "The user stopped this agent before it finished (agent_id: {agent_id}). Do not start it again unless the user asks."
)
USER_STOPPED_BRIEF = "Stopped by the user"


def working_for() -> str | None:
    """The agent id of the subagent doing the current work; None for the root session's own."""
    return WORKING_FOR.get()
