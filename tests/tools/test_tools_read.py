from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pydantic
import pytest

from kimi_acp.permissions.sensitive import sensitive_reason
from kimi_acp.tools.base import ToolRejectedError
from kimi_acp.tools.read import ReadFile

if TYPE_CHECKING:
    from .conftest import Call, FakeApprover


def numbered(start: int, lines: list[str]) -> str:
    return "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(lines, start))


@pytest.fixture
def hundred(work_dir: Path) -> Path:
    path = work_dir / "hundred.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 121)))
    return path


async def test_reads_whole_small_file(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    (work_dir / "a.txt").write_text("alpha\nbeta\n")
    result = await call(ReadFile(), path="a.txt")
    assert not result.is_error
    assert result.output == "     1\talpha\n     2\tbeta\n"
    assert result.message == "Read 2 lines (1-2) of 2. End of file reached."
    assert approver.requests == []


async def test_offset_and_n_lines(call: Call, hundred: Path) -> None:
    result = await call(ReadFile(), path=str(hundred), line_offset=1, n_lines=20)
    assert result.output == numbered(1, [f"line {i}" for i in range(1, 21)])
    assert result.message == "Read 20 lines (1-20) of 120. Use line_offset=21 to continue."
    result = await call(ReadFile(), path=str(hundred), line_offset=101, n_lines=50)
    assert result.output == numbered(101, [f"line {i}" for i in range(101, 121)])
    assert result.message == "Read 20 lines (101-120) of 120. End of file reached."


async def test_negative_offset_reads_tail(call: Call, hundred: Path) -> None:
    result = await call(ReadFile(), path=str(hundred), line_offset=-3)
    assert result.output == numbered(118, ["line 118", "line 119", "line 120"])
    assert "End of file reached." in result.message
    result = await call(ReadFile(), path=str(hundred), line_offset=-1000, n_lines=2)
    assert result.output == numbered(1, ["line 1", "line 2"])


async def test_offset_past_end(call: Call, hundred: Path) -> None:
    result = await call(ReadFile(), path=str(hundred), line_offset=121)
    assert result.is_error and "120 lines" in result.message


@pytest.mark.parametrize(
    "args", [{"line_offset": 0}, {"line_offset": -1001}, {"n_lines": 0}, {"n_lines": 1001}, {"extra": 1}]
)
def test_param_validation(args: dict[str, int]) -> None:
    with pytest.raises(pydantic.ValidationError):
        ReadFile.params.model_validate({"path": "x", **args})


async def test_default_reads_at_most_1000_lines(call: Call, work_dir: Path) -> None:
    (work_dir / "long.txt").write_text("x\n" * 1500)
    result = await call(ReadFile(), path="long.txt")
    assert result.output.count("\n") == 1000
    assert result.message == "Read 1000 lines (1-1000) of 1500. Use line_offset=1001 to continue."


async def test_long_lines_are_cut(call: Call, work_dir: Path) -> None:
    (work_dir / "wide.txt").write_text("a" * 2500 + "\nshort\n")
    result = await call(ReadFile(), path="wide.txt")
    assert result.output == f"     1\t{'a' * 2000}[...truncated]\n     2\tshort\n"
    assert "1 line(s) longer than 2000 characters were truncated" in result.message


async def test_output_capped_at_100_kib(call: Call, work_dir: Path) -> None:
    (work_dir / "fat.txt").write_text(("b" * 1500 + "\n") * 200)
    result = await call(ReadFile(), path="fat.txt")
    assert isinstance(result.output, str)
    assert len(result.output.encode()) <= 100 * 1024
    shown = result.output.count("\n")
    assert 60 < shown < 200
    assert result.message == (
        f"Read {shown} lines (1-{shown}) of 200. Output was truncated at 100 KiB. "
        f"Use line_offset={shown + 1} to continue."
    )


async def test_crlf_and_no_trailing_newline(call: Call, work_dir: Path) -> None:
    (work_dir / "crlf.txt").write_bytes(b"a\r\nb\r\nc")
    result = await call(ReadFile(), path="crlf.txt")
    assert result.output == "     1\ta\n     2\tb\n     3\tc\n"


async def test_empty_file(call: Call, work_dir: Path) -> None:
    (work_dir / "empty.txt").write_text("")
    result = await call(ReadFile(), path="empty.txt")
    assert not result.is_error and result.output == "" and result.message == "The file is empty."


async def test_missing_dir_binary(call: Call, work_dir: Path) -> None:
    result = await call(ReadFile(), path="nope.txt")
    assert result.is_error and result.message == f"`{work_dir / 'nope.txt'}` does not exist."
    (work_dir / "sub").mkdir()
    result = await call(ReadFile(), path="sub")
    assert result.is_error and "is a directory" in result.message
    (work_dir / "blob.dat").write_bytes(b"\x7fELF\x00\x01\x02")
    result = await call(ReadFile(), path="blob.dat")
    assert result.is_error and "is a binary file" in result.message


@pytest.mark.parametrize(
    ("name", "kind"), [("photo.PNG", "image"), ("x.jpeg", "image"), ("clip.mp4", "video")]
)
async def test_media_refused(call: Call, work_dir: Path, name: str, kind: str) -> None:
    (work_dir / name).write_bytes(b"\x89PNG")
    result = await call(ReadFile(), path=name)
    assert result.is_error and f"{kind} file" in result.message and "cannot be read as text" in result.message


@pytest.mark.parametrize(
    "rel",
    [
        ".env",
        ".env.local",
        "config/id_rsa",
        "certs/server.pem",
        "tls.key",
        ".netrc",
        ".npmrc",
        ".aws/credentials",
        ".kimi/credentials/kimi-code.json",
    ],
)
async def test_sensitive_asks_for_that_file_with_a_warning(call: Call, work_dir: Path, approver: FakeApprover, rel: str) -> None:
    path = work_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("SECRET=1\n")
    approver.reject = True
    with pytest.raises(ToolRejectedError):
        await call(ReadFile(), path=rel)
    (asked,) = approver.requests
    assert asked.warning and "holds credentials" in asked.warning and asked.scope is None
    approver.reject = False
    result = await call(ReadFile(), path=rel)
    assert not result.is_error and "SECRET" in str(result.output)  # the user approved this one file


@pytest.mark.parametrize(
    "name", [".env.example", ".env.sample", ".env.template", "id_rsa.pub", "environment.py"]
)
def test_not_sensitive(name: str) -> None:
    assert sensitive_reason(Path("/x") / name) is None


async def test_relative_escape_refused_absolute_allowed(
    call: Call, work_dir: Path, approver: FakeApprover, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(work_dir / "tmp"))  # the test's dirs are in the real one
    outside = work_dir.parent / "outside.txt"
    outside.write_text("far away\n")
    result = await call(ReadFile(), path="../outside.txt")
    assert result.is_error and "absolute path" in result.message
    result = await call(ReadFile(), path=str(outside))
    assert not result.is_error and result.output == "     1\tfar away\n"
    (asked,) = approver.requests  # outside the workspace: asked, per directory
    assert asked.scope.values == (str(outside.parent),)


async def test_relative_path_with_dotdot_staying_inside(call: Call, work_dir: Path) -> None:
    (work_dir / "d").mkdir()
    (work_dir / "d" / "f.txt").write_text("ok\n")
    result = await call(ReadFile(), path="d/../d/f.txt")
    assert result.output == "     1\tok\n"


async def test_huge_line_is_cut_without_reading_it_all(call: Call, work_dir: Path) -> None:
    (work_dir / "one.txt").write_text("€" * 3_000_000 + "\nafter\n")  # 9 MB on one line
    result = await call(ReadFile(), path="one.txt")
    assert result.output == f"     1\t{'€' * 2000}[...truncated]\n     2\tafter\n"
    assert result.message == (
        "Read 2 lines (1-2) of 2. 1 line(s) longer than 2000 characters were truncated. End of file reached."
    )


async def test_deep_offset_and_tail_of_a_big_file(call: Call, work_dir: Path) -> None:
    (work_dir / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 400_001)))
    result = await call(ReadFile(), path="big.txt", line_offset=399_999, n_lines=5)
    assert result.output == numbered(399_999, ["row 399999", "row 400000"])
    assert result.message == "Read 2 lines (399999-400000) of 400000. End of file reached."
    result = await call(ReadFile(), path="big.txt", line_offset=-2)
    assert result.output == numbered(399_999, ["row 399999", "row 400000"])
    result = await call(ReadFile(), path="big.txt", line_offset=400_001)
    assert result.is_error and result.message == (
        "line_offset 400001 is past the end of the file, which has 400000 lines."
    )


