from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from tests.support.wire_client import WireProcess, scripted_config

StartWire = Callable[..., Awaitable[WireProcess]]


@pytest.fixture
def share_dir() -> Path:
    return Path(os.environ["KIMI_SHARE_DIR"])


@pytest.fixture
async def start_wire(tmp_path: Path, work_dir: Path) -> AsyncIterator[StartWire]:
    """Start `kimi --wire` with scripted replies; every process is stopped at teardown."""
    started: list[WireProcess] = []

    async def start(scripts: Sequence[str] = (), *args: str, config: Path | None = None, env: dict[str, str] | None = None) -> WireProcess:
        if config is None:
            directory = tmp_path / f"cfg{len(started)}"
            directory.mkdir()
            config = scripted_config(directory, scripts)
        cfg = config
        argv = ["--work-dir", str(work_dir), "--config-file", str(cfg), *args]
        proc = await WireProcess.start(*argv, env=env)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.proc.returncode is None:
            try:
                await proc.close(timeout=5)
            except Exception:
                proc.kill()

