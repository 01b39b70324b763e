"""`ToolStarted` is internal (core/turn.py): a real `kimi --wire` client sees the same Wire 1.10
messages as before it existed, and the session's wire.jsonl holds none, while the ACP cards of the
same calls go `in_progress` on it (tests/e2e/test_acp_card_start.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_wire_turns import INIT, session_dir
from tests.support.wire_client import event_types, tool_call

pytestmark = pytest.mark.processes


async def test_a_wire_client_and_the_session_files_never_see_tool_started(start_wire_process, share_dir: Path, work_dir: Path):
    (work_dir / "notes.txt").write_text("hi\n")
    calls = "\n".join([
        tool_call("c1", "Shell", {"command": "echo ran"}),
        tool_call("c2", "ReadFile", {"path": "notes.txt"}),
        tool_call("c3", "SetTodoList", {"todos": []}),
    ])  # fmt: skip
    wire = await start_wire_process([calls, "text: done"])
    await wire.call("initialize", INIT)
    response, seen, asked = await wire.call_approving("prompt", {"user_input": "go"}, timeout=30)
    assert response["result"] == {"status": "finished"} and [a["tool_call_id"] for a in asked] == ["c1"]
    assert "ToolStarted" not in json.dumps(seen)
    assert set(event_types(seen)) <= {
        "TurnBegin", "StepBegin", "ToolCall", "ToolCallPart", "ApprovalResponse", "ToolResult", "StatusUpdate",
        "ContentPart", "TurnEnd",
    }  # fmt: skip
    assert event_types(seen).count("ToolResult") == 3
    recorded = (session_dir(share_dir, work_dir) / "wire.jsonl").read_text()
    assert '"c3"' in recorded and "ToolStarted" not in recorded
