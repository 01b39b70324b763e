"""Import the ACP SDK without paying for ~280 eagerly built pydantic models.

`acp.schema` declares its models with `ConfigDict(populate_by_name=True,
use_attribute_docstrings=True)`. Building every validator at import and parsing every attribute
docstring is most of the SDK's import time, yet a session touches a dozen of these models.
While the SDK is imported we hand it a `ConfigDict` that adds `defer_build=True` (each model is
built on first use) and drops docstring parsing (descriptions only feed JSON Schema generation,
which we never ask the SDK for). Validation behaviour is unchanged.

Three things still built models eagerly, 12 of them plus two adapters, and they are deferred the
same way for the length of the import (issue #13):
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
imported, each is evaluated once (pydantic_annotation_memo.py).

When the schema index is cached, `acp.schema` is moreover a lazy module that creates each model
class when first used (acp_lazy_schema.py): ~145 of its names at import.

Each of these is a trick of its own (`TRICK_*`, switched off by name with `KIMI_PLAIN_STARTUP`),
applied only with the pydantic and SDK releases it was checked against; what they rely on:
- `acp-defer-build`: that the SDK builds its models' configs with `pydantic.ConfigDict(...)` at
  import (replaced while it imports);
- `acp-deferred-defaults`: `RootModel.model_config`, `BaseModel.__init__` and the
  `__pydantic_base_init__` mark pydantic checks, `pydantic.type_adapter._type_has_config`;
- `pydantic-annotation-memo` (pydantic_annotation_memo.py) and `acp-lazy-schema`
  (acp_lazy_schema.py, only with `acp-defer-build`).
If setting them up or the import fails, every trace of the SDK is dropped and it is imported
plainly. (Figures: docs/performance.md, Figures that used to live in the code.)
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from . import ACP_SDK, PYDANTIC, Checked, applies, fell_back, installed_version, parse_version

_lock = threading.Lock()
log = logging.getLogger(__name__)
SDK_SCHEMA_MODULE = "acp.schema"
TRICK_DEFER_BUILD = "acp-defer-build"
TRICK_DEFERRED_DEFAULTS = "acp-deferred-defaults"
TRICK_LAZY_SCHEMA = "acp-lazy-schema"
TRICK_IMPORT = "acp-sdk-import"  # the name a failure of any of them is logged under


def import_sdk() -> None:
    """Import `acp` (idempotent, thread-safe): with the tricks that apply, else plainly."""
    if SDK_SCHEMA_MODULE in sys.modules:
        return
    with _lock:
        if SDK_SCHEMA_MODULE in sys.modules:
            return
        try:
            _import_with_tricks()
        except Exception as exc:  # a release that differs from the checked ones
            fell_back(TRICK_IMPORT, exc)
            _forget_sdk()
            _plain_import()


def _plain_import() -> None:
    import acp
    import acp.core
    import acp.schema  # noqa: F401


def _forget_sdk() -> None:
    """Drop a half-done import (the lazy module, models made under the patches) before the plain one."""
    for name in [n for n in sys.modules if n == "acp" or n.startswith("acp.")]:
        del sys.modules[name]


def versions() -> tuple[tuple[Checked, tuple[int, ...] | None], ...]:
    """The releases the SDK tricks depend on (pydantic is imported by then)."""
    import pydantic

    return (PYDANTIC, parse_version(pydantic.VERSION)), (ACP_SDK, installed_version("agent-client-protocol", "acp"))


def lazy_schema_applies() -> bool:
    """Whether `acp.schema` may be the lazy module (it needs the deferred builds too)."""
    checked = versions()
    return applies(TRICK_DEFER_BUILD, *checked) and applies(TRICK_LAZY_SCHEMA, *checked)


def _import_with_tricks() -> None:
    from .pydantic_annotation_memo import remembered_annotations

    checked = versions()
    with ExitStack() as tricks:
        if applies(TRICK_DEFER_BUILD, *checked):
            tricks.enter_context(_deferred_config())
        if applies(TRICK_DEFERRED_DEFAULTS, *checked):
            tricks.enter_context(_deferred_defaults())
        tricks.enter_context(remembered_annotations())
        lazy = _lazy_schema() if lazy_schema_applies() else None
        _plain_import()
        if lazy is not None:
            from .acp_lazy_schema import after_import

            after_import(lazy)
            log.info("acp.schema: %d names created at import (cached index)", len(vars(lazy)))


def _lazy_schema() -> Any:
    """`acp.schema` created model by model when its index is cached (acp_lazy_schema.py); a failure
    to set it up leaves the plain import."""
    from .acp_lazy_schema import install_cached

    try:
        return install_cached()
    except Exception as exc:  # the plain import then reports any real problem
        fell_back(TRICK_LAZY_SCHEMA, exc)
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
def _deferred_config() -> Iterator[None]:
    """While the SDK is imported: its models' configs defer building and skip attribute docstrings."""
    import pydantic

    original_config = pydantic.ConfigDict

    def lazy_config(**kwargs: Any) -> Any:
        kwargs.pop("use_attribute_docstrings", None)
        kwargs.setdefault("defer_build", True)
        return original_config(**kwargs)

    # The patch itself (a function where a TypedDict is declared), undone below.
    pydantic.ConfigDict = lazy_config  # type: ignore[misc,assignment]  # see above
    try:
        yield
    finally:
        pydantic.ConfigDict = original_config  # type: ignore[misc]  # a TypedDict class: put back


@contextmanager
def _deferred_defaults() -> Iterator[None]:
    """While the SDK is imported: `RootModel[...]` bases, no-argument default instances and
    module-level `TypeAdapter`s are built on first use too."""
    import pydantic
    from pydantic import BaseModel, RootModel
    from pydantic.type_adapter import TypeAdapter, _type_has_config

    original_root_config = RootModel.model_config
    original_init = BaseModel.__init__

    class LazyTypeAdapter(TypeAdapter[Any]):  # type: ignore[misc]  # final to type checkers; subclassed only here
        """A module-level `TypeAdapter(T)` of the SDK, built when first used."""

        def __init__(self, type: Any, *, config: Any = None, **kwargs: Any) -> None:
            if config is None and not _type_has_config(type):
                config = pydantic.ConfigDict(defer_build=True)
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
    default_instance_init.__pydantic_base_init__ = True  # type: ignore[attr-defined]  # pydantic's mark, not a declared attribute

    # The patches themselves (a class and a method replaced), undone below.
    pydantic.TypeAdapter = LazyTypeAdapter  # type: ignore[misc]  # see above
    RootModel.model_config = {**original_root_config, "defer_build": True}
    BaseModel.__init__ = default_instance_init  # type: ignore[method-assign]  # see above
    try:
        yield
    finally:
        BaseModel.__init__ = original_init  # type: ignore[method-assign]  # put back
        RootModel.model_config = original_root_config
        pydantic.TypeAdapter = TypeAdapter  # type: ignore[misc]  # put back
