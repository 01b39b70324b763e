"""The checkers are gates: `ruff check` and `mypy` pass on the whole tree, as configured in pyproject.toml.

ruff runs the rule selection in `[tool.ruff.lint]` over the package, the tests and bench/; mypy
checks the whole package strict (`[tool.mypy]`). Both are pinned in the dev extras, so a failure here is a change in this tree, not a new release. They
run as tests so that `scripts/test` (what CI and a developer run) holds them, in parallel with the
rest of the suite; a checker that is not installed fails, it never skips.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_checker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_nothing() -> None:
    done = run_checker("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert done.returncode == 0, f"ruff check found problems (fix them, or `ruff check --fix`):\n{done.stdout}{done.stderr}"


@pytest.mark.timeout(300)  # a cold run checks ~240 modules: ~10 s alone, longer beside the suite
def test_mypy_finds_nothing(tmp_path: Path) -> None:
    done = run_checker("mypy", "--cache-dir", str(tmp_path / "mypy-cache"), "--no-error-summary")
    assert done.returncode == 0, f"mypy found problems:\n{done.stdout}{done.stderr}"
    assert not done.stdout.strip(), done.stdout
