"""One exception tree (kimi_acp/errors.py): every exception class of the package has `KimiError`
as its root, and the tree in the module's docstring names each of them."""

from __future__ import annotations

import importlib
import inspect

import pytest

from kimi_acp import errors
from tests.project.test_import_graph import module_files


def package_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in module_files():
        if name.endswith("__main__"):
            continue  # running it is `kimi`
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not attr.startswith("_")
            ):
                found[f"{name}.{attr}"] = value
    return found


def test_every_exception_of_the_package_has_one_root() -> None:
    found = package_exceptions()
    assert len(found) > 40  # the walk saw the package's exceptions
    assert [name for name, cls in found.items() if not issubclass(cls, errors.KimiError)] == []


def test_the_documented_tree_names_every_exception() -> None:
    tree = errors.__doc__ or ""
    missing = sorted({cls.__name__ for cls in package_exceptions().values()} - {"KimiError"})
    assert [name for name in missing if name not in tree] == []


@pytest.mark.parametrize(
    ("family", "member"),
    [
        ("ConfigError", "kimi_acp.errors.AgentFileError"),
        ("ConfigError", "kimi_acp.mcp.config.McpConfigError"),
        ("ChatProviderError", "kimi_acp.errors.SignInRequired"),
        ("AccountError", "kimi_acp.auth.errors.RefreshRejected"),
        ("SessionError", "kimi_acp.core.errors.SessionBusy"),
        ("ToolError", "kimi_acp.tools.base.ToolRejectedError"),
        ("ProtocolError", "kimi_acp.wire.serde.WireDecodeError"),
    ],
)
def test_families(family: str, member: str) -> None:
    module, _, name = member.rpartition(".")
    assert issubclass(getattr(importlib.import_module(module), name), getattr(errors, family))
