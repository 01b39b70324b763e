"""kimi-acp: a coding agent for IDEs (ACP) and programs (Wire), compatible with Kimi Code CLI.

The public API is loaded lazily so that `kimi acp` starts fast::

    from kimi_acp import Agent, encode_event_line, decode_event_line
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Agent", "ApprovalHandler", "QuestionHandler", "decode_event_line", "encode_event_line", "__version__"]

if TYPE_CHECKING:
    from .api import Agent, ApprovalHandler, QuestionHandler, decode_event_line, encode_event_line


def __getattr__(name: str) -> Any:
    if name in ("Agent", "ApprovalHandler", "QuestionHandler", "decode_event_line", "encode_event_line"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'kimi_acp' has no attribute {name!r}")
