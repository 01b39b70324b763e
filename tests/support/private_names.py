"""Starting Python with some of another project's private names gone, as a new release may have them."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A sitecustomize that hides `module:name` pairs from kimi_acp's code, the way a release that renamed
# a private name (and its own uses of it) looks to us: `from module import name` in kimi_acp fails,
# while the project's own code keeps finding it.
REMOVER = textwrap.dedent(
    '''
    import importlib.abc, importlib.machinery, os, sys, types

    GONE = {}
    for item in filter(None, os.environ.get("KIMI_TEST_REMOVE", "").split(";")):
        module, _, name = item.partition(":")
        GONE.setdefault(module, set()).add(name)


    class Hiding(types.ModuleType):
        def __getattribute__(self, name):
            hidden = GONE.get(types.ModuleType.__getattribute__(self, "__name__"), ())
            if name in hidden and sys._getframe(1).f_globals.get("__name__", "").startswith("kimi_acp"):
                raise AttributeError(f"module has no attribute {name!r}")
            return types.ModuleType.__getattribute__(self, name)


    class Remover(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name not in GONE:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None:
                return None
            execute = spec.loader.exec_module

            def exec_module(module):
                execute(module)
                module.__class__ = Hiding

            spec.loader.exec_module = exec_module
            return spec


    sys.meta_path.insert(0, Remover())
    '''
)


def hiding_env(directory: Path, hidden: str) -> dict[str, str]:
    """Environment variables that make a Python started with them hide `hidden` ("module:name;...")."""
    site = directory / "hiding-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(REMOVER)
    return {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "KIMI_TEST_REMOVE": hidden}
