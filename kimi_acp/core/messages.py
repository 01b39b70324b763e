"""Turning step results into history messages, and cheap token estimates."""

from __future__ import annotations

from collections.abc import Iterable

from ..llm.types import Message
from ..wire.types import ContentPart, TextPart, ThinkPart, ToolCall, ToolReturnValue, UserInput

EMPTY_TOOL_OUTPUT = "<system>Tool output is empty.</system>"


def system_note(text: str) -> TextPart:
    return TextPart(text=f"<system>{text}</system>")


def tool_result_message(tool_call_id: str, result: ToolReturnValue) -> Message:
    """The tool message the model sees: a `<system>` note with the message, then the output."""
    parts: list[ContentPart] = []
    if result.is_error:
        parts.append(system_note(f"ERROR: {result.message}" if result.message else "ERROR"))
    elif result.message:
        parts.append(system_note(result.message))
    if isinstance(result.output, str):
        if result.output:
            parts.append(TextPart(text=result.output))
    else:
        parts.extend(result.output)
    if not parts:
        return Message(role="tool", tool_call_id=tool_call_id, content=EMPTY_TOOL_OUTPUT)
    return Message(role="tool", tool_call_id=tool_call_id, content=parts)


def assistant_message(think: str, encrypted: str | None, text: str, tool_calls: list[ToolCall]) -> Message:
    parts: list[ContentPart] = []
    if think or encrypted:
        parts.append(ThinkPart(think=think, encrypted=encrypted))
    if text:
        parts.append(TextPart(text=text))
    return Message(role="assistant", content=parts, tool_calls=tool_calls or None)


def user_message(user_input: UserInput) -> Message:
    return Message(role="user", content=user_input)


def estimate_tokens(messages: Iterable[Message]) -> int:
    """~4 characters per token: good enough to decide when to compact when usage is unknown."""
    chars = 0
    for message in messages:
        if isinstance(message.content, str):
            chars += len(message.content)
        else:
            for part in message.content:
                if isinstance(part, TextPart):
                    chars += len(part.text)
                elif isinstance(part, ThinkPart):
                    chars += len(part.think)
                else:
                    chars += 1000  # media: a flat guess
        for call in message.tool_calls or ():
            chars += len(call.function.name) + len(call.function.arguments or "")
    return chars // 4
