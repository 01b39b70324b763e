"""One handler per message type: how the views of the core's stream read it.

The ACP updates (frontends/acp/updates.py), the simple stream (simple_stream.py) and the web page
(frontends/web/events.py) each turn the stream's messages into their own vocabulary. Each keeps a
`Handlers` table and registers one method per message type it shows, so what a message becomes is
in one place and a message no view knows costs one dict lookup (no isinstance ladder):

    _on: Handlers[Callable[[View, Any], list[Out]]] = Handlers()

    class View:
        def feed(self, message):
            handler = _on.get(type(message))
            return handler(self, message) if handler is not None else []

        @_on(TextPart)
        def _text(self, message: TextPart) -> list[Out]: ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

H = TypeVar("H", bound=Callable[..., Any])  # what the table gives back
F = TypeVar("F", bound=Callable[..., Any])  # a handler registered: its own signature kept


class Handlers(Generic[H]):
    """Handlers by message type. A subclass of a registered type gets its nearest base's handler
    (looked up along its MRO once, then remembered)."""

    def __init__(self) -> None:
        self._registered: dict[type, H] = {}
        self._found: dict[type, H | None] = {}

    def __call__(self, *types: type) -> Callable[[F], F]:
        """A decorator: the function handles messages of `types`."""

        def register(handler: F) -> F:
            for kind in types:
                self._registered[kind] = handler  # type: ignore[assignment]  # F is one of the H the table holds
            self._found.clear()
            return handler

        return register

    def get(self, kind: type) -> H | None:
        """The handler of messages of type `kind`, or None."""
        try:
            return self._found[kind]
        except KeyError:
            handler = next((self._registered[base] for base in kind.__mro__ if base in self._registered), None)
            self._found[kind] = handler
            return handler

    def types(self) -> frozenset[type]:
        """The types registered."""
        return frozenset(self._registered)
