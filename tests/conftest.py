"""Fixtures every test directory uses, and the rule for missing tools: skip locally, fail in CI."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.requirements import unavailable


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_tool(*names): the test needs these programs on PATH; without them it is skipped, "
        "except in CI (CI=true), where it fails",
    )
    config.addinivalue_line(
        "markers",
        "smoke: a core scenario that .ci/run also runs on the newest Python, with the lowest dependency "
        "versions pyproject.toml allows, and with KIMI_PLAIN_STARTUP=1 (`pytest -m smoke`)",
    )
    config.addinivalue_line(
        "markers",
        "processes: the servers this test starts through tests/support/inmemory.py are real processes "
        "(KIMI_TEST_SERVERS=process): a guarantee checked as a user gets it, not in the test process",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers("requires_tool"):
        missing = [name for name in marker.args if shutil.which(name) is None]
        if missing:
            unavailable(f"not installed: {', '.join(missing)}")


@pytest.fixture(scope="session", autouse=True)
def schema_index_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every `kimi acp` the tests start finds the ACP schema index cached, as every start after the
    first does on a user's machine (kimi_acp/_compat/acp_lazy_schema.py); tests/e2e/test_acp_schema_index.py
    covers the first start."""
    from kimi_acp._compat.acp_schema_index import write_index

    directory = tmp_path_factory.mktemp("kimi-cache")
    previous = os.environ.get("KIMI_CACHE_DIR")
    os.environ["KIMI_CACHE_DIR"] = str(directory)
    assert write_index() is not None
    yield directory
    if previous is None:
        os.environ.pop("KIMI_CACHE_DIR", None)
    else:
        os.environ["KIMI_CACHE_DIR"] = previous


@pytest.fixture(autouse=True)
def _servers_as_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `processes` marker: the harness starts real processes for this test."""
    if request.node.get_closest_marker("processes") is not None:
        monkeypatch.setenv("KIMI_TEST_SERVERS", "process")


@pytest.fixture(autouse=True)
def _no_server_left_in_memory() -> Iterator[None]:
    """A server a test ran in this process (tests/support/inmemory.py) must be stopped by the end
    of the test: one left running would lend its environment and state to the next test."""
    yield
    inmemory = sys.modules.get("tests.support.inmemory")
    if inmemory is not None and (name := inmemory.left_running()) is not None:
        pytest.fail(f"{name} was left running (its environment and state are put back now): close it in the test")


@pytest.fixture(name="unavailable")
def unavailable_fixture() -> Callable[[str], NoReturn]:
    """`unavailable(reason)` for a requirement that is not a program (skip locally, fail in CI)."""
    return unavailable


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """An empty project directory for the agent to work in."""
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture
def share_dir() -> Path:
    """This test's own `$KIMI_SHARE_DIR`: what the code under test in this process reads (the root
    conftest gives each test a fresh one)."""
    return Path(os.environ["KIMI_SHARE_DIR"])


@pytest.fixture
def share(tmp_path: Path) -> Path:
    """A fresh share dir for a server the test starts (passed in its env, see `acp_fixtures.acp_env`),
    never the test process's own (`share_dir`)."""
    directory = tmp_path / "share"
    directory.mkdir()
    return directory


@pytest.fixture
def project(work_dir: Path) -> Path:
    """The ACP tests' name for the session's working directory."""
    return work_dir
