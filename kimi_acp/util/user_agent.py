"""The User-Agent of every HTTP request kimi-acp makes itself."""

from __future__ import annotations

from .._version import __version__


def user_agent() -> str:
    """`kimi-acp/<version>` (kimi_acp/_version.py: the same from a source tree as installed)."""
    return f"kimi-acp/{__version__}"
