"""Each distinct annotation text evaluated once while the servers import their models.

Pydantic evaluates every field's string annotation (`from __future__ import annotations`) when a
model class is created: ~760 fields in the ACP SDK's schema, but only ~250 distinct texts
(`Annotated[Optional[Dict[str, Any]], Field(alias="_meta")]` alone ~200 times), and the same
pattern in our own wire and config models. Inside `remembered_annotations()`, a text that
evaluated once in a module is answered from memory there, for the SDK and for ours (figures:
docs/performance.md, Figures that used to live in the code). Pydantic builds each field's
`FieldInfo` afresh from the evaluated annotation (a `Field()` inside `Annotated` is read, not
changed), so sharing the evaluated object is safe. Texts naming anything in the class's own
namespace, and texts that do not evaluate yet (forward references), are evaluated every time, as
without it.

Private to pydantic: `pydantic._internal._typing_extra.try_eval_type`, its signature and result.
Checked with pydantic 2.11–2.14; otherwise (or with `KIMI_PLAIN_STARTUP`) pydantic's own is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import PYDANTIC, applies, fell_back, parse_version

TRICK = "pydantic-annotation-memo"
_identifiers = re.compile(r"[A-Za-z_][A-Za-z_0-9]*").findall


def _remembering(original: Callable[..., tuple[Any, bool]]) -> Callable[..., tuple[Any, bool]]:
    done: dict[tuple[str, int], tuple[Any, bool]] = {}

    def shadowed(value: str, localns: Any) -> bool:
        return bool(localns) and any(name in localns for name in _identifiers(value))

    def try_eval_type(value: Any, globalns: Any = None, localns: Any = None) -> tuple[Any, bool]:
        if type(value) is not str or globalns is None:
            return original(value, globalns, localns)
        key = (value, id(globalns))
        found = done.get(key)
        if found is not None and not shadowed(value, localns):
            return found
        result = original(value, globalns, localns)
        if result[1] and not shadowed(value, localns):
            done[key] = result
        return result

    try_eval_type.__kimi_remembering__ = True  # type: ignore[attr-defined]  # our mark on a function (read by _replaceable)
    return try_eval_type


def _replaceable() -> tuple[Any, Any] | None:
    """pydantic's module and `try_eval_type` when the memo may stand in for it, else None."""
    import pydantic

    if not applies(TRICK, (PYDANTIC, parse_version(pydantic.VERSION))):
        return None
    try:
        from pydantic._internal import _typing_extra

        return _typing_extra, _typing_extra.try_eval_type
    except (ImportError, AttributeError) as exc:  # a pydantic that moved it: evaluate as it does
        fell_back(TRICK, exc)
        return None


@contextmanager
def remembered_annotations() -> Iterator[None]:
    """Evaluate each annotation text once per module inside the block (pydantic's own function
    again after it). Nested use is fine; a pydantic not checked, or without `try_eval_type`, is
    left alone."""
    found = _replaceable()
    if found is None or getattr(found[1], "__kimi_remembering__", False):
        yield
        return
    typing_extra, original = found
    typing_extra.try_eval_type = _remembering(original)
    try:
        yield
    finally:
        typing_extra.try_eval_type = original
