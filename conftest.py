"""Every test (and doctest) gets its own share dir: nothing touches the real ~/.kimi."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _isolated_share_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    share = tmp_path_factory.mktemp("share")
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    for var in ("KIMI_API_KEY", "KIMI_BASE_URL", "KIMI_MODEL_NAME", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _fresh_secrets() -> Iterator[None]:
    """The secrets a test registered (util/secrets.py) are not redacted in the next one."""
    from kimi_acp.util import secrets

    yield
    secrets.clear()
