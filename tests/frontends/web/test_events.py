"""The page's view of a session's messages (kimi_acp/frontends/web/events.py): a call the user
cancelled is told by its result's `extras` flag (kept in wire.jsonl), never by its words."""

from __future__ import annotations

from pathlib import Path

from kimi_acp.core.toolset import CANCELLED_MESSAGE, cancelled_result
from kimi_acp.frontends.web.events import PageView
from kimi_acp.tools.base import tool_error
from kimi_acp.wire.file import WireRecorder, read_wire_file
from kimi_acp.wire.types import ToolResult


def tool_display(view: PageView, result: ToolResult) -> dict:
    return next(n["params"] for n in view.feed(result) if n["method"] == "ToolDisplay")


def test_a_cancelled_call_is_told_by_its_flag_live_and_from_the_session_file(tmp_path: Path) -> None:
    cancelled = ToolResult(tool_call_id="t1", return_value=cancelled_result())
    same_words = ToolResult(tool_call_id="t2", return_value=tool_error(CANCELLED_MESSAGE))  # a tool's own error
    view = PageView()
    assert tool_display(view, cancelled)["cancelled"] is True
    assert tool_display(view, same_words)["cancelled"] is False

    recorder = WireRecorder(tmp_path / "wire.jsonl")
    recorder.record(cancelled)
    recorder.record(same_words)
    recorder.close()
    replayed = [record.message for record in read_wire_file(tmp_path / "wire.jsonl")]
    history = PageView()
    assert [tool_display(history, m)["cancelled"] for m in replayed] == [True, False]
