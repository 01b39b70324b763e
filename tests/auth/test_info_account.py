"""`kimi info` says whether the Kimi account is signed in, never what the tokens are."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kimi_acp.cli.info import print_info
from tests.auth.conftest import account_config, write_credentials

ACCESS = "at-info-secret-11223344"
REFRESH = "rt-info-secret-55667788"


def info(config: Path, capsys: pytest.CaptureFixture[str], *, as_json: bool = False) -> str:
    assert print_info(str(config), as_json) == 0
    out, err = capsys.readouterr()
    assert ACCESS not in out + err and REFRESH not in out + err
    return out


def test_info_shows_the_login_state(tmp_path: Path, share_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(account_config("https://api.example/v1")))

    assert "not signed in (run `kimi login`)" in info(config, capsys)

    write_credentials(share_dir, ACCESS, REFRESH, expires_at=time.time() + 3600)
    assert "signed in with Kimi account (expires " in info(config, capsys)
    data = json.loads(info(config, capsys, as_json=True))
    assert data["providers"]["managed:kimi-code"]["login"].startswith("signed in with Kimi account")

    write_credentials(share_dir, ACCESS, "", expires_at=time.time() - 60)
    assert "sign-in expired" in info(config, capsys)
