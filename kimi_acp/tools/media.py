"""ReadMediaFile: an image (or a video) file handed to the model as a media part.

Offered only to a model with `image_in` or `video_in` (the session's model, read from
`ToolEnv.model_capabilities`); a kind the model cannot take is refused. Read locally, as in Kimi (not
through an ACP client's buffers), and only a regular file (`Kaos.read_bytes`). Path rules as
ReadFile's (`read.resolve_path`).
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

from pydantic import Field

from ..llm.types import ToolSpec
from ..util.regular_file import NotRegularFileError
from ..wire.types import ContentPart, ImageURLPart, MediaURL, TextPart, ToolReturnValue, VideoURLPart
from .base import Params, Tool, ToolContext, ToolEnv, tool_error, tool_ok
from .permits import permit_read
from .read import media_kind, read_error, resolve_path

NAME = "ReadMediaFile"
MAX_MEDIA_MEGABYTES = 100
MAX_MEDIA_BYTES = MAX_MEDIA_MEGABYTES << 20
_SNIFF_BYTES = 32

DESCRIPTION = f"""Read an image or video file and show it to you, so that you can see its content.

- Use this tool for image files (PNG, JPEG, GIF, WebP...) and, when your model accepts video, video files.
- Use ReadFile for text files.
- Relative paths are resolved from the working directory and must stay inside it; use an absolute
  path for files outside the working directory.
- Files over {MAX_MEDIA_MEGABYTES} MB cannot be read.
"""


class ReadMediaFileParams(Params):
    path: str = Field(
        description=(
            "The path to the file to read. Absolute paths are required when reading files outside the "
            "working directory."
        )
    )


def _sniff_image(header: bytes) -> str | None:
    if header.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if header.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if header.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if header.startswith(b"RIFF") and header[8:12] == b"WEBP":
        return "image/webp"
    if header.startswith(b"BM"):
        return "image/bmp"
    return None


class ReadMediaFile(Tool[ReadMediaFileParams]):
    name = NAME
    description = DESCRIPTION
    params = ReadMediaFileParams

    def offer(self, env: ToolEnv) -> ToolSpec | None:
        """Offered only to a model that can take images or videos (Kimi skips the tool otherwise)."""
        caps = env.model_capabilities
        return self.spec() if "image_in" in caps or "video_in" in caps else None

    async def run(self, params: ReadMediaFileParams, ctx: ToolContext) -> ToolReturnValue:
        if not params.path.strip():
            return tool_error("File path cannot be empty.", brief="Empty file path")
        path = resolve_path(ctx, params.path)
        if not isinstance(path, Path):
            return path
        found = await ctx.kaos.stat(path)
        if found is None:
            return tool_error(f"`{params.path}` does not exist.", brief="File not found")
        if found.is_dir:
            return tool_error(f"`{params.path}` is not a file.", brief="Invalid path")
        if not found.is_file:  # a FIFO, a device, a socket: reading it could wait forever
            return read_error(path, NotRegularFileError(path, found.mode))
        await permit_read(ctx, path, what="Read media file")
        size = found.size
        if size == 0:
            return tool_error(f"`{params.path}` is empty.", brief="Empty file")
        try:
            header = await ctx.kaos.read_bytes(path, _SNIFF_BYTES)
        except OSError as exc:
            return read_error(path, exc)
        mime = _sniff_image(header)
        kind = "image" if mime else media_kind(path)
        if kind is None:
            return tool_error(
                f"`{params.path}` seems not readable as an image or video file. Use ReadFile for text files, "
                "or shell commands for other formats.",
                brief="File not readable",
            )
        if mime is None:
            mime = mimetypes.guess_type(path.name)[0] or ("video/mp4" if kind == "video" else "image/png")
        caps = ctx.env.model_capabilities
        if kind == "image" and "image_in" not in caps:
            return tool_error(
                "The current model does not support image input. Tell the user to use a model with image "
                "input capability.",
                brief="Unsupported media type",
            )
        if kind == "video" and "video_in" not in caps:
            return tool_error(
                "The current model does not support video input. Tell the user to use a model with video "
                "input capability.",
                brief="Unsupported media type",
            )
        if size > MAX_MEDIA_BYTES:
            return tool_error(
                f"`{params.path}` is {size} bytes, which exceeds the max {MAX_MEDIA_MEGABYTES}MB for media files.",
                brief="File too large",
            )
        try:
            data = await ctx.kaos.read_bytes(path, MAX_MEDIA_BYTES)
        except OSError as exc:
            return read_error(path, exc)
        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        part: ImageURLPart | VideoURLPart = (
            ImageURLPart(image_url=MediaURL(url=url)) if kind == "image" else VideoURLPart(video_url=MediaURL(url=url))
        )
        output: list[ContentPart] = [TextPart(text=f'<{kind} path="{path}">'), part, TextPart(text=f"</{kind}>")]
        return tool_ok(output, message=f"Loaded {kind} file `{path}` ({mime}, {size} bytes).")
