"""The code the standard library generates from text at run time, compiled once per interpreter.

`@dataclass` writes each method it adds (`__init__`, `__repr__`, `__eq__`, `__hash__`, the frozen
`__setattr__`, ...) as Python source and `exec`s it; `typing.ForwardRef` compiles each string
annotation pydantic evaluates. Both parse and compile the same texts at every start: before the
first `session/new`, ~480 dataclass methods (ours, pydantic's, annotated_types') and ~1,075
annotations, a fifth of the instructions of the whole start-up (figures: docs/performance.md).
Parsing is nearly all of it; running the result is cheap.

With this trick, a text compiled at an earlier start is taken from a cache instead: one marshal
file per interpreter build in `$KIMI_CACHE_DIR` (default `$KIMI_SHARE_DIR/cache`), holding
{(mode, text): code object}. The code object is the one `compile` makes of that text (the
same flags, none inherited: `dataclasses` and `typing` use no `__future__` import), so a hit runs
exactly what a miss would. The cache is read when the servers' preload starts (`install`) and
written, when this process compiled texts the file lacked, after the warm-ups (`save`, in a
worker thread, atomically): a process adds what it compiled to what it read, so the servers
(ACP, Wire, web) share one file that stops changing once each has run. A text the file does not
have, a torn or foreign file: compiled as usual.

Private to CPython: that `dataclasses` passes the text to `exec` found as a global name of its
module, and `ForwardRef` to `compile(text, "<string>", "eval")` found as one of `typing`'s: a
module attribute of that name shadows the builtin for that module alone. Checked with CPython
3.11–3.13 (3.14 evaluates annotations differently); any other version, or `KIMI_PLAIN_STARTUP`,
leaves both alone.
"""

from __future__ import annotations

import builtins
import logging
import marshal
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any

from ..util.share_dir import cache_dir
from . import PYTHON, applies, fell_back, python_version

TRICK = "generated-code-cache"
CACHE_VERSION = 1
MAX_ENTRIES = 20_000  # a process compiles ~1,600 texts by its first session; far past that, drop what went unused
MAX_FILE_BYTES = 16 * 1024 * 1024

_compile = builtins.compile
_exec = builtins.exec

Key = tuple[str, str]  # (mode, text)


class _Cache:
    """Each code object is kept marshalled until a text needs it: reading the file is then one
    short call (the preload holds the GIL through it while the main thread may be answering
    `initialize`), and nothing is kept once it is made (the function or the ForwardRef holds it)."""

    def __init__(self, path: Path, known: dict[Key, bytes]) -> None:
        self.path = path
        self.known = known  # read from the file, marshalled
        self.compiled: dict[Key, bytes] = {}  # texts the file did not have, to add to it
        self.hits = 0
        self.lock = threading.Lock()

    def code(self, text: str, mode: str) -> types.CodeType:
        key = (mode, text)
        data = self.known.get(key) or self.compiled.get(key)
        if data is not None:
            self.hits += 1
            code: types.CodeType = marshal.loads(data)  # the file holds what `code` marshalled (`_read` checks it is ours)
            return code
        found = _compile(text, "<string>", mode, dont_inherit=True)  # a SyntaxError goes to the caller
        self.compiled[key] = marshal.dumps(found)
        return found


_cache: _Cache | None = None


def _dataclasses_exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    cache = _cache
    if cache is not None and type(source) is str:
        source = cache.code(source, "exec")
    _exec(source, globals, locals)


def _typing_compile(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
    cache = _cache
    if cache is not None and type(source) is str and filename == "<string>" and mode == "eval" and not args and not kwargs:
        return cache.code(source, "eval")
    return _compile(source, filename, mode, *args, **kwargs)


def cache_file() -> Path:
    """This interpreter build's file (marshal's format and the bytecode are the build's own)."""
    import hashlib

    build = f"{CACHE_VERSION}:{sys.version}:{sys.implementation.cache_tag}:{marshal.version}"
    return cache_dir() / f"generated-code-{hashlib.sha256(build.encode()).hexdigest()[:16]}.marshal"


def _read(path: Path) -> dict[Key, bytes]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ValueError("too large")
        version, entries = marshal.loads(data)
        if version != CACHE_VERSION or type(entries) is not dict:
            raise ValueError("another version")
        return entries  # {(mode, text): marshalled code}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, EOFError, TypeError) as exc:  # torn or foreign: compile as usual, write it again
        logging.getLogger(__name__).info("generated code cache unusable (%s): compiling", exc)
        return {}


def install() -> bool:
    """Read the cache and let `dataclasses` and `typing` use it (once per process; before the
    servers' imports). True when in use."""
    global _cache
    if _cache is not None:
        return True
    if not applies(TRICK, (PYTHON, python_version())):
        return False
    try:
        import dataclasses
        import typing

        if not callable(getattr(dataclasses, "dataclass", None)) or not isinstance(getattr(typing, "ForwardRef", None), type):
            raise AttributeError("dataclasses.dataclass or typing.ForwardRef is missing")
        path = cache_file()
        _cache = _Cache(path, _read(path))
        vars(dataclasses)["exec"] = _dataclasses_exec  # globals of their own, shadowing the builtins
        vars(typing)["compile"] = _typing_compile
    except Exception as exc:  # the plain way follows
        fell_back(TRICK, exc)
        uninstall()
        return False
    return True


def uninstall() -> None:
    """The builtins again for both modules (tests; a fallback half-way through `install`)."""
    global _cache
    _cache = None
    for name, module in (("exec", sys.modules.get("dataclasses")), ("compile", sys.modules.get("typing"))):
        if module is not None and module.__dict__.get(name) in (_dataclasses_exec, _typing_compile):
            delattr(module, name)


def save() -> Path | None:
    """Write the cache when this process compiled texts the file lacked (atomic: concurrent servers
    never read half a file): what it read, with what it compiled, up to MAX_ENTRIES (the newly
    compiled first). Errors are logged."""
    cache = _cache
    if cache is None:
        return None
    with cache.lock:
        if not cache.compiled:
            return None
        entries = dict(cache.compiled)
        for key, data in list(cache.known.items()):
            if len(entries) >= MAX_ENTRIES:
                break
            entries.setdefault(key, data)
        cache.known.update(cache.compiled)
        cache.compiled = {}
        try:
            blob = marshal.dumps((CACHE_VERSION, entries))
            from ..util.fs import private_dir  # not at start-up: this runs after the first session

            private_dir(cache.path.parent)  # 0700, and the share dir too if this made it
            temporary = cache.path.with_name(f".{cache.path.name}.{os.getpid()}.tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(temporary, cache.path)
        except (OSError, ValueError) as exc:
            logging.getLogger(__name__).info("generated code cache not written: %s", exc)
            return None
    logging.getLogger(__name__).info("cached %d generated code objects in %s", len(entries), cache.path)
    return cache.path


def finish() -> None:
    """After the warm-ups: `save`, then compile as usual again and let the cache's memory go
    (what is imported later, rarely, is compiled the plain way)."""
    try:
        save()
    finally:
        uninstall()
