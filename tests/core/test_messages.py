"""Messages the core writes into the history (kimi_acp/core/messages.py)."""

from __future__ import annotations

from kimi_acp.core.messages import EMPTY_TOOL_OUTPUT, tool_result_message
from kimi_acp.wire.types import (
    ImageURLPart,
    MediaURL,
    TextPart,
    ToolReturnValue,
)


def test_tool_result_message_shapes() -> None:
    error = tool_result_message("c1", ToolReturnValue(is_error=True, message="bad path", output="details"))
    assert error.model_dump(exclude_none=True) == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "text": "<system>ERROR: bad path</system>"}, {"type": "text", "text": "details"}],
    }
    bare_error = tool_result_message("c1", ToolReturnValue(is_error=True))
    assert bare_error.content == [TextPart(text="<system>ERROR</system>")]
    ok = tool_result_message("c2", ToolReturnValue(is_error=False, message="Wrote 3 bytes", output="x"))
    assert ok.content == [TextPart(text="<system>Wrote 3 bytes</system>"), TextPart(text="x")]
    plain = tool_result_message("c3", ToolReturnValue(is_error=False, output="just output"))
    assert plain.content == [TextPart(text="just output")]
    empty = tool_result_message("c4", ToolReturnValue(is_error=False))
    assert empty.content == EMPTY_TOOL_OUTPUT == "<system>Tool output is empty.</system>"
    assert empty.tool_call_id == "c4" and empty.role == "tool"
    image = ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AA"))
    parts = tool_result_message("c5", ToolReturnValue(is_error=False, output=[TextPart(text="see"), image]))
    assert parts.content == [TextPart(text="see"), image]
