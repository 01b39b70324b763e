"""`AcpKaos.read_lines`: through the editor, a big file a window at a time (`line`/`limit`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.frontends.acp.kaos import WINDOWED_READ_BYTES, AcpKaos, ClientCapabilities
from kimi_acp.kaos.base import BinaryFileError, TextWindow
from kimi_acp.tools.base import ToolContext
from kimi_acp.tools.read import ReadFile

LIMITS = {"max_line_chars": 2000, "max_chars": 100 * 1024}
ROWS = WINDOWED_READ_BYTES // 10 + 1000  # ten-byte lines: a file just over the windowing size


@dataclass
class Editor:
    """The client side of `fs/read_text_file`: buffers over the disk, `line`/`limit` as the spec says."""

    buffers: dict[str, str] = field(default_factory=dict)
    honours_window: bool = True
    refuses_past_end: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None
    ) -> Any:
        self.calls.append({"path": path, "line": line, "limit": limit})
        content = self.buffers[path] if path in self.buffers else Path(path).read_text()
        if self.honours_window and (line or limit):
            lines = content.splitlines(keepends=True)
            start = (line or 1) - 1
            if self.refuses_past_end and start >= len(lines):
                raise RuntimeError("line out of range")
            content = "".join(lines[start : start + limit if limit else None])
        return type("Response", (), {"content": content})()


def acp_kaos(editor: Editor) -> AcpKaos:
    return AcpKaos(editor, "s1", ClientCapabilities(read_text_file=True, write_text_file=True))


@pytest.fixture
def big(tmp_path: Path) -> Path:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"{i:09d}\n" for i in range(1, ROWS + 1)))
    assert path.stat().st_size > WINDOWED_READ_BYTES
    return path


async def test_big_file_is_asked_for_one_window(big: Path) -> None:
    editor = Editor()
    window = await acp_kaos(editor).read_lines(big, 50, 3, **LIMITS)
    assert window == TextWindow(["000000050", "000000051", "000000052"], 50, None)
    assert editor.calls == [{"path": str(big), "line": 50, "limit": 4}]  # one more: does the file go on?


async def test_window_reaching_the_end_knows_the_total(big: Path) -> None:
    editor = Editor()
    window = await acp_kaos(editor).read_lines(big, ROWS - 1, 10, **LIMITS)
    assert window == TextWindow([f"{ROWS - 1:09d}", f"{ROWS:09d}"], ROWS - 1, ROWS)
    assert len(editor.calls) == 1


@pytest.mark.parametrize("refuses", [False, True])
async def test_past_the_end_reads_it_whole_for_the_count(big: Path, refuses: bool) -> None:
    editor = Editor(refuses_past_end=refuses)
    assert await acp_kaos(editor).read_lines(big, ROWS + 5, 10, **LIMITS) == TextWindow([], ROWS + 5, ROWS)
    assert [c["line"] for c in editor.calls] == [ROWS + 5, None]


async def test_editor_ignoring_the_window_is_noticed(big: Path) -> None:
    editor = Editor(honours_window=False)
    window = await acp_kaos(editor).read_lines(big, 50, 2, **LIMITS)
    assert window == TextWindow(["000000050", "000000051"], 50, ROWS)


async def test_small_files_buffers_and_tails_are_read_whole(tmp_path: Path, big: Path) -> None:
    small = tmp_path / "small.txt"
    small.write_text("disk\n")
    unsaved = tmp_path / "unsaved.txt"  # only in the editor: not on disk, so the editor is not asked
    editor = Editor(buffers={str(small): "buffer 1\nbuffer 2\n", str(unsaved): "new\n"})
    kaos = acp_kaos(editor)
    assert await kaos.read_lines(small, 2, 10, **LIMITS) == TextWindow(["buffer 2"], 2, 2)
    with pytest.raises(FileNotFoundError):
        await kaos.read_lines(unsaved, 1, 10, **LIMITS)
    with pytest.raises(FileNotFoundError):
        await kaos.read_text(unsaved)
    assert await kaos.read_lines(big, -1, 10, **LIMITS) == TextWindow([f"{ROWS:09d}"], ROWS, ROWS)
    assert [(c["line"], c["limit"]) for c in editor.calls] == [(None, None)] * 2


async def test_binary_and_missing(tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"\x00\x01")
    kaos = acp_kaos(Editor())
    with pytest.raises(BinaryFileError):
        await kaos.read_lines(tmp_path / "b.bin", 1, 10, **LIMITS)
    with pytest.raises(FileNotFoundError):
        await kaos.read_lines(tmp_path / "missing.txt", 1, 10, **LIMITS)
    with pytest.raises(IsADirectoryError):
        await kaos.read_lines(tmp_path, 1, 10, **LIMITS)


async def test_read_file_message_without_a_known_total(ctx: ToolContext, big: Path) -> None:
    ctx.kaos = acp_kaos(Editor())
    tool = ReadFile()
    params = tool.params.model_validate({"path": str(big), "line_offset": 7, "n_lines": 2})
    result = await tool.run(params, ctx)
    assert result.output == "     7\t000000007\n     8\t000000008\n"
    assert result.message == "Read 2 lines (7-8). Use line_offset=9 to continue."
