"""`LocalKaos.read_lines` streams a window of lines from disk and agrees with the in-memory rules."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import kimi_acp.kaos.local as local
from kimi_acp.kaos.base import BinaryFileError, TextWindow, window_of_text
from kimi_acp.kaos.local import LocalKaos

LIMITS = {"max_line_chars": 2000, "max_chars": 100 * 1024}


@pytest.fixture
def kaos() -> LocalKaos:
    return LocalKaos()


async def read(kaos: LocalKaos, path: Path, offset: int = 1, limit: int = 1000, **limits: int) -> TextWindow:
    return await kaos.read_lines(path, offset, limit, **{**LIMITS, **limits})


async def test_window_tail_and_total(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 121)))
    assert await read(kaos, path, 101, 5) == TextWindow([f"line {i}" for i in range(101, 106)], 101, 120)
    assert await read(kaos, path, -3) == TextWindow(["line 118", "line 119", "line 120"], 118, 120)
    assert await read(kaos, path, -1000, 2) == TextWindow(["line 1", "line 2"], 1, 120)
    assert await read(kaos, path, 121) == TextWindow([], 121, 120)
    assert await read(kaos, path, 500) == TextWindow([], 500, 120)


async def test_line_endings_and_empty(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"a\r\nb\r\n\r\nc")
    assert await read(kaos, path) == TextWindow(["a", "b", "", "c"], 1, 4)
    path.write_bytes(b"")
    assert await read(kaos, path) == TextWindow([], 1, 0)
    assert await read(kaos, path, -5) == TextWindow([], 1, 0)
    path.write_bytes(b"\n")
    assert await read(kaos, path) == TextWindow([""], 1, 1)


async def test_long_lines_are_cut_by_characters(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "wide.txt"
    path.write_text("€" * 5000 + "\n" + "😀" * 10 + "\r\nend")  # 3- and 4-byte characters
    window = await read(kaos, path, max_line_chars=7)
    assert window == TextWindow(["€" * 7, "😀" * 7, "end"], 1, 3, frozenset({0, 1}))
    exact = tmp_path / "exact.txt"
    exact.write_text("😀" * 7 + "\r\n")  # exactly the limit, with a CR: not cut
    assert await read(kaos, exact, max_line_chars=7) == TextWindow(["😀" * 7], 1, 1)


async def test_window_stops_after_the_char_budget(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("abcd\n" * 10)
    window = await read(kaos, path, max_chars=9)
    assert window.lines == ["abcd"] * 3 and window.total == 10  # 12 chars: the third line passes 9


async def test_binary_and_invalid_utf8(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "nul.bin"
    path.write_bytes(b"text\x00more")
    with pytest.raises(BinaryFileError):
        await read(kaos, path)
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"ok\n" + "caf\xe9\n".encode("latin-1"))
    with pytest.raises(BinaryFileError):
        await read(kaos, path)
    # Only the lines shown are decoded: a bad byte further on does not hide the good ones.
    assert await read(kaos, path, 1, 1) == TextWindow(["ok"], 1, 2)
    long_bad = tmp_path / "long.txt"
    long_bad.write_bytes(b"x" * 100 + b"\xff\n")  # past the part of the line that is shown
    assert await read(kaos, long_bad, max_line_chars=5) == TextWindow(["xxxxx"], 1, 1, frozenset({0}))


async def test_errors(kaos: LocalKaos, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await read(kaos, tmp_path / "missing")
    with pytest.raises(IsADirectoryError):
        await read(kaos, tmp_path)


async def test_big_file_goes_through_a_thread(kaos: LocalKaos, tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"{i}\n" for i in range(1, 300_001)))  # ~2 MB
    assert await read(kaos, path, 250_000, 2) == TextWindow(["250000", "250001"], 250_000, 300_000)
    assert await read(kaos, path, -1) == TextWindow(["300000"], 300_000, 300_000)


PIECES = ["a", "bc", "é", "€", "😀", "\n", "\n", "\r\n", "\r", "\n\n", "x" * 9]


@pytest.mark.parametrize("seed", range(40))
async def test_agrees_with_the_in_memory_window(
    kaos: LocalKaos, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Tiny count chunks put line ends on every chunk boundary; the result must not depend on them."""
    rng = random.Random(seed)
    monkeypatch.setattr(local, "_COUNT_CHUNK", rng.choice([1, 2, 3, 5, 8, 64]))
    text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 80)))
    path = tmp_path / "f.txt"
    path.write_text(text, newline="")
    for _ in range(10):
        offset = rng.choice([1, 2, 3, rng.randrange(1, 40), -rng.randrange(1, 40)])
        limits = {"max_line_chars": rng.choice([1, 3, 10]), "max_chars": rng.choice([1, 5, 1000])}
        limit = rng.randrange(1, 12)
        expected = window_of_text(text, offset, limit, **limits)
        assert await kaos.read_lines(path, offset, limit, **limits) == expected, (text, offset, limit, limits)
