"""ReadFile reads only what it returns: the peak RSS of a real `kimi --wire` stays flat on huge files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.wire_client import events, tool_call

MIB = 1024 * 1024
# Growth of the peak RSS allowed for one read, over a baseline process that already read a small file.
MAX_GROWTH_KIB = 20 * 1024

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")


def peak_rss_kib(pid: int) -> int:
    """VmHWM: the highest resident set size the process ever had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def write_many_lines(path: Path, size: int) -> int:
    """`size` bytes of 64-byte numbered lines; returns the number of lines."""
    block = b"".join(b"%09d %s\n" % (i, b"x" * 53) for i in range(MIB // 64))
    with open(path, "wb") as f:
        f.writelines(block for _ in range(size // MIB))
    return size // 64


async def read_turn(wire, prompt: str) -> list[dict]:
    response, seen = await wire.call("prompt", {"user_input": prompt}, timeout=30)
    assert response["result"] == {"status": "finished"}
    return [e["payload"]["return_value"] for e in events(seen, "ToolResult")]


async def test_huge_files_are_read_in_bounded_memory(start_wire_process, work_dir: Path) -> None:
    (work_dir / "small.txt").write_text("tiny\n")
    lines = write_many_lines(work_dir / "big.txt", 64 * MIB)
    (work_dir / "one-line.txt").write_bytes(b"y" * (16 * MIB))
    wire = await start_wire_process(  # the peak RSS of its own process
        [
            tool_call("r0", "ReadFile", {"path": "small.txt"}),
            "text: warmed up",
            tool_call("r1", "ReadFile", {"path": "one-line.txt"}),
            "text: read the long line",
            tool_call("r2", "ReadFile", {"path": "big.txt"}),
            tool_call("r3", "ReadFile", {"path": "big.txt", "line_offset": -3}),
            "text: read the big one",
        ]
    )
    pid = wire.proc.pid
    (small,) = await read_turn(wire, "warm up")
    assert small["output"] == "     1\ttiny\n"
    baseline = peak_rss_kib(pid)

    (long,) = await read_turn(wire, "read the long line")
    after_long = peak_rss_kib(pid)
    assert long["output"] == f"     1\t{'y' * 2000}[...truncated]\n"
    assert long["message"].startswith("Read 1 line (1-1) of 1.")

    head, tail = await read_turn(wire, "read big")
    after_big = peak_rss_kib(pid)
    assert head["message"] == f"Read 1000 lines (1-1000) of {lines}. Use line_offset=1001 to continue."
    assert head["output"].startswith(f"     1\t000000000 {'x' * 53}\n")
    assert tail["message"] == f"Read 3 lines ({lines - 2}-{lines}) of {lines}. End of file reached."

    # The long line is read first, so each peak is measured against the same baseline.
    print(f"peak RSS: baseline {baseline} KiB, 16 MiB line +{after_long - baseline} KiB, "
          f"64 MiB file +{after_big - baseline} KiB")
    assert after_long - baseline < MAX_GROWTH_KIB, f"16 MiB line: peak RSS grew {after_long - baseline} KiB"
    assert after_big - baseline < MAX_GROWTH_KIB, f"64 MiB file: peak RSS grew {after_big - baseline} KiB"
    assert await wire.close() == 0
