"""The stdio transport's line reader (kimi_acp/mcp/stdio.py): whole lines out of any chunking, and a
line over the limit refused as soon as it passes it, never held whole. Through a real server and
`kimi --wire`: tests/mcp/test_e2e_wire.py (the 64 MiB answer)."""

from __future__ import annotations

import pytest

from kimi_acp.mcp.stdio import LineReader, MessageTooLarge


def test_lines_come_whole_whatever_the_chunks() -> None:
    reader = LineReader(limit=10)
    data = b'{"a":1}\n\n{"b":22}\r\n{"c":3}\n'
    lines = [line for i in range(len(data)) for line in reader.feed(data[i : i + 1])]
    assert lines == [b'{"a":1}', b'{"b":22}\r', b'{"c":3}']


def test_a_line_of_the_limit_passes_one_byte_more_fails_before_its_end_arrives() -> None:
    assert LineReader(limit=8).feed(b"12345678\n") == [b"12345678"]
    reader = LineReader(limit=8)
    assert reader.feed(b"1234") == [] and reader.feed(b"5678") == []
    with pytest.raises(MessageTooLarge, match="more than 8 bytes"):
        reader.feed(b"9")  # no newline yet: refused as it grows
    with pytest.raises(MessageTooLarge):
        LineReader(limit=8).feed(b"123456789\n")
