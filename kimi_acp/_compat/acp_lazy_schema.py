"""`acp.schema` with each of its ~280 models created when first used, from a cached index.

Even with nothing built (acp_sdk_import.py), creating the SDK's model classes is most of what
`kimi acp` does before its first `session/new`: pydantic class creation for models a session
mostly never touches (figures: docs/performance.md, Figures that used to live in the code). The
SDK's other modules import ~110 names from `acp.schema`; creating only those (and what their
bases and default values need) is about half the work.

How it works (acp_sdk_import.py installs it while it imports the SDK):
- **The index.** `acp/schema.py` is split into its top-level statements, each compiled on its
  own (with the file's `from __future__ import annotations`): the imports, and one code object
  per definition with the names it binds, the names it needs to run (bases, decorators, default
  values; not annotations, which are strings), the names its annotations mention, and whether it
  is instantiated as some field's default. Parsing and compiling the file is too slow for every
  start, so the index is written once per SDK install, after the first session (`write_index`),
  to `$KIMI_CACHE_DIR` (default `$KIMI_SHARE_DIR/cache`; acp_schema_index.py), keyed by the file's
  path, size and mtime and the interpreter version. No index: the SDK is imported as usual.
- **The module.** `sys.modules["acp.schema"]` is a module whose missing attributes are created
  on access (`module.__getattr__`): their run-time dependencies first, then the statement, in the
  module's namespace as a plain import would.
- **Lookups.** The module's `__builtins__` is a copy of the builtins that creates a missing
  schema name instead of failing. Any name lookup in the module's namespace that misses ends
  there: pydantic evaluating a new class's annotations or resolving a forward reference when it
  builds a model, a validator's body. So every path that finds a name in a plainly imported
  `acp.schema` finds it here too.
- **While the SDK is imported** that lookup refuses (the name stays a forward reference, which
  pydantic resolves when it builds the model), or the annotations would pull in nearly every
  model. Except for models used as defaults (`= AgentCapabilities()`): their annotations are
  created first, so their fields are complete when acp_sdk_import.py makes the default instance.

Tests compare every model with a plainly imported SDK (tests/_compat/test_sdk_import.py).
"""

from __future__ import annotations

import builtins
import logging
import marshal
import sys
import threading
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util.share_dir import cache_dir

log = logging.getLogger(__name__)

MODULE = "acp.schema"
INDEX_VERSION = 2


@dataclass(frozen=True)
class Definition:
    """One top-level statement of acp/schema.py that binds names."""

    names: tuple[str, ...]
    needs: tuple[str, ...]  # to run: bases, decorators, defaults, validator bodies
    mentions: tuple[str, ...]  # in its annotations
    code: types.CodeType


@dataclass(frozen=True)
class Index:
    imports: tuple[types.CodeType, ...]
    definitions: tuple[Definition, ...]
    defaults: frozenset[str]  # models instantiated as some field's default


# ------------------------------------------------------------------------------ where things are


