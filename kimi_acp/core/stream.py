"""One session's message stream: the core sends, subscribers (recorder, front ends) receive.

Delivery is a synchronous call per subscriber, in order, with no queue in between: a streamed
chunk reaches stdout in the same loop iteration it arrived from the model. Subscribers must not
block; a subscriber that raises is logged and skipped for that message, never breaking the turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Subscriber = Callable[[Any], None]


class MessageStream:
    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a receiver; returns a function that removes it."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def send(self, message: Any) -> None:
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(message)
            except Exception:
                log.exception("stream subscriber failed on %s", type(message).__name__)
