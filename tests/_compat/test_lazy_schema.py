"""The lazy module machinery of kimi_acp/_compat/acp_lazy_schema.py on a small schema of our own: the
paths today's SDK does not take (a model with a default instance created after the import,
models that mention each other, a validator naming a model), checked against the same source
imported plainly."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from kimi_acp._compat import acp_lazy_schema as lazy_schema
from kimi_acp._compat.acp_schema_index import build_index

SOURCE = textwrap.dedent(
    '''
    from __future__ import annotations
    from typing import List, Optional
    from pydantic import BaseModel, field_validator

    class Leaf(BaseModel):
        size: int = 1

    class Holder(BaseModel):
        leaf: Leaf = Leaf()
        more: List[Leaf] = []

    class Ping(BaseModel):
        pong: Optional[Pong] = None

    class Pong(BaseModel):
        ping: Optional[Ping] = None

    class Checked(BaseModel):
        value: int

        @field_validator("value")
        @classmethod
        def _positive(cls, value: int) -> int:
            return Leaf(size=value).size

    Alias = Holder
    '''
)


@pytest.fixture()
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "mini_schema.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def lazy_module(path: Path, name: str) -> tuple[types.ModuleType, lazy_schema._Creator]:
    index = lazy_schema.load(lazy_schema.dump(build_index(path)))  # through the cache format
    module = types.ModuleType(name)
    creator = lazy_schema._Creator(module, index)
    module.__dict__["__builtins__"] = lazy_schema._Builtins(creator)
    sys.modules[name] = module  # pydantic finds a model's namespace through sys.modules
    for code in index.imports:
        exec(code, module.__dict__)
    creator.importing = False  # as after_import: lookups that miss create
    return module, creator


def plain_module(path: Path, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def test_every_path_reaches_the_same_models(schema_file: Path):
    lazy, creator = lazy_module(schema_file, "kimi_mini_lazy")
    plain = plain_module(schema_file, "kimi_mini_plain")
    try:
        assert not {"Leaf", "Holder", "Ping", "Pong", "Checked", "Alias"} & set(vars(lazy))  # nothing yet
        holder = creator.get("Holder")()  # its default instance made at creation, after the "import"
        assert isinstance(holder.leaf, creator.get("Leaf")) and holder.leaf.size == 1
        ping = creator.get("Ping").model_validate({"pong": {"ping": {}}})  # Pong created by the build
        assert type(ping.pong).__name__ == "Pong" and ping.pong.ping is not None
        assert creator.get("Checked").model_validate({"value": 3}).value == 3  # a validator naming Leaf
        assert creator.get("Alias") is creator.get("Holder")
        for name in ("Leaf", "Holder", "Ping", "Pong", "Checked"):
            schema = creator.get(name).model_json_schema()
            assert schema == getattr(plain, name).model_json_schema(), name
        assert not creator.knows("Holder")  # created: its code is let go
        with pytest.raises(KeyError):
            creator.get("NoSuchModel")
    finally:
        sys.modules.pop("kimi_mini_lazy", None)
        sys.modules.pop("kimi_mini_plain", None)


def test_while_importing_a_lookup_leaves_a_forward_reference(schema_file: Path):
    lazy, creator = lazy_module(schema_file, "kimi_mini_importing")
    creator.importing = True
    try:
        ping = creator.get("Ping")  # its annotation mentions Pong, not created while importing
        assert "Pong" not in vars(lazy)
        assert ping.__pydantic_fields_complete__ is False
        creator.importing = False
        assert ping.model_validate({"pong": {}}).pong is not None  # resolved when it is built
        assert "Pong" in vars(lazy)
    finally:
        sys.modules.pop("kimi_mini_importing", None)


def test_a_file_the_index_cannot_split_is_refused(tmp_path: Path):
    path = tmp_path / "odd_schema.py"
    path.write_text("from pydantic import BaseModel\nclass A(BaseModel):\n    x: int = 0\nA.model_rebuild()\n")
    with pytest.raises(ValueError, match="unexpected statement"):
        build_index(path)
    path.write_text("X = 1\nX = 2\n")
    with pytest.raises(ValueError, match="bound twice"):
        build_index(path)
