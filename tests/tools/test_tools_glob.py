from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kimi_acp.tools import glob as glob_module
from kimi_acp.tools.base import ToolRejectedError
from kimi_acp.tools.glob import Glob
from kimi_acp.wire.actions import READ_OUTSIDE_ACTION

if TYPE_CHECKING:
    from .conftest import Call, FakeApprover


@pytest.fixture
def tree(work_dir: Path) -> Path:
    for rel in [
        "src/a.py",
        "src/b.py",
        "src/pkg/c.py",
        "src/pkg/data.json",
        "README.md",
        ".hidden.py",
        ".git/config.py",
    ]:
        path = work_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return work_dir


async def test_basic(call: Call, tree: Path) -> None:
    result = await call(Glob(), pattern="src/**/*.py")
    assert not result.is_error
    assert result.output == "src/a.py\nsrc/b.py\nsrc/pkg/c.py"
    assert result.message == "Found 3 matches for pattern `src/**/*.py`."


async def test_top_level_includes_hidden_skips_git(call: Call, tree: Path) -> None:
    result = await call(Glob(), pattern="*")
    assert result.output == ".hidden.py\nREADME.md\nsrc"
    result = await call(Glob(), pattern="*", include_dirs=False)
    assert result.output == ".hidden.py\nREADME.md"
    result = await call(Glob(), pattern=".git/*")
    assert result.output == ""


async def test_directory_param(call: Call, tree: Path) -> None:
    result = await call(Glob(), pattern="*", directory=str(tree / "src"), include_dirs=False)
    assert result.output == "a.py\nb.py"


async def test_double_star_rejected_with_listing(call: Call, tree: Path) -> None:
    result = await call(Glob(), pattern="**/*.py")
    assert result.is_error
    assert "starts with `**`" in result.message
    assert result.message.endswith(".hidden.py\nREADME.md\nsrc/")


async def test_outside_workspace_asks_per_directory(
    call: Call, tree: Path, approver: FakeApprover, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tree / "tmp"))  # the test's dirs are in the real one
    approver.reject = True
    with pytest.raises(ToolRejectedError):
        await call(Glob(), pattern="*", directory=str(tree.parent))
    (asked,) = approver.requests
    assert asked.action == READ_OUTSIDE_ACTION and asked.scope.values == (str(tree.parent),)
    approver.reject = False
    result = await call(Glob(), pattern="*", directory=str(tree.parent))
    assert not result.is_error and result.output == "project"


async def test_missing_directory_and_no_matches(call: Call, tree: Path) -> None:
    result = await call(Glob(), pattern="*", directory=str(tree / "nope"))
    assert result.is_error and "does not exist" in result.message
    result = await call(Glob(), pattern="*.rs")
    assert not result.is_error and result.output == "" and "No matches" in result.message
    result = await call(Glob(), pattern="  ")
    assert result.is_error


async def test_cap(call: Call, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glob_module, "MAX_MATCHES", 5)
    for i in range(8):
        (work_dir / f"f{i}.txt").write_text("")
    result = await call(Glob(), pattern="*.txt")
    assert isinstance(result.output, str)
    assert len(result.output.splitlines()) == 5
    assert "Only the first 5 matches" in result.message


async def test_a_link_to_the_share_dir_lists_nothing_of_it(call: Call, work_dir: Path) -> None:
    """`vendor -> ~/.kimi` in a cloned repository: ReadFile and Grep refuse the share dir's files,
    and Glob does not list them either (their names are the user's sessions)."""
    share = Path(os.environ["KIMI_SHARE_DIR"])
    for rel in ("config.toml", "logs/kimi.log", "sessions/abc123/context.jsonl", "skills/mine/SKILL.md"):
        (share / rel).parent.mkdir(parents=True, exist_ok=True)
        (share / rel).write_text("x")
    (work_dir / "vendor").symlink_to(share, target_is_directory=True)
    (work_dir / "src").mkdir()
    (work_dir / "src" / "app.py").write_text("x")
    result = await call(Glob(), pattern="vendor/**/*")
    listed = result.output.splitlines()
    assert all(name.startswith("vendor/skills") for name in listed), listed  # skills are read freely
    for secret in ("config.toml", "logs", "sessions", "abc123", "context.jsonl"):
        assert secret not in result.output
    assert "6 match(es) holding credentials or the agent's own files ($KIMI_SHARE_DIR) were left out" in (
        result.message
    )
    result = await call(Glob(), pattern="*")
    assert result.output == "src" and "1 match(es) holding credentials" in result.message


async def test_a_link_out_of_the_workspace_is_left_out_and_asks_when_searched(
    call: Call, work_dir: Path, approver: FakeApprover, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))  # the test's dirs are in the real one
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "deep" / "notes.txt").write_text("x")
    (work_dir / "ext").symlink_to(elsewhere, target_is_directory=True)
    (work_dir / "inner").symlink_to(work_dir / "src", target_is_directory=True)  # stays inside: listed
    (work_dir / "src").mkdir()
    (work_dir / "src" / "a.py").write_text("x")
    result = await call(Glob(), pattern="*/**/*")
    assert result.output == "inner/a.py\nsrc/a.py" and approver.requests == []
    assert result.message.endswith(
        "2 match(es) leading out of the workspace through a symbolic link were left out; ReadFile, or Glob "
        "with the linked directory as `directory`, asks the user first."
    )
    result = await call(Glob(), pattern="*.txt", directory=str(work_dir / "ext" / "deep"))
    (asked,) = approver.requests  # the user approved listing there (the fake approves): listed
    assert asked.action == READ_OUTSIDE_ACTION and result.output == "notes.txt"
