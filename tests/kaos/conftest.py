"""Fixtures of the kaos tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.processes import pid_alive


@pytest.fixture
def alive() -> Callable[[int], bool]:
    """Whether a process id still names a live (not zombie) process."""
    return pid_alive
