"""The User-Agent of every HTTP request kimi-acp makes itself."""

from __future__ import annotations

import functools


@functools.cache
def user_agent() -> str:
    """`kimi-acp/<installed version>`; "0" when running from an uninstalled tree."""
    from importlib import metadata

    try:
        version = metadata.version("kimi-acp")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"kimi-acp/{version}"
