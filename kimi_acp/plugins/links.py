"""Symbolic links inside a plugin being installed: kept as links, never followed out of it.

A plugin directory, zip or git checkout may hold a link such as `key -> ~/.ssh/id_rsa`; copying
it by following links would put the user's key in the plugin, where its tools (and whoever
packed it) read it. So install copies links as links, and refuses the whole plugin when one
points outside its own directory: absolute, or a relative path whose `..` climbs out of it.
"""

from __future__ import annotations

import os
from pathlib import Path

from .spec import PluginError

SKIPPED = frozenset({".git"})  # not copied (install ignores it), so not checked either


def check_links(root: Path) -> None:
    """Raise PluginError naming the first link under `root` that points outside it."""
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d not in SKIPPED]
        here = Path(directory)
        for name in [*dirs, *files]:
            path = here / name
            if path.is_symlink():
                check_link(root, path.relative_to(root).as_posix(), os.readlink(path))


def check_link(root: Path, member: str, target: str) -> None:
    """`member` (a path below `root`) is a link to `target`: refuse it unless it stays inside."""
    inside = not os.path.isabs(target) and _lexically_inside(member, target)
    if inside and (root / member).is_symlink():
        real = Path(os.path.realpath(root / member))  # also through other links on the way
        inside = real.is_relative_to(Path(os.path.realpath(root)))
    if not inside:
        raise PluginError(
            f"refusing to install: {member} is a symbolic link to {target}, outside the plugin directory"
        )


def _lexically_inside(member: str, target: str) -> bool:
    joined = Path(os.path.normpath(os.path.join(os.path.dirname(member), target)))
    return not joined.is_absolute() and joined.parts[:1] != ("..",)
