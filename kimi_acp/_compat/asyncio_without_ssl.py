"""Import asyncio without `ssl`, and hand `ssl` to asyncio the moment anything imports it.

asyncio imports `ssl` eagerly (`base_events`, `selector_events`, `sslproto`), which loads
OpenSSL: ~10-20 ms and ~4.5 MiB before the first request, though a server needs TLS only once a
model or MCP server is reached over HTTPS (and the warm-up after the first session loads it
then). Those modules keep `ssl = None` when the import fails, and use it only for TLS
connections and for an `isinstance(sock, ssl.SSLSocket)` check, both impossible before `ssl`
exists. So: asyncio is imported with `ssl` hidden, and an import hook gives asyncio its `ssl`
as soon as `ssl` is first loaded, before the importer gets it (see `give_asyncio_ssl`). After
that asyncio is as if imported normally; a test runs TLS over it.
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Any

from ..util.meta_path import join_meta_path, leave_meta_path

_lock = threading.Lock()


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
            module.ssl = ssl  # type: ignore[attr-defined]
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
        spec.loader = _AfterExec(spec.loader, self)
        return spec

    def leave(self) -> None:
        leave_meta_path(self)


class _AfterExec:
    def __init__(self, loader: Any, finder: _SslFinder) -> None:
        self._loader = loader
        self._finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader  # as if found the usual way
        give_asyncio_ssl(module)
        self._finder.leave()
