"""kimi-acp: a coding agent for IDEs (ACP) and programs (Wire), compatible with Kimi Code CLI.

The public API is loaded lazily so that `kimi acp` starts fast::

    from kimi_acp import Agent, encode_event_line, decode_event_line   # the simple event stream
    from kimi_acp import encode_wire_line, decode_wire_line            # Kimi Wire lines
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

_API = ("Agent", "ApprovalHandler", "QuestionHandler", "UndoReport", "decode_wire_line", "encode_wire_line")
# The simple event stream's exports, named as in the NDJSON event-stream note.
_SIMPLE = (
    "JSONRPC_VERSION", "decode_event", "decode_event_line", "encode_event", "encode_event_line",
    "event_to_rpc", "rpc_to_event",
)  # fmt: skip

__all__ = [
    "JSONRPC_VERSION",
    "Agent",
    "ApprovalHandler",
    "QuestionHandler",
    "UndoReport",
    "__version__",
    "decode_event",
    "decode_event_line",
    "decode_wire_line",
    "encode_event",
    "encode_event_line",
    "encode_wire_line",
    "event_to_rpc",
    "rpc_to_event",
]  # fmt: skip (the same names as _API and _SIMPLE, spelled out for tools that read __all__)

if TYPE_CHECKING:
    from .api import Agent, ApprovalHandler, QuestionHandler, UndoReport, decode_wire_line, encode_wire_line
    from .simple_stream import (
        JSONRPC_VERSION,
        decode_event,
        decode_event_line,
        encode_event,
        encode_event_line,
        event_to_rpc,
        rpc_to_event,
    )


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _SIMPLE:
        from . import simple_stream

        return getattr(simple_stream, name)
    raise AttributeError(f"module 'kimi_acp' has no attribute {name!r}")
