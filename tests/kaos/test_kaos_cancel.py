"""Cancelling a command at any point must leave no process behind (SIGTERM of `kimi --wire` mid-turn)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from kimi_acp.kaos.local import LocalKaos
from tests.support.processes import live_pids


async def test_cancel_at_any_point_of_process_start_leaves_no_process(tmp_path: Path) -> None:
    leaked: dict[int, list[int]] = {}
    for yields in range(3, 7):  # 3-4 yields: the pipes are connected but the task has not resumed yet
        marker = f"29.{os.getpid()}{yields}"
        task = asyncio.create_task(
            LocalKaos().run_command(f"sleep {marker}; echo never", cwd=tmp_path, timeout=60, output_limit=1000)
        )
        for _ in range(yields):
            await asyncio.sleep(0)
        time.sleep(0.1)  # a busy loop: the shell gets to start its child before the cancel is handled
        task.cancel()
        await asyncio.wait([task], timeout=2)
        assert task.cancelled()
        for _ in range(25):
            if not live_pids("sleep\0" + marker):
                break
            await asyncio.sleep(0.02)
        pids = live_pids("sleep\0" + marker)
        if pids:
            leaked[yields] = pids
            for pid in pids:  # do not leave them running for 29 s
                os.kill(pid, signal.SIGKILL)
    assert leaked == {}, f"orphaned `sleep` processes, by number of loop yields before the cancel: {leaked}"
