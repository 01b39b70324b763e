"""pydantic's plugin discovery, without `importlib.metadata` when there is nothing to discover.

pydantic looks for plugins (installed distributions with a `pydantic` entry point) when it creates
its first validator, which it does while it is imported (`RootModel`). Its loader imports
`importlib.metadata` (`email`, `zipfile`, `csv` come along) and scans every distribution, on the
servers' start-up path, to find what is nearly always nothing (figures: docs/performance.md,
Figures that used to live in the code).

`install()` (the servers call it before pydantic is imported; the Python API does not, so a host
program's plugins are found the usual way) puts a stand-in under the loader's module name. It
reads the `entry_points.txt` files of the distributions on `sys.path` itself. When one
declares a `[pydantic]` section, or `sys.path` has an entry it does not read the way
`importlib.metadata` would (a zip file, an egg), it hands over to pydantic's own loader, which
then decides everything as usual (including `PYDANTIC_DISABLE_PLUGINS`).

Private to pydantic: the loader's module name and its `get_plugins()`. Checked with pydantic
2.11–2.14 (`PYDANTIC`); any other version, or `KIMI_PLAIN_STARTUP`, leaves pydantic's own loader.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from ..util import process_state
from . import PYDANTIC, applies, installed_version

if TYPE_CHECKING:

    class _Loader(Protocol):
        """pydantic's loader module, as far as it is called here."""

        def get_plugins(self) -> Iterable[Any]: ...


TRICK = "pydantic-plugin-loader"
LOADER = "pydantic.plugin._loader"
_GROUP = b"pydantic"


def install() -> bool:
    """Register the stand-in unless pydantic's loader is loaded already or the installed pydantic
    was not checked; True if registered."""
    if LOADER in sys.modules or not applies(TRICK, (PYDANTIC, installed_version("pydantic", "pydantic"))):
        return False
    stand_in = types.ModuleType(LOADER, __doc__)
    vars(stand_in).update(  # a module's attributes are its __dict__
        get_plugins=get_plugins,
        __kimi_stand_in__=True,
        __getattr__=_from_real_loader,  # whatever else a pydantic asks for
    )
    sys.modules[LOADER] = stand_in
    return True


_none_found: bool | None = None  # the scan's result, as pydantic caches what it found
process_state.variable(globals(), "_none_found")  # of this process's sys.path


def get_plugins() -> Iterable[Any]:
    """pydantic's `get_plugins()` (called for every validator it creates): none if no distribution
    can have any, else pydantic's answer. The scan runs once."""
    global _none_found
    if _none_found is None:
        _none_found = not _may_have_plugins(sys.path)
    if _none_found:
        return ()
    return _real_loader().get_plugins()


def _from_real_loader(name: str) -> Any:
    """Any other name (a newer pydantic may import more from its loader): the real loader's."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_real_loader(), name)


def _real_loader() -> _Loader:
    module = sys.modules.get(LOADER)
    if module is None or getattr(module, "__kimi_stand_in__", False):
        sys.modules.pop(LOADER, None)
        module = importlib.import_module(LOADER)
    return module


def _may_have_plugins(path: Iterable[str]) -> bool:
    for entry in path:
        directory = entry or "."
        if entry.endswith(".egg") or os.path.isfile(directory):
            return True  # a zip or an egg: importlib.metadata looks inside, we do not
        try:
            children = os.scandir(directory)
        except OSError:
            continue  # missing (python311.zip often is) or a path hook's name: nothing to find
        with children:
            for child in children:
                name = child.name.lower()
                if name.endswith(".egg"):
                    return True
                if name.endswith((".dist-info", ".egg-info")) and _declares_plugin(child.path):
                    return True
    return False


def _declares_plugin(info_dir: str) -> bool:
    """Whether the distribution's entry points have a `pydantic` group (read as importlib.metadata
    reads the file: a stripped `[name]` line, the name stripped too)."""
    try:
        with open(os.path.join(info_dir, "entry_points.txt"), "rb") as f:
            text = f.read()
    except OSError:
        return False  # no entry points, or an .egg-info file rather than a directory
    if _GROUP not in text:
        return False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(b"[") and line.endswith(b"]") and line[1:-1].strip() == _GROUP:
            return True
    return False
