"""The first imports of both servers' preload thread, the same for each."""

from __future__ import annotations


def prepare_imports() -> None:
    """Dataclass methods and string annotations compiled at an earlier start, asyncio without
    `ssl` until something uses it, and pydantic's plugin discovery without `importlib.metadata`
    when no distribution has plugins (all in _compat/: the plain way where a trick does not
    apply). Before anything imports asyncio or pydantic."""
    from .._compat import generated_code, pydantic_plugin_loader
    from .._compat.asyncio_without_ssl import import_asyncio

    generated_code.install()
    import_asyncio()
    pydantic_plugin_loader.install()
