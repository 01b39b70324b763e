"""`kimi --wire` with a Kimi Code CLI account login: real subprocesses, loopback OAuth and model servers."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

from tests.auth.conftest import account_config, write_credentials
from tests.fakes.oauth_server import FakeOAuthServer
from tests.fakes.openai_server import ErrorReply, FakeLLMServer, text_reply
from tests.support.wire_client import WireProcess, text_of

ACCESS = "at-wire-reference-5b4a3c2d1e"
REFRESH = "rt-wire-reference-9f8e7d6c5b"


async def start(tmp_path: Path, work_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> WireProcess:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(account_config(llm.base_url)))
    env = {"KIMI_CODE_OAUTH_HOST": oauth.url, "KIMI_LOG_LEVEL": "DEBUG"}
    return await WireProcess.start("--work-dir", str(work_dir), "--config-file", str(config), env=env)


async def finish(wire: WireProcess, share_dir: Path, *secrets: str) -> None:
    """Close; no token anywhere: stdout, stderr, logs, session files."""
    assert wire.proc.stdin is not None and wire.proc.stdout is not None
    wire.proc.stdin.close()
    rest = await wire.proc.stdout.read()
    assert await wire.proc.wait() == 0
    stdout = "\n".join(json.dumps(m) for m in wire.received) + rest.decode()
    stderr = await wire.stderr_text()
    assert "Traceback" not in stderr
    files = [p for p in share_dir.rglob("*") if p.is_file() and "credentials" not in p.parts]
    assert any(p.name == "kimi.log" for p in files)
    for secret in secrets:
        assert secret not in stdout and secret not in stderr
        for path in files:
            assert secret not in path.read_text(errors="replace"), path


async def test_reference_login_works_unchanged(tmp_path: Path, work_dir: Path, share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    write_credentials(share_dir, ACCESS, REFRESH)
    llm.enqueue(text_reply("hi there"))
    wire = await start(tmp_path, work_dir, oauth, llm)

    response, seen = await wire.call("prompt", {"user_input": "hello"})

    assert response["result"] == {"status": "finished"}
    assert text_of(seen) == "hi there"
    assert llm.requests[0].headers["authorization"] == f"Bearer {ACCESS}"
    assert llm.requests[0].headers["x-msh-platform"] == "kimi_cli"
    await finish(wire, share_dir, ACCESS, REFRESH)


async def test_expired_token_is_refreshed_and_a_401_retried(tmp_path: Path, work_dir: Path, share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    oauth.add_refresh_token(REFRESH)
    path = write_credentials(share_dir, ACCESS, REFRESH, expires_at=time.time() - 5)
    llm.enqueue(text_reply("one"), ErrorReply(401, {"error": {"message": "token revoked"}}), text_reply("two"))
    wire = await start(tmp_path, work_dir, oauth, llm)

    response, seen = await wire.call("prompt", {"user_input": "first"})
    assert response["result"] == {"status": "finished"} and text_of(seen) == "one"
    first = oauth.issued_access[0]
    assert llm.requests[0].headers["authorization"] == f"Bearer {first}"
    assert json.loads(path.read_text())["access_token"] == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    response, seen = await wire.call("prompt", {"user_input": "second"})  # 401 → refresh → retry
    assert response["result"] == {"status": "finished"} and text_of(seen) == "two"
    second = oauth.issued_access[1]
    assert [r.headers["authorization"] for r in llm.requests[1:]] == [f"Bearer {first}", f"Bearer {second}"]
    assert [outcome for _, outcome in oauth.refresh_calls] == ["ok", "ok"]
    assert json.loads(path.read_text())["access_token"] == second
    await finish(wire, share_dir, ACCESS, REFRESH, first, second)


async def test_revoked_refresh_token_is_auth_expired(tmp_path: Path, work_dir: Path, share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    write_credentials(share_dir, ACCESS, REFRESH, expires_at=time.time() - 5)  # the server does not know REFRESH
    wire = await start(tmp_path, work_dir, oauth, llm)

    for _ in range(2):
        response, _seen = await wire.call("prompt", {"user_input": "hi"})
        error = response["error"]
        assert error["code"] == -32004
        assert "Run `kimi login` to sign in again." in error["message"]

    assert len(oauth.refresh_calls) == 1  # refused once, never sent again: no loop
    assert llm.requests == []
    await finish(wire, share_dir, ACCESS, REFRESH)
