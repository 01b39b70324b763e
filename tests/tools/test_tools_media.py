"""ReadMediaFile: a PNG as an image part for a model with `image_in`; refused (and not offered)
without it; path rules, size cap and non-media files; the ACP card shows the image."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kimi_acp.core.toolset import FixedHost, Toolset
from kimi_acp.frontends.acp.convert import result_content, tool_kind
from kimi_acp.tools import media
from kimi_acp.tools.base import ToolEnv
from kimi_acp.tools.media import ReadMediaFile
from kimi_acp.wire.types import ImageURLPart, MediaURL, TextPart, VideoURLPart
from tests.fakes.web_server import PNG_BYTES
from tests.tools.conftest import Call, InSession


def with_caps(*caps: str) -> InSession:
    return InSession(ReadMediaFile(), ToolEnv(model_capabilities=frozenset(caps)))


@pytest.fixture
def png(work_dir: Path) -> Path:
    path = work_dir / "shot.png"
    path.write_bytes(PNG_BYTES)
    return path


async def test_png_is_an_image_part(call: Call, png: Path) -> None:
    result = await call(with_caps("image_in"), path="shot.png")
    assert not result.is_error, result.message
    opening, image, closing = result.output
    assert isinstance(opening, TextPart) and opening.text == f'<image path="{png}">'
    assert isinstance(image, ImageURLPart)
    assert image.image_url.url == "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()
    assert isinstance(closing, TextPart) and closing.text == "</image>"
    assert result.message == f"Loaded image file `{png}` (image/png, {len(PNG_BYTES)} bytes)."


async def test_without_image_in_the_tool_is_not_offered_and_refuses(call: Call, png: Path) -> None:
    tool = with_caps()
    assert not tool.offered
    assert with_caps("image_in").offered and with_caps("video_in").offered
    result = await call(tool, path="shot.png")
    assert result.is_error and "does not support image input" in result.message
    result = await call(with_caps("video_in"), path="shot.png")
    assert result.is_error and "does not support image input" in result.message


def test_toolset_offers_it_by_model_capabilities() -> None:
    session = FixedHost()
    toolset = Toolset([ReadMediaFile()], session)
    assert [s.name for s in toolset.specs()] == []
    session.env = ToolEnv(model_capabilities=frozenset({"image_in"}))
    assert [s.name for s in toolset.specs()] == ["ReadMediaFile"]


async def test_video_needs_video_in(call: Call, work_dir: Path) -> None:
    (work_dir / "clip.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    result = await call(with_caps("image_in"), path="clip.mp4")
    assert result.is_error and "does not support video input" in result.message
    result = await call(with_caps("video_in"), path="clip.mp4")
    assert not result.is_error
    assert isinstance(result.output[1], VideoURLPart)
    assert result.output[1].video_url.url.startswith("data:video/mp4;base64,")


async def test_path_rules_and_refusals(call: Call, work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = with_caps("image_in", "video_in")
    outside = tmp_path / "outside.png"
    outside.write_bytes(PNG_BYTES)
    result = await call(tool, path=f"../{outside.name}")
    assert result.is_error and "outside the working directory" in result.message
    assert not (await call(tool, path=str(outside))).is_error  # absolute paths may leave it
    assert (await call(tool, path="nope.png")).message == "`nope.png` does not exist."
    assert (await call(tool, path="")).message == "File path cannot be empty."
    (work_dir / "notes.txt").write_text("hello")
    result = await call(tool, path="notes.txt")
    assert result.is_error and "not readable as an image or video" in result.message
    (work_dir / "empty.png").write_bytes(b"")
    assert (await call(tool, path="empty.png")).display[0].text == "Empty file"
    (work_dir / "big.png").write_bytes(PNG_BYTES * 4)
    monkeypatch.setattr(media, "MAX_MEDIA_BYTES", len(PNG_BYTES))
    result = await call(tool, path="big.png")
    assert result.is_error and "exceeds the max" in result.message


async def test_acp_card_shows_the_image(call: Call, png: Path) -> None:
    result = await call(with_caps("image_in"), path=str(png))
    content = result_content("ReadMediaFile", result, terminal_shown=False)
    assert content[0] == {
        "type": "content",
        "content": {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG_BYTES).decode()},
    }
    assert content[1]["content"]["text"] == result.message
    assert tool_kind("ReadMediaFile") == "read" and tool_kind("FetchURL") == "fetch"


def test_openai_tool_message_carries_the_image() -> None:
    from kimi_acp.llm.openai_legacy import to_openai_messages
    from kimi_acp.llm.types import Message

    url = "data:image/png;base64,AAAA"
    parts = [TextPart(text="<image>"), ImageURLPart(image_url=MediaURL(url=url)), TextPart(text="</image>")]
    (tool,) = to_openai_messages("", [Message(role="tool", content=parts, tool_call_id="c1")])
    assert tool["content"][1] == {"type": "image_url", "image_url": {"url": url}}
    (plain,) = to_openai_messages("", [Message(role="tool", content=[TextPart(text="ok")], tool_call_id="c1")])
    assert plain["content"] == "ok"
