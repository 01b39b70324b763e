"""Each annotation text evaluated once per module (kimi_acp/_compat/pydantic_annotation_memo.py): models created
inside the block are the same as outside, a name shadowed by a class's own namespace still wins,
and pydantic gets its own function back afterwards."""

from __future__ import annotations

import textwrap
import types

from pydantic import BaseModel
from pydantic._internal import _typing_extra

from kimi_acp._compat.pydantic_annotation_memo import remembered_annotations

SOURCE = textwrap.dedent(
    '''
    from __future__ import annotations
    from typing import Annotated, ClassVar, Dict, Optional
    from pydantic import BaseModel, Field

    class Item(BaseModel):
        meta: Annotated[Optional[Dict[str, int]], Field(alias="_meta")] = None
        size: Annotated[int, Field(ge=0)] = 0

    class Other(BaseModel):
        meta: Annotated[Optional[Dict[str, int]], Field(alias="_meta")] = None
        size: Annotated[int, Field(ge=0)] = 0
        item: Optional[Item] = None

    class Shadow(BaseModel):
        Item: ClassVar[type] = int  # the class's own `Item`: an annotation naming it means this one
        item: Optional[Item] = None
    '''
)


def module(name: str) -> types.ModuleType:
    made = types.ModuleType(name)
    import sys

    sys.modules[name] = made
    try:
        exec(compile(SOURCE, f"<{name}>", "exec"), made.__dict__)
    finally:
        del sys.modules[name]
    return made


def describe(cls: type[BaseModel]) -> dict:
    return {
        "schema": cls.model_json_schema(by_alias=True),
        "fields": {
            k: [repr(f.annotation).replace(cls.__module__, "M"), f.alias, repr(f.metadata)] for k, f in cls.model_fields.items()
        },
    }


def test_models_made_remembering_are_the_same_as_without():
    plain = module("kimi_memo_plain")
    original = _typing_extra.try_eval_type
    with remembered_annotations():
        assert _typing_extra.try_eval_type is not original
        with remembered_annotations():  # nested: the same memory
            remembered = module("kimi_memo_remembered")
    assert _typing_extra.try_eval_type is original
    for name in ("Item", "Other", "Shadow"):
        a, b = describe(getattr(plain, name)), describe(getattr(remembered, name))
        assert a == b
    other = remembered.Other.model_validate({"_meta": {"a": 1}, "size": 2, "item": {"size": 3}})
    assert other.meta == {"a": 1} and other.item.size == 3
    assert remembered.Shadow.model_fields["item"].annotation == int | None
    assert remembered.Shadow.model_validate({"item": 5}).item == 5


def test_the_same_text_is_evaluated_once_per_module(monkeypatch):
    seen: list[str] = []
    original = _typing_extra.try_eval_type

    def counting(value, globalns=None, localns=None):
        if isinstance(value, str):
            seen.append(value)
        return original(value, globalns, localns)

    monkeypatch.setattr(_typing_extra, "try_eval_type", counting)
    module("kimi_memo_count_plain")
    plain = len(seen)
    seen.clear()
    with remembered_annotations():
        module("kimi_memo_count_remembered")
    assert plain - len(seen) >= 2  # Other's `meta` and `size` came from memory
