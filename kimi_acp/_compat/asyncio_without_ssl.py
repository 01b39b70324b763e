"""Import asyncio without `ssl`, and hand `ssl` to asyncio the moment anything imports it.

asyncio imports `ssl` eagerly (`base_events`, `selector_events`, `sslproto`), which loads
OpenSSL: time and memory before the first request, though a server needs TLS only once a
model or MCP server is reached over HTTPS (and the warm-up after the first session loads it
then; figures: docs/performance.md, Figures that used to live in the code). Those modules keep
`ssl = None` when the import fails, and use it only for TLS connections and for an
`isinstance(sock, ssl.SSLSocket)` check, both impossible before `ssl` exists. So: asyncio is
imported with `ssl` hidden, and an import hook gives asyncio its `ssl` as soon as `ssl` is first
loaded, before the importer gets it (see `give_asyncio_ssl`). After that asyncio is as if
imported normally; a test runs TLS over it.

Private to CPython: that those modules import `ssl` in a `try` and work with `ssl = None`, and that
`asyncio.sslproto` is the one module deriving state from it. Checked on CPython 3.11–3.13; on any
other version, with `KIMI_PLAIN_STARTUP`, or when anything goes wrong, asyncio is imported plainly.
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..util.meta_path import join_meta_path, leave_meta_path
from . import PYTHON, applies, fell_back, python_version

if TYPE_CHECKING:
    from importlib.abc import Loader

TRICK = "asyncio-without-ssl"

_lock = threading.Lock()


def import_asyncio() -> ModuleType:
    """`import asyncio` for the servers' start-up: without `ssl` where that was checked, else plainly."""
    if "asyncio" not in sys.modules and applies(TRICK, (PYTHON, python_version())):
        try:
            return import_asyncio_without_ssl()
        except Exception as exc:  # whatever a new CPython does differently: the plain import
            fell_back(TRICK, exc)
            _forget_asyncio()
    import asyncio

    return asyncio


def _forget_asyncio() -> None:
    """After a failed attempt: no finder left behind, no asyncio module half set up."""
    for finder in [f for f in sys.meta_path if isinstance(f, _SslFinder)]:
        leave_meta_path(finder)
    for name in [n for n in sys.modules if n == "asyncio" or n.startswith("asyncio.")]:
        del sys.modules[name]


def import_asyncio_without_ssl() -> ModuleType:
    """`import asyncio`, deferring `ssl` (plain `import asyncio` when either is already imported)."""
    with _lock:
        if "asyncio" in sys.modules or "ssl" in sys.modules:
            import asyncio

            return asyncio
        finder = _SslFinder(hidden_from=threading.get_ident())
        join_meta_path(finder)
        try:
            import asyncio
        finally:
            finder.hidden_from = None
        if "ssl" in sys.modules or not any(getattr(m, "ssl", False) is None for m in _asyncio_modules()):
            finder.leave()
        return asyncio


def _asyncio_modules() -> list[ModuleType]:
    return [m for name, m in list(sys.modules.items()) if (name == "asyncio" or name.startswith("asyncio.")) and m is not None]


def give_asyncio_ssl(ssl: ModuleType) -> None:
    """Set `ssl` in every asyncio module imported without it; `asyncio.sslproto` runs again.

    `sslproto` is the one module that derives module-level state from `ssl` (`SSLAgainErrors`,
    under `if ssl is not None`), so it is executed again, now as a normal import would have
    executed it. Its classes have no instances yet (they need `ssl`), and asyncio reaches them
    through the module (`sslproto.SSLProtocol(...)`), so the fresh ones are what it uses."""
    import importlib

    for module in _asyncio_modules():
        if "ssl" in module.__dict__ and module.__dict__["ssl"] is None:
            module.__dict__["ssl"] = ssl
            if module.__name__ == "asyncio.sslproto":
                importlib.reload(module)


class _SslFinder:
    """A `sys.meta_path` finder for `ssl` only. While asyncio is imported, `ssl` is not found in
    the importing thread (other threads import it as usual). Afterwards it finds `ssl` the usual
    way, gives it to asyncio once it is executed, and leaves `sys.meta_path`."""

    def __init__(self, hidden_from: int | None) -> None:
        self.hidden_from = hidden_from

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "ssl":
            return None
        if self.hidden_from == threading.get_ident():
            raise ModuleNotFoundError("ssl is imported when first used", name="ssl")
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        # The import system calls a loader's create_module/exec_module, whatever its class (typeshed
        # wants an importlib.abc.Loader, a module too costly to import on the start-up path).
        spec.loader = _AfterExec(spec.loader, self)  # type: ignore[assignment]
        return spec

    def leave(self) -> None:
        leave_meta_path(self)


class _AfterExec:
    def __init__(self, loader: Loader, finder: _SslFinder) -> None:
        self._loader = loader
        self._finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader  # as if found the usual way
        if module.__spec__ is not None:  # always, for a module the import system executes
            module.__spec__.loader = self._loader
        give_asyncio_ssl(module)
        self._finder.leave()
