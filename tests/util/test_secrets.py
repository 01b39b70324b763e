"""The one secret registry (kimi_acp/util/secrets.py): who registers what, how text is redacted,
the log filter, every tool result leaving the toolset redacted, and child environments
(kimi_acp/util/child_env.py)."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import random
import string
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from kimi_acp.auth.tokens import OAuthToken
from kimi_acp.config import load_config
from kimi_acp.core.toolset import Toolset
from kimi_acp.tools.base import ToolContext
from kimi_acp.util import secrets
from kimi_acp.util.child_env import child_environment, pass_env
from kimi_acp.wire.types import (
    BackgroundTaskDisplayBlock,
    BriefDisplayBlock,
    DiffDisplayBlock,
    FunctionBody,
    ImageURLPart,
    MediaURL,
    ShellDisplayBlock,
    TextPart,
    TodoDisplayBlock,
    TodoDisplayItem,
    ToolCall,
    ToolReturnValue,
    UnknownDisplayBlock,
)

KEY = "sk-unit-secret-0123456789"


def test_registered_values_are_redacted_longest_first_and_short_ones_ignored() -> None:
    secrets.register([KEY, KEY[:12], "short", "", None])
    assert secrets.redact(f"a {KEY} b {KEY[:12]}c short") == "a [redacted] b [redacted]c short"
    assert secrets.holds_secret(f"x{KEY}x") and not secrets.holds_secret("nothing here")
    assert secrets.redact("given-1 and more", ["given-1"], mark="***") == "*** and more"  # a caller's own, 4+ chars
    assert secrets.replace(f"{KEY} x1", ["x1"], mark="***", min_chars=1) == f"{KEY} ***"  # exactly what it is given
    secrets.clear()
    assert secrets.redact(KEY) == KEY and not secrets.any_registered()


def test_named_values_only_when_the_name_says_credential() -> None:
    secrets.register_named([("Authorization", "Bearer tok-abcdefgh12"), ("X-Trace", "trace-value-1"), ("PATH", "/usr/bin:/bin")])
    assert secrets.redact("tok-abcdefgh12 trace-value-1 /usr/bin:/bin") == "[redacted] trace-value-1 /usr/bin:/bin"


def test_loading_a_config_registers_its_credentials_and_the_key_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_API_KEY", "sk-env-kimi-1234567")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-anthropic-89")
    load_config(config_text="""
[providers.p]
type = "openai_legacy"
base_url = "https://x.example/v1"
api_key = "sk-config-key-abcdef"
custom_headers = { "X-Api-Key" = "hdr-secret-123456", "X-Client" = "kimi-acp-client" }
env = { "SOME_TOKEN" = "env-secret-987654", "SOME_DIR" = "/opt/some/dir" }

[services.moonshot_search]
base_url = "https://search.example"
api_key = "sk-service-key-42"
""")
    text = "sk-config-key-abcdef hdr-secret-123456 env-secret-987654 sk-env-kimi-1234567 sk-env-anthropic-89 sk-service-key-42"
    assert secrets.redact(text) == " ".join(["[redacted]"] * 6)
    assert secrets.redact("kimi-acp-client /opt/some/dir") == "kimi-acp-client /opt/some/dir"


def test_oauth_tokens_are_registered_when_read_or_refreshed() -> None:
    OAuthToken.from_dict({"access_token": "acc-token-read-001", "refresh_token": "ref-token-read-001"})
    OAuthToken.from_response({"access_token": "acc-token-new-0002", "refresh_token": "ref-token-new-0002"})
    assert secrets.redact("acc-token-read-001 ref-token-read-001 acc-token-new-0002 ref-token-new-0002") == (
        "[redacted] [redacted] [redacted] [redacted]"
    )


ENCODINGS = {
    "base64": lambda data: base64.b64encode(data).decode(),
    "base64, no padding": lambda data: base64.b64encode(data).decode().rstrip("="),
    "base64url": lambda data: base64.urlsafe_b64encode(data).decode(),
    "base64url, no padding": lambda data: base64.urlsafe_b64encode(data).decode().rstrip("="),
}


@pytest.mark.parametrize("length", [8, 9, 10, 25, 64, 1500])
def test_each_encoding_of_a_secret_at_each_alignment_is_redacted(length: int) -> None:
    """A secret inside an encoded stream (`base64 -w0 /proc/PID/environ`), wherever it starts in it
    and whatever is around it: all that is left of the stream is what encodes the bytes before the
    secret's first whole group (at most 2 of its bytes), and the rest of the run is gone."""
    rng = random.Random(length)
    secret = "".join(rng.choice(string.ascii_letters + string.digits + "+/=-_~") for _ in range(length))
    secrets.register([secret])
    for before in range(6):  # 0, 1 and 2 bytes into a group, twice
        for after in (0, 1, 2, 5):
            data = rng.randbytes(before) + secret.encode() + rng.randbytes(after)
            for name, encode in ENCODINGS.items():
                encoded = encode(data)
                kept = encoded[: 4 * -(-before // 3)]  # the groups that start before the secret
                assert secrets.redact(f"out: {encoded} end") == f"out: {kept}[redacted] end", (name, before, after)
                assert secrets.holds_secret(f"curl -d {encoded}")
            for hexed in (data.hex(), data.hex().upper()):
                assert secrets.redact(f"out: {hexed} end") == f"out: {hexed[: 2 * before]}[redacted] end", (before, after)
    assert secrets.redact(f"{secret}!") == "[redacted]!"  # as written: exactly the secret


def test_encoded_forms_never_match_ordinary_text() -> None:
    """An 8-character key's forms are at least 8 characters long; a shorter value given for one call
    (4 to 7 characters) is redacted as written only: its encodings would be a few characters, found
    in ordinary words."""
    secrets.register(["Ab3dE6gH"])
    text = "The quick brown fox: QWIzZE 0x416233 QWIz YWJjZA== abcd 61626364 Ab3dE6g done"
    assert secrets.redact(text) == text
    assert secrets.redact("abcd and YWJjZA== and 61626364", ["abcd"], mark="***") == "*** and YWJjZA== and 61626364"
    assert secrets.redact(base64.b64encode(b"Ab3dE6gH").decode()) == "[redacted]"


def test_the_log_filter_redacts_messages_arguments_and_tracebacks() -> None:
    secrets.register([KEY])
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(secrets.LogRedaction())
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("some.library")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("calling with key %s", KEY)
        try:
            raise RuntimeError(f"the server said: bad key {KEY}")
        except RuntimeError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
        log.propagate = True
    written = "\n".join(handler.format(r) for r in records)
    assert "calling with key [redacted]" in written and "bad key [redacted]" in written
    assert KEY not in written


def test_setup_logging_puts_the_filter_on_the_log_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kimi_acp.startup.logs import setup_logging

    root = logging.getLogger()
    saved = (list(root.handlers), root.level, getattr(root, "_kimi_configured", False))
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path))
    monkeypatch.setenv("KIMI_API_KEY", "sk-env-logged-424242")
    root._kimi_configured = False  # type: ignore[attr-defined]
    try:
        setup_logging("test")
        logging.getLogger("mcp.client.somewhere").warning("header was Bearer %s", "sk-env-logged-424242")
    finally:
        for handler in root.handlers[len(saved[0]):]:
            handler.close()
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        root._kimi_configured = saved[2]  # type: ignore[attr-defined]
    log_text = (tmp_path / "logs" / "kimi.log").read_text()
    assert "header was Bearer [redacted]" in log_text and "sk-env-logged-424242" not in log_text