def schema_file() -> Path | None:
    """acp/schema.py of the installed SDK, found without importing `acp`."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("acp")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).with_name("schema.py")
    return path if path.is_file() else None


def _key(path: Path) -> str:
    st = path.stat()
    return f"{INDEX_VERSION}:{sys.version}:{path}:{st.st_size}:{st.st_mtime_ns}"


def index_file(path: Path) -> Path:
    import hashlib

    digest = hashlib.sha256(_key(path).encode()).hexdigest()[:16]
    return cache_dir() / f"acp-schema-{digest}.index"


def dump(index: Index) -> bytes:
    return marshal.dumps(
        (
            INDEX_VERSION,
            index.imports,
            tuple((d.names, d.needs, d.mentions, d.code) for d in index.definitions),
            tuple(sorted(index.defaults)),
        )
    )


def load(data: bytes) -> Index:
    version, imports, definitions, defaults = marshal.loads(data)
    if version != INDEX_VERSION:
        raise ValueError("index of another version")
    return Index(imports, tuple(Definition(*d) for d in definitions), frozenset(defaults))


def read_index(path: Path) -> Index | None:
    try:
        return load(index_file(path).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, TypeError) as exc:  # a torn or foreign file: import plainly
        log.info("ACP schema index unusable: %s", exc)
        return None


# ------------------------------------------------------------------------------ the lazy module


class _Creator:
    """Creates the index's definitions in the module's namespace, each once, dependencies first."""

    def __init__(self, module: types.ModuleType, index: Index) -> None:
        self.namespace = module.__dict__
        self.by_name = {name: d for d in index.definitions for name in d.names}
        self.defaults = index.defaults
        self.lock = threading.RLock()
        self.importing = True  # until after_import: lookups that miss do not create
        self.started: set[str] = set()  # definitions being created (they can mention each other)

    def knows(self, name: str) -> bool:
        """A definition not created yet."""
        return name in self.by_name

    def get(self, name: str) -> Any:
        namespace = self.namespace
        if name in namespace:
            return namespace[name]
        with self.lock:
            if name not in namespace:
                definition = self.by_name.get(name)
                if definition is None:
                    raise KeyError(name)  # being created (a mention cycle) or gone
                self._create(definition)
            return namespace[name]

    def _create(self, definition: Definition) -> None:
        key = definition.names[0]
        if key in self.started:
            return  # mentioned again while its dependencies are created: it comes after them
        self.started.add(key)
        try:
            needed = list(definition.needs)
            if any(name in self.defaults for name in definition.names):
                needed += definition.mentions  # a default instance needs complete fields
            for name in needed:
                if name in self.by_name and name not in self.namespace:
                    self._create(self.by_name[name])
            exec(definition.code, self.namespace)
        finally:
            self.started.discard(key)  # after a failure, a later access tries again (and fails alike)
        for name in definition.names:
            self.by_name.pop(name, None)  # created: its code is not needed any more

    def on_lookup_miss(self, name: str) -> Any:
        """A lookup that missed the namespace: the schema's name, created now. KeyError (a
        NameError to the code looking) for any other name, for every name while the SDK is
        imported, and for one whose creation is under way (a mention cycle: pydantic keeps a
        forward reference and resolves it when it builds the model)."""
        if name not in self.by_name or self.importing:
            raise KeyError(name)
        return self.get(name)


class _Builtins(dict[str, Any]):
    """The module's `__builtins__`: the builtins, and any schema name not created yet."""

    def __init__(self, creator: _Creator) -> None:
        super().__init__(builtins.__dict__)
        self._creator = creator

    def __missing__(self, name: str) -> Any:
        return self._creator.on_lookup_miss(name)


class LazySchemaModule(types.ModuleType):
    """`acp.schema`; a missing attribute is created on access."""

    _creator: _Creator

    def __getattr__(self, name: str) -> Any:
        creator = type(self)._creator
        if creator.knows(name):
            try:
                return creator.get(name)
            except KeyError:
                pass  # being created: not there yet, as during a plain import
        raise AttributeError(f"module {MODULE!r} has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(type(self)._creator.by_name))


def install_cached() -> types.ModuleType | None:
    """Make `acp.schema` the lazy module when the index is cached (before `acp` is imported)."""
    path = schema_file()
    index = read_index(path) if path is not None else None
    return install(index, path) if index is not None and path is not None else None


def install(index: Index, path: Path) -> types.ModuleType:
    """Make `acp.schema` the lazy module built from `index` (before `acp` is imported)."""
    import importlib.util

    module_class: type[LazySchemaModule] = type("LazySchemaModule", (LazySchemaModule,), {})  # one per install
    module = module_class(MODULE)
    creator = _Creator(module, index)
    module_class._creator = creator
    spec = importlib.util.spec_from_file_location(MODULE, path)
    module.__file__ = str(path)
    module.__spec__ = spec
    module.__loader__ = spec.loader if spec else None
    module.__package__ = "acp"
    module.__dict__["__builtins__"] = _Builtins(creator)
    sys.modules[MODULE] = module  # first: the imports below import `acp`, which imports us
    try:
        for code in index.imports:
            exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(MODULE, None)
        raise
    return module


def after_import(module: types.ModuleType) -> None:
    """Once `acp` is imported: lookups create what they miss, and `acp.schema` is the package's
    attribute, as an import sets it."""
    if isinstance(module, LazySchemaModule):
        type(module)._creator.importing = False
    package = sys.modules.get("acp")
    if package is not None and package.__dict__.get("schema") is not module:
        vars(package)["schema"] = module


def is_lazy() -> bool:
    return isinstance(sys.modules.get(MODULE), LazySchemaModule)
