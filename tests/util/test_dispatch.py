"""util/dispatch.Handlers: one handler per message type, a subclass served by its base's handler."""

from __future__ import annotations

from collections.abc import Callable

from kimi_acp.util.dispatch import Handlers


class Base:
    pass


class Child(Base):
    pass


class Other:
    pass


def test_a_message_gets_its_types_handler_then_its_nearest_bases_and_else_none() -> None:
    on: Handlers[Callable[[object], str]] = Handlers()

    @on(Base)
    def base(message: object) -> str:
        return "base"

    assert on.get(Base) is base and on.get(Child) is base and on.get(Other) is None

    @on(Child, Other)
    def own(message: object) -> str:
        return "own"

    assert on.get(Child) is own and on.get(Other) is own and on.get(Base) is base  # registering forgets old lookups
    assert on.types() == {Base, Child, Other}