class _NoParams(BaseModel):
    pass


class _Leaky:
    """A tool that hands back the key everywhere a result can hold text."""

    name = "Leaky"
    description = "leaks"
    params = _NoParams

    def spec(self) -> Any:
        return None

    async def run(self, params: Any, ctx: ToolContext) -> ToolReturnValue:
        return ToolReturnValue(
            is_error=False,
            output=[TextPart(text=f"out {KEY}"), ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AAAA"))],
            message=f"msg {KEY}",
            display=[
                BriefDisplayBlock(text=f"brief {KEY}"),
                DiffDisplayBlock(path="notes.txt", old_text=f"old {KEY}", new_text="new"),
                ShellDisplayBlock(language="bash", command=f"echo {KEY}"),
                TodoDisplayBlock(items=[TodoDisplayItem(title=f"todo {KEY}", status="pending")]),
                BackgroundTaskDisplayBlock(task_id="b1", kind="bash", status="running", description=f"task {KEY}"),
                UnknownDisplayBlock(type="custom", data={"nested": [f"deep {KEY}"]}),
            ],
            extras={"raw": KEY},
        )


async def test_every_text_of_a_tool_result_leaves_the_toolset_redacted(tmp_path: Path) -> None:
    from kimi_acp.kaos.local import LocalKaos

    secrets.register([KEY])
    toolset = Toolset([_Leaky()])  # type: ignore[list-item]

    def make(name: str) -> ToolContext:
        return ToolContext(work_dir=tmp_path, kaos=LocalKaos(), tool_call_id="t1", approver=None, todos=None, tool_name=name)  # type: ignore[arg-type]

    outcome = await toolset.handle(ToolCall(id="t1", function=FunctionBody(name="Leaky", arguments="{}")), make)
    result = outcome.result
    dumped = result.model_dump_json()
    assert KEY not in dumped
    assert result.output[0] == TextPart(text="out [redacted]") and result.message == "msg [redacted]"
    assert isinstance(result.output[1], ImageURLPart) and result.output[1].image_url.url.endswith("AAAA")
    assert [type(b).__name__ for b in result.display][:3] == ["BriefDisplayBlock", "DiffDisplayBlock", "ShellDisplayBlock"]
    assert result.display[3].items[0].status == "pending" and result.display[5].type == "custom"
    assert dumped.count("[redacted]") == 9  # output, message, six blocks, extras


def test_child_environment_drops_the_agents_credentials_and_keeps_what_pass_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_API_KEY", "sk-child-kimi-1111")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-child-deepseek")
    monkeypatch.setenv("COPIED_KEY", f"prefix {KEY}")
    monkeypatch.setenv("HARMLESS", "stays")
    secrets.register([KEY])
    env = child_environment({"EXTRA": "1"})
    assert not {"KIMI_API_KEY", "DEEPSEEK_API_KEY", "COPIED_KEY"} & set(env)
    assert env["HARMLESS"] == "stays" and env["EXTRA"] == "1" and env["PATH"] == os.environ["PATH"]

    async def in_a_task() -> dict[str, str]:
        return child_environment()

    async def in_a_turn() -> tuple[dict[str, str], dict[str, str]]:
        pass_env(["KIMI_API_KEY", "COPIED_KEY"])
        started_later = await asyncio.create_task(in_a_task())  # e.g. a tool call or a background task
        return child_environment(), started_later

    here, later = asyncio.run(in_a_turn())
    for env in (here, later):
        assert env["KIMI_API_KEY"] == "sk-child-kimi-1111" and env["COPIED_KEY"] == f"prefix {KEY}"
        assert "DEEPSEEK_API_KEY" not in env
    assert "KIMI_API_KEY" not in child_environment()  # outside the turn, nothing passes
