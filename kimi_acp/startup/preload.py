"""The first imports of both servers' preload thread, the same for each."""

from __future__ import annotations


def prepare_imports() -> None:
    """asyncio without `ssl` until something uses it, and pydantic's plugin discovery without
    `importlib.metadata` when no distribution has plugins (both in _compat/: the plain imports
    where a trick does not apply). Before anything imports asyncio or pydantic."""
    from .._compat import pydantic_plugin_loader
    from .._compat.asyncio_without_ssl import import_asyncio

    import_asyncio()
    pydantic_plugin_loader.install()
