"""The environment of every process the agent starts: ours, without the agent's own credentials.

A Shell command, a background task, a hook or a plugin tool is code the model or somebody else
chose; it gets none of the keys the agent talks to its model with: the providers' key variables
(`secrets.KEY_VARIABLES`) and any variable whose value holds a registered secret. The variables
the user names in `[permissions] pass_env` go through anyway.

`pass_env` is a context variable rather than a parameter: the Kaos, the task table, the hook engine
and plugin tools all start processes on behalf of a turn, and the turn sets it once
(`AgentCore._turn_body`); the tasks a turn starts (tool calls, background tasks) inherit it.
Outside a turn nothing is passed: the safe default.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from contextvars import ContextVar

from .secrets import KEY_VARIABLES, holds_secret

_pass_env: ContextVar[frozenset[str]] = ContextVar("kimi_pass_env", default=frozenset())


def pass_env(names: Iterable[str]) -> None:
    """Let the variables `names` through, for the current task and the tasks it starts."""
    _pass_env.set(frozenset(n.strip() for n in names if n.strip()))


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ without the agent's credentials (those in `pass_env` kept), then `extra`."""
    keep = _pass_env.get()
    env = {
        name: value
        for name, value in os.environ.items()
        if name in keep or (name not in KEY_VARIABLES and not holds_secret(value))
    }
    if extra:
        env.update(extra)
    return env
