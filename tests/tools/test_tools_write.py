from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kimi_acp.tools.base import ToolContext, ToolRejectedError
from kimi_acp.tools.diff import make_diff_blocks
from kimi_acp.tools.write import WriteFile
from kimi_acp.wire.types import DiffDisplayBlock

if TYPE_CHECKING:
    from .conftest import Call, FakeApprover


async def test_new_file(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    result = await call(WriteFile(), path="new.txt", content="hello\nworld\n")
    path = work_dir / "new.txt"
    assert path.read_text() == "hello\nworld\n"
    assert not result.is_error
    assert result.message == "File successfully overwritten. Current size: 12 bytes."
    block = DiffDisplayBlock(path=str(path), old_text="", new_text="hello\nworld\n", old_start=1, new_start=1)
    assert result.display == [block]
    (req,) = approver.requests
    assert req.action == "edit file"
    assert req.description == f"Write file `{path}`"
    assert req.display == [block]


async def test_overwrite_shows_hunk(call: Call, work_dir: Path) -> None:
    path = work_dir / "f.txt"
    path.write_text("".join(f"{i}\n" for i in range(1, 21)))
    new = "".join(f"{i}\n" if i != 10 else "ten\n" for i in range(1, 21))
    result = await call(WriteFile(), path=str(path), content=new)
    assert path.read_text() == new
    assert result.display == [
        DiffDisplayBlock(
            path=str(path),
            old_text="7\n8\n9\n10\n11\n12\n13\n",
            new_text="7\n8\n9\nten\n11\n12\n13\n",
            old_start=7,
            new_start=7,
        )
    ]


async def test_append(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    path = work_dir / "log.txt"
    path.write_text("one\n")
    result = await call(WriteFile(), path="log.txt", content="two\n", mode="append")
    assert path.read_text() == "one\ntwo\n"
    assert result.message == "File successfully appended to. Current size: 8 bytes."
    assert approver.requests[0].display == [
        DiffDisplayBlock(path=str(path), old_text="one\n", new_text="one\ntwo\n", old_start=1, new_start=1)
    ]


async def test_append_creates_missing_file(call: Call, work_dir: Path) -> None:
    result = await call(WriteFile(), path="fresh.txt", content="x", mode="append")
    assert (work_dir / "fresh.txt").read_text() == "x"
    assert result.message == "File successfully appended to. Current size: 1 bytes."


async def test_missing_parent(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    result = await call(WriteFile(), path="no/such/dir/f.txt", content="x")
    assert result.is_error and "parent directory" in result.message and "does not exist" in result.message
    assert approver.requests == []


async def test_outside_workspace_action(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    target = work_dir.parent / "elsewhere.txt"
    await call(WriteFile(), path=str(target), content="x")
    assert approver.requests[0].action == "edit file outside of working directory"
    assert target.read_text() == "x"


async def test_additional_dir_counts_as_workspace(
    ctx: ToolContext, work_dir: Path, approver: FakeApprover
) -> None:
    extra = work_dir.parent / "extra"
    extra.mkdir()
    ctx.additional_dirs.append(extra)
    tool = WriteFile()
    await tool.run(tool.params.model_validate({"path": str(extra / "f.txt"), "content": "x"}), ctx)
    assert approver.requests[0].action == "edit file"


async def test_relative_escape_refused(call: Call, approver: FakeApprover) -> None:
    result = await call(WriteFile(), path="../escape.txt", content="x")
    assert result.is_error and "absolute path" in result.message
    assert approver.requests == []


async def test_rejected_write_leaves_file(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    approver.reject = True
    with pytest.raises(ToolRejectedError):
        await call(WriteFile(), path="f.txt", content="x")
    assert not (work_dir / "f.txt").exists()


async def test_binary_target_refused(call: Call, work_dir: Path) -> None:
    (work_dir / "b.bin").write_bytes(b"\x00\x01")
    result = await call(WriteFile(), path="b.bin", content="x")
    assert result.is_error and "binary" in result.message
    assert (work_dir / "b.bin").read_bytes() == b"\x00\x01"


async def test_directory_target_refused(call: Call, work_dir: Path) -> None:
    (work_dir / "d").mkdir()
    result = await call(WriteFile(), path="d", content="x")
    assert result.is_error and "is a directory" in result.message


async def test_size_comes_from_kaos(ctx: ToolContext, work_dir: Path) -> None:
    class SizedKaos(type(ctx.kaos)):  # type: ignore[misc]
        async def write_text(self, path: Path, text: str, *, append: bool = False) -> int:
            await super().write_text(path, text, append=append)
            return 4242

    ctx.kaos = SizedKaos()
    tool = WriteFile()
    result = await tool.run(tool.params.model_validate({"path": "s.txt", "content": "abc"}), ctx)
    assert result.message == "File successfully overwritten. Current size: 4242 bytes."


# --------------------------------------------------------------------------- diff blocks


def test_diff_two_hunks_with_starts() -> None:
    old = [f"l{i}" for i in range(1, 31)]
    new = list(old)
    new[2] = "changed3"
    new.insert(25, "inserted")
    blocks = make_diff_blocks("/p", "\n".join(old) + "\n", "\n".join(new) + "\n")
    assert len(blocks) == 2
    first, second = blocks
    assert (first.old_start, first.new_start) == (1, 1)
    assert first.old_text == "l1\nl2\nl3\nl4\nl5\nl6\n"
    assert first.new_text == "l1\nl2\nchanged3\nl4\nl5\nl6\n"
    assert (second.old_start, second.new_start) == (23, 23)
    assert second.old_text == "l23\nl24\nl25\nl26\nl27\nl28\n"
    assert second.new_text == "l23\nl24\nl25\ninserted\nl26\nl27\nl28\n"
    assert all(b.path == "/p" and not b.is_summary for b in blocks)


def test_diff_identical_and_empty_new_file() -> None:
    assert make_diff_blocks("/p", "same\n", "same\n") == []
    (block,) = make_diff_blocks("/p", "", "")
    assert block.old_text == "" and block.new_text == ""


@pytest.mark.parametrize(("old_n", "new_n"), [(10_001, 3), (0, 10_001), (5, 20_000)])
def test_diff_summary_over_10k_lines(old_n: int, new_n: int) -> None:
    (block,) = make_diff_blocks("/p", "x\n" * old_n, "y\n" * new_n)
    expected: dict[str, Any] = {
        "old_text": f"({old_n} lines)",
        "new_text": f"({new_n} lines)",
        "is_summary": True,
    }
    assert block.model_dump(include=set(expected)) == expected


async def test_summary_block_in_write(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    result = await call(WriteFile(), path="huge.txt", content="z\n" * 10_001)
    (block,) = approver.requests[0].display
    assert block.is_summary and block.new_text == "(10001 lines)" and block.old_text == "(0 lines)"
    assert result.display == [block]
