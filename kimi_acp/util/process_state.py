"""What a process keeps for its whole life, beyond any session, registered in one place.

A module that keeps such state (a cache, a registry of secrets, a probe's answer, files checked
once) registers it here when it is imported, with what empties it: `cache` for a function
memoized with `functools.lru_cache`/`cache`, `container` for a module-level dict, set or list,
`variable` for a module global, `register` for anything else (a reset that returns what puts the
state back). A fresh process starts with all of it empty. The in-memory test harness
(tests/support/inmemory.py) runs a server inside the test process and makes it look like a fresh
one with `reset()` when the server starts and the function it returns when it stops; state a
module registers while the server runs (a module first imported then) is emptied at the stop, as
the test process had none of it before. Standard library only; nothing here is per session.

Not registered, on purpose: what tracks live resources a reset would lose (the process groups of
MCP servers still running, `mcp/procs.py`; open MCP managers, `mcp/manager.py`; tasks), what
mirrors the kernel's state of the process (`process_guard.py`: once not dumpable, always), and
constants built on first use from nothing but the code (tool schemas, type adapters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

Restore = Callable[[], None]
Reset = Callable[[], Restore]  # empties the state, returns what puts it back

_resets: dict[str, Reset] = {}

if TYPE_CHECKING:  # for the checker only: no class to create at start-up

    class Memoized(Protocol):
        """What `functools.lru_cache`/`cache` make of a function, as far as a reset needs it."""

        __module__: str
        __qualname__: str

        def cache_clear(self) -> None: ...


M = TypeVar("M", bound="Memoized")
C = TypeVar("C", bound=dict[Any, Any] | set[Any] | list[Any])  # bound, not constrained: keeps the caller's type


def register(name: str, reset: Reset) -> None:
    """Register state under a name (its module and variable, by convention); a module imported
    again (a test reloading it) replaces its entry."""
    _resets[name] = reset


def cache(function: M) -> M:
    """Decorator, above `functools.lru_cache`/`cache`: the memo is forgotten on a reset (and the
    one the server filled, on the restore: a cache refills itself)."""

    def reset() -> Restore:
        function.cache_clear()
        return function.cache_clear

    register(f"{function.__module__}.{function.__qualname__}", reset)
    return function


def container(name: str, value: C) -> C:
    """A module-level dict, set or list: emptied on a reset, its contents put back on the restore."""

    def reset() -> Restore:
        saved = value.copy()
        value.clear()

        def restore() -> None:
            value.clear()
            if isinstance(value, list):
                value.extend(saved)
            else:
                value.update(saved)

        return restore

    register(name, reset)
    return value


def variable(namespace: dict[str, Any], name: str, fresh: Any = None) -> None:
    """A module global (`variable(globals(), "_X")`): `fresh` on a reset, its value back on the restore."""

    def reset() -> Restore:
        saved = namespace[name]
        namespace[name] = fresh
        return lambda: namespace.__setitem__(name, saved)

    register(f"{namespace['__name__']}.{name}", reset)


def registered() -> list[str]:
    return list(_resets)


def reset() -> Restore:
    """Empty every registered state, as in a fresh process; returns what puts it all back (and
    empties what was registered in between)."""
    before = dict(_resets)
    restores: list[Restore] = []
    try:
        for entry in before.values():
            restores.append(entry())
    except BaseException:
        for restore in reversed(restores):
            restore()
        raise

    def restore_all() -> None:
        for name, entry in list(_resets.items()):
            if name not in before:
                entry()  # imported while the server ran: empty, as before it was imported
        for restore in reversed(restores):
            restore()

    return restore_all
