"""Fixtures every test directory uses."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """An empty project directory for the agent to work in."""
    directory = tmp_path / "project"
    directory.mkdir()
    return directory
