"""Several processes refreshing one login at once spend the refresh token exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.auth.conftest import write_credentials
from tests.fakes.oauth_server import FakeOAuthServer

SCRIPT = """
import asyncio, os, sys, time
from pathlib import Path
from kimi_acp.auth.source import OAuthTokenSource
from kimi_acp.config import OAuthRef

go = Path(sys.argv[1])
Path(sys.argv[2]).touch()  # imported and ready
while not go.exists():
    time.sleep(0.005)
source = OAuthTokenSource(OAuthRef(storage="file", key="oauth/kimi-code"))
asyncio.run(source.ensure_fresh())
print(source.access_token())
"""


def test_concurrent_refreshes_spend_the_token_once(tmp_path: Path, share_dir: Path, oauth: FakeOAuthServer) -> None:
    refresh = oauth.add_refresh_token()
    write_credentials(share_dir, "at-old-expired-123", refresh, expires_at=time.time() - 1)
    oauth.refresh_delay = 0.4  # every process is inside ensure_fresh while the first refresh is under way
    go = tmp_path / "go"
    env = {**os.environ, "KIMI_CODE_OAUTH_HOST": oauth.url}
    ready = [tmp_path / f"ready{i}" for i in range(3)]
    procs = [
        subprocess.Popen([sys.executable, "-c", SCRIPT, str(go), str(r)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in ready
    ]
    deadline = time.monotonic() + 60
    while not all(r.exists() for r in ready):  # all imported: they start refreshing together
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "the refreshers did not start"
        time.sleep(0.01)
    go.touch()
    results = [p.communicate(timeout=60) for p in procs]

    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in results]
    assert oauth.refresh_calls == [(refresh, "ok")]
    assert oauth.double_spends == []
    assert {out.strip() for out, _ in results} == {oauth.issued_access[0]}
