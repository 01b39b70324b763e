"""What Kimi's own Wire clients read on their meters: StatusUpdate's context figures, the `_usage`
lines of context.jsonl and the display blocks of a Shell result, through `kimi --wire`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.sessions import work_dir_key
from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.wire_client import events, tool_call

NULL_FIGURES = {"context_usage": None, "context_tokens": None, "max_context_tokens": None, "token_usage": None}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def provider_config(tmp_path: Path, base_url: str) -> Path:
    """An OpenAI-compatible provider at the loopback server, whose replies choose the usage."""
    config = {
        "default_model": "fake",
        "models": {"fake": {"provider": "p", "model": "fake-model", "max_context_size": 100_000}},
        "providers": {"p": {"type": "openai_legacy", "base_url": base_url, "api_key": "sk-test"}},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def context_lines(share_dir: Path, work_dir: Path) -> list[dict[str, Any]]:
    (session,) = list((share_dir / "sessions" / work_dir_key(work_dir)).iterdir())
    return [json.loads(line) for line in (session / "context.jsonl").read_text().splitlines()]


async def test_no_usage_gives_null_figures_and_no_usage_line_a_reported_one_gives_both(
    start_wire, server: FakeLLMServer, tmp_path: Path, share_dir: Path, work_dir: Path
) -> None:
    server.enqueue(text_reply("first", usage=None), text_reply("second", usage=(1200, 34)))
    wire = await start_wire(config=provider_config(tmp_path, server.base_url))
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["result"] == {"status": "finished"}
    (status,) = events(seen, "StatusUpdate")
    assert status["payload"] == {**NULL_FIGURES, "message_id": "chatcmpl-fake", "plan_mode": False, "mcp_status": None}
    # Kimi's lines for a turn without usage: no `_usage`, and nothing else in its place
    roles = [line["role"] for line in context_lines(share_dir, work_dir)]
    assert roles == ["_system_prompt", "_checkpoint", "user", "_checkpoint", "assistant"]

    response, seen = await wire.call("prompt", {"user_input": "again"})
    assert response["result"] == {"status": "finished"}
    (status,) = events(seen, "StatusUpdate")
    assert status["payload"]["context_tokens"] == 1200 and status["payload"]["max_context_tokens"] == 100_000
    assert status["payload"]["context_usage"] == pytest.approx(0.012)
    assert status["payload"]["token_usage"] == {"input_other": 1200, "output": 34, "input_cache_read": 0, "input_cache_creation": 0}
    lines = context_lines(share_dir, work_dir)
    assert [line["role"] for line in lines][5:] == ["_checkpoint", "user", "_checkpoint", "assistant", "_usage"]
    assert lines[-1] == {"role": "_usage", "token_count": 1234}  # the provider's count, input and output
    assert await wire.close() == 0


async def test_the_usage_line_follows_the_reply_and_precedes_its_tool_results(start_wire, share_dir, work_dir) -> None:
    call = tool_call("c1", "Shell", {"command": "echo listed"}) + "\nusage: input_other=50 output=5"
    wire = await start_wire([call, "text: done"], "--yolo")
    response, _ = await wire.call("prompt", {"user_input": "list"})
    assert response["result"] == {"status": "finished"}
    lines = context_lines(share_dir, work_dir)
    roles = [line["role"] for line in lines if line["role"] != "_checkpoint"]
    assert roles == ["_system_prompt", "user", "assistant", "_usage", "tool", "assistant"]  # the second reply: no usage
    assert [line["token_count"] for line in lines if line["role"] == "_usage"] == [55]
    assert await wire.close() == 0


async def test_a_successful_shell_result_has_no_brief_a_failed_one_keeps_it(start_wire) -> None:
    wire = await start_wire(
        [
            tool_call("ok", "Shell", {"command": "echo one; echo two"}) + "\n"
            + tool_call("bad", "Shell", {"command": "echo broken; exit 3"}),
            "text: done",
        ],
        "--yolo",
    )
    response, seen = await wire.call("prompt", {"user_input": "run both"})
    assert response["result"] == {"status": "finished"}
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    ok, bad = results["ok"], results["bad"]
    assert ok["display"] == [] and ok["output"] == "one\ntwo\n" and ok["message"] == "Command executed successfully."
    assert bad["is_error"] and bad["display"] == [{"type": "brief", "text": "broken"}]
    assert await wire.close() == 0
