"""Closing an asyncio subprocess's pipes at once, after its process group was killed.

`asyncio.subprocess.Process` has no public way to close its transport, and `wait()` waits for the
pipes, which a grandchild that ignored the kill's parent can hold open. The transport is the
private `Process._transport` (CPython 3.11–3.13 checked). Elsewhere, or with `KIMI_PLAIN_STARTUP`,
nothing is closed here: the pipes close when the last process holding them ends, or when the
`Process` is collected.
"""

from __future__ import annotations

import contextlib
from typing import Any

from . import PYTHON, applies, python_version

TRICK = "asyncio-close-transport"


def close_pipes(proc: Any) -> None:
    """Close the pipes of `proc` now where that was checked; otherwise leave them."""
    if not applies(TRICK, (PYTHON, python_version())):
        return
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()
