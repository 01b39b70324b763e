"""Deciding on paths the way a symbolic link cannot get around."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def typed_and_real(path: str | os.PathLike[str]) -> Iterator[Path]:
    """`path` as typed (absolute, `~` expanded, `..` folded) and where it really leads, once each."""
    typed = Path(os.path.abspath(Path(path).expanduser()))
    yield typed
    real = Path(os.path.realpath(typed))
    if real != typed:
        yield real


def relative_within(path: Path, root: Path) -> Path | None:
    """`path` relative to `root` (as given, or where it really leads), else None."""
    for base in dict.fromkeys((Path(os.path.abspath(root)), Path(os.path.realpath(root)))):
        try:
            return path.relative_to(base)
        except ValueError:
            continue
    return None
