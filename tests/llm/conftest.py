"""Fixtures shared by the provider tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeLLMServer


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """A loopback fake model server (Chat Completions and Messages modes), stopped afterwards."""
    with FakeLLMServer() as fake:
        yield fake
