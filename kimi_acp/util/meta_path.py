"""Adding and removing an import finder on `sys.meta_path` safely while other threads import."""

from __future__ import annotations

import sys
from typing import Any


def join_meta_path(finder: Any) -> None:
    """Put `finder` first on `sys.meta_path`. The list is replaced, never changed in place: another
    thread's import may be walking the old one (removing from it in place could make that import
    skip a finder)."""
    sys.meta_path = [finder, *sys.meta_path]


def leave_meta_path(finder: Any) -> None:
    """Take `finder` off `sys.meta_path` (replacing the list, see `join_meta_path`)."""
    if finder in sys.meta_path:
        sys.meta_path = [f for f in sys.meta_path if f is not finder]
