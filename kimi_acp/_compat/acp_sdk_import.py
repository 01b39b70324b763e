"""Import the ACP SDK without paying for ~280 eagerly built pydantic models.

`acp.schema` declares its models with `ConfigDict(populate_by_name=True,
use_attribute_docstrings=True)`. Building every validator at import and parsing every attribute
docstring is most of the SDK's ~0.5 s import time, yet a session touches a dozen of these models.
While the SDK is imported we hand it a `ConfigDict` that adds `defer_build=True` (each model is
built on first use) and drops docstring parsing (descriptions only feed JSON Schema generation,
which we never ask the SDK for). Validation behaviour is unchanged. Measured: ~450 ms -> ~200 ms.

Three things still built models eagerly, 12 of them plus two adapters, and they are deferred the
same way for the length of the import (~150 -> ~115 ms on top, issue #13):
- `RootModel[Union[...]]` bases (six of them) take their config from `RootModel`, not from the
  SDK's `ConfigDict`: `RootModel.model_config` gets `defer_build` while the SDK is imported;
- field defaults such as `= AgentCapabilities()` instantiate a model in its class body, which
  builds it: a no-argument instantiation of a not yet built `acp.schema` model is done with
  `model_construct()` instead (the same field values, fields-set and extras, nothing validated:
  a no-argument instance only holds defaults);
- `TypeAdapter(SomeUnion)` at module level in `acp.agent.connection` and `acp.client.router`
  builds at once: those adapters get `defer_build` too (they are used for elicitation only).

What remains is creating the ~280 classes, and a third of that was pydantic evaluating their
string annotations: 760 fields, but only ~250 distinct annotation texts. While the SDK is
imported, each is evaluated once (annotation_memo.py; ~100 -> ~75 ms).

When the schema index is cached, `acp.schema` is moreover a lazy module that creates each model
class when first used (lazy_schema.py): ~145 of its names at import, ~75 -> ~50 ms.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
log = logging.getLogger(__name__)
SDK_SCHEMA_MODULE = "acp.schema"
LAZY_SCHEMA_ENV = "KIMI_LAZY_ACP_SCHEMA"  # "0": create every model at import, as the SDK does


def import_sdk() -> None:
    """Import `acp` (idempotent, thread-safe)."""
    if "acp.schema" in sys.modules:
        return
    with _lock:
        if "acp.schema" in sys.modules:
            return
        with _deferred_builds():
            lazy = _lazy_schema()
            import acp  # noqa: F401
            import acp.core  # noqa: F401
            import acp.schema  # noqa: F401

            if lazy is not None:
                from .acp_lazy_schema import after_import

                after_import(lazy)
                log.info("acp.schema: %d names created at import (cached index)", len(vars(lazy)))


def lazy_schema_wanted() -> bool:
    """Whether `acp.schema` may be the lazy module (`KIMI_LAZY_ACP_SCHEMA=0` says no)."""
    return os.environ.get(LAZY_SCHEMA_ENV, "1") != "0"


def _lazy_schema() -> Any:
    """`acp.schema` created model by model when its index is cached (lazy_schema.py); a failure
    to set it up leaves the plain import."""
    if not lazy_schema_wanted():
        return None
    from .acp_lazy_schema import install_cached

    try:
        return install_cached()
    except Exception:  # noqa: BLE001 - the plain import then reports any real problem
        log.info("lazy acp.schema not used", exc_info=True)
        sys.modules.pop(SDK_SCHEMA_MODULE, None)
        return None


def _construct_defaults(cls: Any) -> Any:
    """`cls()` without building `cls`: its defaults, as validation would have made them.

    `model_construct` leaves defaults as they are; validation also turns a `validate_default`
    default such as `auth = {"terminal": False}` into the field's model. That is done here for a
    flat dict and a field of one SDK model type; anything else returns None (built as usual).
    """
    import typing

    from pydantic import BaseModel

    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        if not field.validate_default:
            continue
        default = field.get_default(call_default_factory=True)
        if isinstance(default, BaseModel) or default is None:
            continue  # already what validation returns (the same instance type)
        targets = [
            t
            for t in (typing.get_args(field.annotation) or (field.annotation,))
            if isinstance(t, type) and issubclass(t, BaseModel)
        ]
        flat = isinstance(default, dict) and all(
            isinstance(v, (str, int, float, bool, type(None))) for v in default.values()
        )
        if len(targets) != 1 or not flat or targets[0].__module__ != SDK_SCHEMA_MODULE:
            return None
        inner = targets[0]
        if any(inner.model_fields.get(k) is None or inner.model_fields[k].validate_default for k in default):
            return None
        values[name] = inner.model_construct(**default)
    made = cls.model_construct(**values)
    object.__setattr__(made, "__pydantic_fields_set__", set())
    return made


@contextmanager
def _deferred_builds() -> Iterator[None]:
    """While the SDK is imported: every model and adapter it creates is built on first use."""
    import pydantic
    from pydantic import BaseModel, RootModel
    from pydantic.type_adapter import TypeAdapter, _type_has_config

    from .pydantic_annotation_memo import remembered_annotations

    original_config = pydantic.ConfigDict
    original_root_config = RootModel.model_config
    original_init = BaseModel.__init__

    def lazy_config(**kwargs: Any) -> Any:
        kwargs.pop("use_attribute_docstrings", None)
        kwargs.setdefault("defer_build", True)
        return original_config(**kwargs)

    class LazyTypeAdapter(TypeAdapter):  # type: ignore[type-arg]
        """A module-level `TypeAdapter(T)` of the SDK, built when first used."""

        def __init__(self, type: Any, *, config: Any = None, **kwargs: Any) -> None:
            if config is None and not _type_has_config(type):
                config = original_config(defer_build=True)
            super().__init__(type, config=config, **kwargs)

    def default_instance_init(self: Any, /, **data: Any) -> None:
        cls = type(self)
        made = None
        if not data and not cls.__pydantic_complete__ and cls.__module__ == SDK_SCHEMA_MODULE:
            made = _construct_defaults(cls)  # a field default such as `= PromptCapabilities()`
        if made is None:
            original_init(self, **data)
            return
        object.__setattr__(self, "__dict__", made.__dict__)
        object.__setattr__(self, "__pydantic_fields_set__", set())
        object.__setattr__(self, "__pydantic_extra__", made.__pydantic_extra__)
        object.__setattr__(self, "__pydantic_private__", made.__pydantic_private__)

    # models created meanwhile must not take this for a custom `__init__` (pydantic checks the mark)
    default_instance_init.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    pydantic.ConfigDict = lazy_config  # type: ignore[misc,assignment]
    pydantic.TypeAdapter = LazyTypeAdapter  # type: ignore[misc]
    RootModel.model_config = {**original_root_config, "defer_build": True}
    BaseModel.__init__ = default_instance_init  # type: ignore[method-assign]
    try:
        with remembered_annotations():
            yield
    finally:
        BaseModel.__init__ = original_init  # type: ignore[method-assign]
        RootModel.model_config = original_root_config
        pydantic.TypeAdapter = TypeAdapter  # type: ignore[misc]
        pydantic.ConfigDict = original_config  # type: ignore[misc]
