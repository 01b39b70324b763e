from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from tests.support.inmemory import WireMemory
from tests.support.wire_client import WireClientMixin, WireProcess, scripted_config

StartWire = Callable[..., Awaitable[WireClientMixin]]


@pytest.fixture
def _wire_configs() -> list[Path]:
    """The config folders written so far by `start_wire` and `start_wire_process` (one count)."""
    return []


def _starter(
    kind: type[WireMemory | WireProcess], tmp_path: Path, work_dir: Path, started: list, configs: list[Path]
) -> StartWire:
    async def start(scripts: Sequence[str] = (), *args: str, config: Path | None = None, env: dict[str, str] | None = None):
        if config is None:
            directory = tmp_path / f"cfg{len(configs)}"
            directory.mkdir()
            configs.append(directory)
            config = scripted_config(directory, scripts)
        argv = ["--work-dir", str(work_dir), "--config-file", str(config), *args]
        wire = await kind.start(*argv, env=env)
        started.append(wire)
        return wire

    return start


@pytest.fixture
async def start_wire(tmp_path: Path, work_dir: Path, _wire_configs: list[Path]) -> AsyncIterator[StartWire]:
    """`kimi --wire` with scripted replies, served in this process (tests/support/inmemory.py);
    every server is stopped at teardown."""
    started: list[WireMemory] = []
    yield _starter(WireMemory, tmp_path, work_dir, started, _wire_configs)
    for wire in reversed(started):
        await wire.aclose()


@pytest.fixture
async def start_wire_process(tmp_path: Path, work_dir: Path, _wire_configs: list[Path]) -> AsyncIterator[StartWire]:
    """`start_wire` as a real `kimi --wire` process, for what only a process shows (stdio, EOF,
    signals, the early handshake, start-up); every process is stopped at teardown."""
    started: list[WireProcess] = []
    yield _starter(WireProcess, tmp_path, work_dir, started, _wire_configs)
    for wire in started:
        await wire.aclose()
