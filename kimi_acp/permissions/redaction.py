"""Known secrets out of anything made of text: tool results, approval cards (util/secrets.py holds
the registry and the plain-text `redact`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..util import secrets


def scrubbed(value: Any) -> Any:
    """Every string in `value` (text parts, display blocks, plain data) redacted; a part's or a
    block's `type`, and anything that is not text (an image's URL), left as it is."""
    if isinstance(value, str):
        return secrets.redact(value)
    if isinstance(value, list):
        return [scrubbed(item) for item in value]
    if isinstance(value, dict):
        return {key: scrubbed(item) for key, item in value.items()}
    if isinstance(value, BaseModel) and getattr(value, "type", "") not in _MEDIA_PARTS:
        fields = {name: getattr(value, name) for name in type(value).model_fields if name != "type"}
        return value.model_copy(update={name: scrubbed(item) for name, item in fields.items()})
    return value


_MEDIA_PARTS = frozenset({"image_url", "audio_url", "video_url"})
