"""Import the ACP SDK without paying for ~280 eagerly built pydantic models.

`acp.schema` declares its models with `ConfigDict(populate_by_name=True,
use_attribute_docstrings=True)`. Building every validator at import and parsing every attribute
docstring is most of the SDK's ~0.5 s import time, yet a session touches a dozen of these models.
While the SDK is imported we hand it a `ConfigDict` that adds `defer_build=True` (each model is
built on first use) and drops docstring parsing (descriptions only feed JSON Schema generation,
which we never ask the SDK for). Validation behaviour is unchanged. Measured: ~450 ms -> ~200 ms.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_lock = threading.Lock()


def import_sdk() -> None:
    """Import `acp` (idempotent, thread-safe)."""
    if "acp.schema" in sys.modules:
        return
    with _lock:
        if "acp.schema" in sys.modules:
            return
        import pydantic

        original = pydantic.ConfigDict

        def lazy_config(**kwargs: Any) -> Any:
            kwargs.pop("use_attribute_docstrings", None)
            kwargs.setdefault("defer_build", True)
            return original(**kwargs)

        pydantic.ConfigDict = lazy_config  # type: ignore[misc,assignment]
        try:
            import acp  # noqa: F401
            import acp.schema  # noqa: F401
        finally:
            pydantic.ConfigDict = original  # type: ignore[misc]
