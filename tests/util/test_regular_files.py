"""`util/regular_file.open_regular`: only a regular file is read; a FIFO, a device or a socket is an
error at once, never a read that waits (issue #30: /import of a FIFO froze the event loop)."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from kimi_acp.util.regular_file import open_regular, special_kind


def read_regular_file(path: Path, limit: int) -> bytes:
    with open_regular(path) as file:
        return file.read(limit)


def test_a_regular_file_is_read_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes(b"0123456789")
    assert read_regular_file(path, 4) == b"0123"
    assert read_regular_file(path, 100) == b"0123456789"


def test_a_fifo_with_no_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(OSError, match=r"a FIFO \(named pipe\), not a regular file"):
        read_regular_file(fifo, 100)
    assert time.monotonic() - started < 1


def test_devices_sockets_and_directories_are_named(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="a character device"):
        read_regular_file(Path("/dev/null"), 10)
    with pytest.raises(OSError):
        read_regular_file(tmp_path, 10)  # a directory
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "s.sock"))
        assert special_kind(os.stat(tmp_path / "s.sock").st_mode) == "a socket"
    finally:
        server.close()
    assert special_kind(os.stat(tmp_path).st_mode) == "a directory"
    assert special_kind(os.stat(Path("/dev/null")).st_mode) == "a character device"
    (tmp_path / "f").write_text("x")
    assert special_kind(os.stat(tmp_path / "f").st_mode) is None
