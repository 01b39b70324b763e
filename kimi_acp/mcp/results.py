"""An MCP `CallToolResult` as our ToolReturnValue: text, images (if the model takes them) and
embedded resources, capped like every other tool's output, and images within a budget of their own.

Duck-typed on the content blocks' `type` (`text`, `image`, `audio`, `resource`, `resource_link`),
so this module needs nothing of the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from ..tools.base import MAX_OUTPUT_CHARS, cap_output, tool_error, tool_ok
from ..wire.types import ContentPart, ImageURLPart, MediaURL, TextPart, ToolReturnValue

# The images of one result, together, as base64 (~6 MiB of images): each is sent to the model again
# with every later request of the session.
MAX_MEDIA_CHARS = 8 << 20

ERROR_MESSAGE = "The MCP tool returned an error. The output may hold the error message or partial output."
TRUNCATED_MESSAGE = "Output is truncated to fit in the message."


def convert_result(
    result: Any,
    *,
    capabilities: Collection[str] = (),
    max_chars: int = MAX_OUTPUT_CHARS,
    max_media_chars: int = MAX_MEDIA_CHARS,
) -> ToolReturnValue:
    """`capabilities` are the current model's (`image_in`); without it images become a text note.

    One budget for the text (`max_chars`, each part capped before anything is joined, so a huge
    answer costs no copy of itself) and one for the images (`max_media_chars` of base64, all the
    result's images together): what does not fit is cut, or left out with a note."""
    budget = _Budget(max_chars, max_media_chars)
    parts = _parts(getattr(result, "content", None) or [], capabilities, budget)
    structured = getattr(result, "structuredContent", None)
    if not parts and structured is not None:
        parts = [budget.text(json.dumps(structured, ensure_ascii=False))]
    output: str | list[ContentPart] = parts
    if all(isinstance(p, TextPart) for p in parts):
        output = "\n".join(p.text for p in parts if isinstance(p, TextPart))
    if getattr(result, "isError", False):
        return tool_error(ERROR_MESSAGE, output=output, brief="MCP tool error")
    return tool_ok(output, message=TRUNCATED_MESSAGE if budget.truncated else "")


class _Budget:
    """What is left of a result's text and image budgets; every part takes from them as it is made."""

    def __init__(self, chars: int, media_chars: int) -> None:
        self.chars = chars
        self.media_chars = self.media_limit = media_chars
        self.truncated = False

    def text(self, text: str) -> TextPart:
        """`text` capped to what is left (lines too, `cap_output`); the join's newline counts."""
        if self.chars <= 0:
            self.truncated = True
            return TextPart(text="")
        capped, cut = cap_output(text, max_chars=self.chars)
        self.truncated = self.truncated or cut
        self.chars -= len(capped) + 1
        return TextPart(text=capped)

    def media(self, data: str) -> bool:
        """Whether an image of `data` (base64) still fits; if so, it is counted."""
        if len(data) > self.media_chars:
            self.truncated = True
            return False
        self.media_chars -= len(data)
        return True


def _parts(blocks: list[Any], capabilities: Collection[str], budget: _Budget) -> list[ContentPart]:
    out: list[ContentPart] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        part: ContentPart
        if kind == "text":
            part = budget.text(block.text)
        elif kind == "image":
            part = _media(block.mimeType, block.data, capabilities, budget)
        elif kind == "audio":
            part = TextPart(text=f"[{block.mimeType} audio omitted: audio results are not passed to the model]")
        elif kind == "resource":
            part = _resource(block.resource, capabilities, budget)
        elif kind == "resource_link":
            line = f"[resource link: {getattr(block, 'name', '') or ''} {block.uri}]".replace("  ", " ")
            if getattr(block, "description", None):
                line += f" {block.description}"
            part = budget.text(line)
        else:
            part = TextPart(text=f"[unsupported MCP content of type {kind!r} omitted]")
        if not (isinstance(part, TextPart) and not part.text and budget.truncated):
            out.append(part)  # a text part the budget left nothing of is dropped
    return out


def _media(mime: str | None, data: str, capabilities: Collection[str], budget: _Budget) -> ContentPart:
    mime = mime or "application/octet-stream"
    size = len(data) * 3 // 4
    if not (mime.startswith("image/") and "image_in" in capabilities):
        return TextPart(
            text=f"[{mime} image of about {size} bytes omitted: the current model does not accept images]"
        )
    if not budget.media(data):
        return TextPart(
            text=f"[{mime} image of about {size} bytes omitted: the result's images exceed "
            f"{_size(budget.media_limit)} of base64]"
        )
    return ImageURLPart(image_url=MediaURL(url=f"data:{mime};base64,{data}"))


def _resource(resource: Any, capabilities: Collection[str], budget: _Budget) -> ContentPart:
    uri = str(getattr(resource, "uri", ""))
    text = getattr(resource, "text", None)
    if text is not None:
        return budget.text(f'<resource uri="{uri}">\n{_head(text, budget)}\n</resource>')
    mime = getattr(resource, "mimeType", None) or "application/octet-stream"
    blob = getattr(resource, "blob", "") or ""
    if mime.startswith("image/"):
        return _media(mime, blob, capabilities, budget)
    return TextPart(text=f'[binary resource "{uri}" ({mime}, about {len(blob) * 3 // 4} bytes) omitted]')


def _head(text: str, budget: _Budget) -> str:
    """As much of `text` as can matter to the budget, before it is wrapped in anything (no copy of
    a huge text); `cap_output` then cuts lines and the total precisely."""
    limit = max(budget.chars, 0) * 4 + 64
    if len(text) > limit:
        budget.truncated = True
        return text[:limit]
    return text


def _size(chars: int) -> str:
    return f"{chars >> 20} MiB" if chars % (1 << 20) == 0 else f"{chars} characters"