async def test_not_utf8_only_where_read(call: Call, work_dir: Path) -> None:
    (work_dir / "mixed.txt").write_bytes(b"fine\n" + b"caf\xe9\n")
    result = await call(ReadFile(), path="mixed.txt", n_lines=1)
    assert result.output == "     1\tfine\n"
    assert result.message == "Read 1 line (1-1) of 2. Use line_offset=2 to continue."
    result = await call(ReadFile(), path="mixed.txt", line_offset=2)
    assert result.is_error and "is a binary file (or not UTF-8 text)" in result.message


async def test_truncated_count_is_of_shown_lines(call: Call, work_dir: Path) -> None:
    """Lines cut after the byte cap are not shown, so they are not counted as truncated either."""
    (work_dir / "wide.txt").write_text(("w" * 3000 + "\n") * 100)
    result = await call(ReadFile(), path="wide.txt")
    shown = result.output.count("\n")
    assert 40 < shown < 100
    assert result.message == (
        f"Read {shown} lines (1-{shown}) of 100. {shown} line(s) longer than 2000 characters were truncated. "
        f"Output was truncated at 100 KiB. Use line_offset={shown + 1} to continue."
    )


async def test_a_link_named_like_a_note_to_a_credentials_file_asks(call: Call, work_dir: Path, approver: FakeApprover) -> None:
    secret = work_dir.parent / "elsewhere" / ".env"
    secret.parent.mkdir()
    secret.write_text("TOKEN=xyz\n")
    (work_dir / "notes.txt").symlink_to(secret)
    refused = await call(ReadFile(), path="notes.txt")  # relative, leading out: refused before anything
    assert refused.is_error and "symbolic link" in refused.message and "TOKEN" not in str(refused.output)
    approver.reject = True
    with pytest.raises(ToolRejectedError):
        await call(ReadFile(), path=str(work_dir / "notes.txt"))
    (asked,) = approver.requests
    assert asked.warning and "environment file" in asked.warning
