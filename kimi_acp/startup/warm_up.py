"""The first turn's one-time costs, paid on the event loop after start-up instead of in the first prompt.

(Figures: docs/performance.md, Figures that used to live in the code.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .early import settle_heap

WARM_DELAY_S = 0.5


def core_warm_ups() -> list[Callable[[], Any]]:
    """First-use costs of the first turn, as small steps: the tool modules and their JSON Schemas
    (what the model is sent), the validators of the models every turn builds, undo's modules.

    Not before the first session: `session/new` needs none of it, and an IDE asks for a session
    as soon as `initialize` is answered (see `warm_up_in_background`)."""

    def tools() -> None:
        from ..tools import builtin_tools

        for tool in builtin_tools():
            tool.spec()

    def models() -> None:
        from ..wire.types import StatusUpdate, TextPart, ToolCall, ToolResult, ToolReturnValue, TurnBegin

        TurnBegin(user_input="")
        TextPart(text="").model_dump(mode="json")
        ToolCall.model_validate({"id": "", "function": {"name": ""}})
        ToolResult(tool_call_id="", return_value=ToolReturnValue(is_error=False)).model_dump(mode="json")
        StatusUpdate().model_dump(mode="json")

    def undo() -> None:
        # A turn's undo records (~10 ms of imports, paid before the first prompt reaches the model
        # otherwise). Not tree-sitter's grammar: 1 MiB for sessions that never run a command, 3 ms
        # for the first Shell call of those that do.
        from ..core import undo  # noqa: F401

    return [tools, models, undo]


def _provider_module(resolved: Any) -> str | None:
    """The provider module of a model that talks HTTP (every type but the test ones)."""
    from ..llm import provider_module

    return provider_module(resolved.provider.type) if resolved is not None else None


def warm_up_in_background(resolved: Any = None, *, model: Callable[[], Any] | None = None) -> None:
    """Half a second after the server is up: `core_warm_ups`, then in worker threads the cache of
    what start-up compiled (_compat/generated_code.py) and, when the session's model talks HTTP,
    its provider module, the HTTP stack and its TLS context (the first prompt then skips that
    one-time work). `model()` gives the resolved model when it is not known yet
    (reading the config is itself start-up work). Call it from the running event loop.

    The delay keeps it off the first requests: a client's `session/new` or `replay` right after
    `initialize` does not share the CPU with it. The pydantic steps run on the event loop, one per
    loop pass, never beside a request building the same models in another thread (lazy pydantic
    builds are not thread-safe before pydantic 2.14); only the HTTP import runs in a thread.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    steps = core_warm_ups()

    def next_step() -> None:
        try:
            if steps:
                steps.pop(0)()
                loop.call_soon(next_step)
                return
            target = resolved if model is None else model()
        except Exception:  # a warm-up never breaks the server; the real use reports it
            return
        settle_heap()  # what the warm-up loaded is as long-lived as the preload
        module = _provider_module(target)
        # Not daemons (see llm/transport.py): exiting while they load certificates or write the
        # cache must wait for them.
        threading.Thread(target=_keep_generated_code, name="kimi-code-cache", daemon=False).start()
        if module is not None:
            threading.Thread(target=_warm_http, args=(module,), name="kimi-warm-http", daemon=False).start()

    loop.call_later(WARM_DELAY_S, next_step)


def _keep_generated_code() -> None:
    """What start-up compiled, kept for the next one (_compat/generated_code.py)."""
    from .._compat import generated_code

    generated_code.finish()


def _warm_http(module: str) -> None:
    """The provider's module, the HTTP stack and its TLS context."""
    try:
        import importlib

        from ..llm import http

        importlib.import_module(module)
        http.shared_ssl_context()
    except Exception:  # the first request reports what is wrong
        pass
