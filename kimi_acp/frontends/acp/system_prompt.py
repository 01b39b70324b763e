"""The IDE's instructions: `systemPrompt` on session/new, load, resume and fork (schema 1.25, unstable).

JetBrains passes a user's custom instructions this way. The schema requires an error, and no
session, for a mode the agent did not advertise or content it cannot use, so the params are read
here, before the SDK (which does not know the field) would drop them. What is accepted is kept
in the session's state.json and applied by the core on every model request
(`AgentCore.request_system_prompt`): a reload, another process, or a later `systemPrompt` all
take effect from the next request, and context.jsonl keeps the session's own frozen prompt.
"""

from __future__ import annotations

from typing import Any

from ...sessions import ClientSystemPrompt
from .errors import invalid_params

MODES = ("append", "override")


def parse_system_prompt(raw: Any) -> ClientSystemPrompt | None:
    """The `systemPrompt` param as the session keeps it; None when absent or null (keep what the
    session has). Raises -32602 naming the field for anything the agent cannot apply."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise invalid_params("systemPrompt", "must be an object with `mode` and `content`")
    mode = raw.get("mode")
    if not isinstance(mode, str):
        raise invalid_params("systemPrompt.mode", 'required: "append" or "override"')
    if mode not in MODES:
        raise invalid_params("systemPrompt.mode", f"{mode!r} is not supported (supported: append, override)")
    content = raw.get("content")
    if not isinstance(content, list) or not content:
        raise invalid_params("systemPrompt.content", "must be a non-empty array of text content blocks")
    texts = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else type(block).__name__
        if kind != "text" or not isinstance(block.get("text"), str):
            raise invalid_params(f"systemPrompt.content[{index}]", f"only text content blocks are supported, got {kind!r}")
        texts.append(block["text"])
    text = "\n\n".join(texts)
    if not text.strip():
        raise invalid_params("systemPrompt.content", "the text is empty")
    return ClientSystemPrompt(mode=mode, text=text)
