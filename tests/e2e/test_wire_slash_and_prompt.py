"""Slash commands and the system prompt, seen through `kimi --wire`."""

from __future__ import annotations

import json
from pathlib import Path

from kimi_acp.sessions import work_dir_key
from tests.support.wire_client import event_types, events, text_of, tool_call


def session_dir(share_dir: Path, work_dir: Path) -> Path:
    (directory,) = list((share_dir / "sessions" / work_dir_key(work_dir)).iterdir())
    return directory


async def test_system_prompt_tells_work_dir_os_date_tools_and_agents_md(start_wire, share_dir, work_dir):
    (work_dir / "AGENTS.md").write_text("Always run `make lint` before committing.\n")
    wire = await start_wire(["text: ok"])
    await wire.call("prompt", {"user_input": "hi"})
    first = json.loads((session_dir(share_dir, work_dir) / "context.jsonl").read_text().splitlines()[0])
    assert first["role"] == "_system_prompt"
    prompt = first["content"]
    assert str(work_dir) in prompt
    assert "Operating system:" in prompt and "Date:" in prompt
    for tool in ("Shell", "ReadFile", "WriteFile", "StrReplaceFile", "Glob", "Grep", "SetTodoList"):
        assert tool in prompt
    assert "Always run `make lint` before committing." in prompt


async def test_clear_rotates_the_context_and_reports_zero_usage(start_wire, share_dir, work_dir):
    wire = await start_wire(["text: remembered", "text: fresh start"])
    await wire.call("prompt", {"user_input": "remember this"})
    response, seen = await wire.call("prompt", {"user_input": "/clear"})
    assert response["result"] == {"status": "finished"}
    assert event_types(seen) == ["TurnBegin", "ContentPart", "StatusUpdate", "TurnEnd"]  # no step: no model call
    assert text_of(seen) == "The context has been cleared."
    status = events(seen, "StatusUpdate")[0]["payload"]
    assert status["context_tokens"] == 0 and status["context_usage"] == 0.0
    directory = session_dir(share_dir, work_dir)
    assert "remember this" in (directory / "context_1.jsonl").read_text()
    assert "remember this" not in (directory / "context.jsonl").read_text()
    await wire.call("prompt", {"user_input": "next"})
    users = [json.loads(line) for line in (directory / "context.jsonl").read_text().splitlines()]
    assert [u["content"] for u in users if u.get("role") == "user"] == ["next"]


async def test_yolo_toggles_approvals_for_the_session(start_wire, share_dir, work_dir):
    wire = await start_wire([tool_call("s1", "Shell", {"command": "echo ran"}), "text: done"])
    response, seen = await wire.call("prompt", {"user_input": "/yolo"})
    assert "YOLO mode is on" in text_of(seen)
    state = json.loads((session_dir(share_dir, work_dir) / "state.json").read_text())
    assert state["approval"]["yolo"] is True
    response, seen = await wire.call("prompt", {"user_input": "run"})
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]
    response, seen = await wire.call("prompt", {"user_input": "/yolo"})
    assert "YOLO mode is off" in text_of(seen)


async def test_paths_and_unknown_commands(start_wire):
    wire = await start_wire(["text: a path is a normal prompt"])
    response, seen = await wire.call("prompt", {"user_input": "/usr/bin is on PATH?"})
    assert text_of(seen) == "a path is a normal prompt"
    assert "StepBegin" in event_types(seen)
    response, seen = await wire.call("prompt", {"user_input": "/frobnicate now"})
    assert text_of(seen) == 'Unknown slash command "/frobnicate".'
    assert "StepBegin" not in event_types(seen)


async def test_context_near_the_limit_is_compacted_before_the_next_step(start_wire, tmp_path, share_dir, work_dir):
    from tests.support.wire_client import scripted_config

    scripts = [
        "text: a long first answer\nusage: input_other=880 output=20",
        "text: SUMMARY: the user asked twice; first answer was long",  # the compaction call
        "text: answered after compaction",
    ]
    (tmp_path / "small").mkdir()
    wire = await start_wire(config=scripted_config(tmp_path / "small", scripts, max_context_size=1000))
    await wire.call("prompt", {"user_input": "first question"})
    response, seen = await wire.call("prompt", {"user_input": "second question"})
    assert response["result"] == {"status": "finished"}
    assert event_types(seen)[:4] == ["TurnBegin", "StepBegin", "CompactionBegin", "CompactionEnd"]
    assert text_of(seen) == "answered after compaction"
    directory = session_dir(share_dir, work_dir)
    fresh = (directory / "context.jsonl").read_text()
    assert "SUMMARY: the user asked twice" in fresh
    assert "first question" not in fresh  # summarised away...
    assert "a long first answer" in fresh and "second question" in fresh  # ...the last two kept verbatim
    assert "first question" in (directory / "context_1.jsonl").read_text()  # rotated, not lost
