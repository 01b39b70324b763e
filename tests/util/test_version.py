"""The version has one home, kimi_acp/_version.py: the package root, the installed distribution's
metadata (pyproject.toml reads it from there) and the User-Agent all say the same."""

from __future__ import annotations

import ast
from importlib import metadata
from pathlib import Path

import kimi_acp
from kimi_acp import _version
from kimi_acp.util.user_agent import user_agent


def test_one_version_everywhere() -> None:
    assert kimi_acp.__version__ is _version.__version__
    assert metadata.version("kimi-acp") == _version.__version__  # built from _version.py
    assert user_agent() == f"kimi-acp/{_version.__version__}"  # no "0" from a source tree


def test_the_version_module_imports_nothing() -> None:
    tree = ast.parse(Path(_version.__file__).read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
