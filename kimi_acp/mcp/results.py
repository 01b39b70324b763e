"""An MCP `CallToolResult` as our ToolReturnValue: text, images (if the model takes them) and
embedded resources, capped like every other tool's output.

Duck-typed on the content blocks' `type` (`text`, `image`, `audio`, `resource`, `resource_link`),
so this module needs nothing of the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from ..tools.base import MAX_OUTPUT_CHARS, cap_output, tool_error, tool_ok
from ..wire.types import ContentPart, ImageURLPart, MediaURL, TextPart, ToolReturnValue

ERROR_MESSAGE = "The MCP tool returned an error. The output may hold the error message or partial output."
TRUNCATED_MESSAGE = "Output is truncated to fit in the message."


def convert_result(
    result: Any, *, capabilities: Collection[str] = (), max_chars: int = MAX_OUTPUT_CHARS
) -> ToolReturnValue:
    """`capabilities` are the current model's (`image_in`); without it images become a text note."""
    parts = _parts(getattr(result, "content", None) or [], capabilities)
    structured = getattr(result, "structuredContent", None)
    if not parts and structured is not None:
        parts = [TextPart(text=json.dumps(structured, ensure_ascii=False))]
    output, truncated = _cap(parts, max_chars)
    if getattr(result, "isError", False):
        return tool_error(ERROR_MESSAGE, output=output, brief="MCP tool error")
    return tool_ok(output, message=TRUNCATED_MESSAGE if truncated else "")


def _parts(blocks: list[Any], capabilities: Collection[str]) -> list[ContentPart]:
    out: list[ContentPart] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            out.append(TextPart(text=block.text))
        elif kind == "image":
            out.append(_media(block.mimeType, block.data, capabilities))
        elif kind == "audio":
            out.append(
                TextPart(text=f"[{block.mimeType} audio omitted: audio results are not passed to the model]")
            )
        elif kind == "resource":
            out.append(_resource(block.resource, capabilities))
        elif kind == "resource_link":
            line = f"[resource link: {getattr(block, 'name', '') or ''} {block.uri}]".replace("  ", " ")
            if getattr(block, "description", None):
                line += f" {block.description}"
            out.append(TextPart(text=line))
        else:
            out.append(TextPart(text=f"[unsupported MCP content of type {kind!r} omitted]"))
    return out


def _media(mime: str | None, data: str, capabilities: Collection[str]) -> ContentPart:
    mime = mime or "application/octet-stream"
    if mime.startswith("image/") and "image_in" in capabilities:
        return ImageURLPart(image_url=MediaURL(url=f"data:{mime};base64,{data}"))
    size = len(data) * 3 // 4
    return TextPart(
        text=f"[{mime} image of about {size} bytes omitted: the current model does not accept images]"
    )


def _resource(resource: Any, capabilities: Collection[str]) -> ContentPart:
    uri = str(getattr(resource, "uri", ""))
    text = getattr(resource, "text", None)
    if text is not None:
        return TextPart(text=f'<resource uri="{uri}">\n{text}\n</resource>')
    mime = getattr(resource, "mimeType", None) or "application/octet-stream"
    blob = getattr(resource, "blob", "") or ""
    if mime.startswith("image/"):
        return _media(mime, blob, capabilities)
    return TextPart(text=f'[binary resource "{uri}" ({mime}, about {len(blob) * 3 // 4} bytes) omitted]')


def _cap(parts: list[ContentPart], max_chars: int) -> tuple[str | list[ContentPart], bool]:
    """Text shares one budget; only text counts toward it. All-text output becomes one string."""
    if all(isinstance(p, TextPart) for p in parts):
        joined = "\n".join(p.text for p in parts if isinstance(p, TextPart))
        return cap_output(joined, max_chars=max_chars)
    budget = max_chars
    truncated = False
    capped: list[ContentPart] = []
    for part in parts:
        if isinstance(part, TextPart):
            if budget <= 0:
                truncated = True
                continue
            text, cut = cap_output(part.text, max_chars=budget)
            truncated = truncated or cut
            budget -= len(text)
            capped.append(TextPart(text=text))
        else:
            capped.append(part)
    return capped, truncated
