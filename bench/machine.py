"""Where the numbers come from: CPU, cores, memory, kernel, Python, and the code's git revision."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], check=False, cwd=REPO, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def load_average() -> float | None:
    """1-minute load average: other work competing for the cores makes every number noisier."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def machine_info() -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    dirty = _git("status", "--porcelain", "--", "kimi_acp")
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "memory_gib": _mem_total_gib(),
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "git": (_git("rev-parse", "--short", "HEAD") or "unknown") + ("+dirty" if dirty else ""),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_start": load_average(),
    }


def header_lines(info: dict[str, Any]) -> list[str]:
    lines = [
        (
            f"machine: {info['cpu']}, {info['cores']} cores ({info['cores_usable']} usable), "
            f"{info['memory_gib']} GiB RAM, {info['kernel']}"
        ),
        f"python:  {info['python']} ({info['python_executable']})",
        f"code:    git {info['git']} (kimi_acp/), {info['date']}",
    ]
    start, end = info.get("load_start"), info.get("load_end")
    if start is not None:
        load = f"load:    1-min load average {start:.2f} at start" + (
            f", {end:.2f} at end" if end is not None else ""
        )
        if max(start, end or 0) > 0.5:
            load += " (other work shares the CPUs: expect noise)"
        lines.append(load)
    return lines
