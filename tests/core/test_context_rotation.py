"""Rotation of `context.jsonl` (/clear, compaction) in steps that each leave a whole history:
the new file first, then the renames; `Context.load` finishes a rotation a crash interrupted."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kimi_acp.core.context import Context, rotation_path
from kimi_acp.llm.types import Message


def old_session(path: Path) -> Context:
    ctx = Context(path)
    ctx.start("old prompt")
    ctx.append([Message(role="user", content="old question"), Message(role="assistant", content="old answer")])
    ctx.close()
    return ctx


def new_file_text() -> str:
    lines = [{"role": "_system_prompt", "content": "new prompt"}, {"role": "user", "content": "the summary"}]
    return "".join(json.dumps(line) + "\n" for line in lines)


def texts(ctx: Context) -> list[str]:
    return [m.text() for m in ctx.history]


def test_a_complete_new_file_whose_old_one_was_moved_aside_is_moved_in(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    old_session(path)
    path.rename(tmp_path / "context_1.jsonl")  # the crash came between the two renames
    rotation_path(path).write_text(new_file_text())
    ctx = Context.load(path)
    assert ctx.system_prompt == "new prompt" and texts(ctx) == ["the summary"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.jsonl", "context_1.jsonl"]
    ctx.append([Message(role="user", content="next")])
    ctx.close()
    assert texts(Context.load(path)) == ["the summary", "next"]


def test_a_new_file_left_beside_the_old_one_is_removed_and_the_old_history_kept(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    old_session(path)
    rotation_path(path).write_text(new_file_text())  # the crash came before anything was renamed
    ctx = Context.load(path)
    assert ctx.system_prompt == "old prompt" and texts(ctx) == ["old question", "old answer"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.jsonl"]


def test_when_moving_the_new_file_in_fails_the_old_one_comes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "context.jsonl"
    ctx = Context.load(old_session(path).path)
    real_replace = os.replace

    def failing_replace(src: object, dst: object) -> None:
        if Path(str(src)) == rotation_path(path):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)  # type: ignore[arg-type]

    with monkeypatch.context() as patched, pytest.raises(OSError):
        patched.setattr(os, "replace", failing_replace)
        ctx.rotate("new prompt", [Message(role="user", content="the summary")], 7)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.jsonl"]
    assert ctx.system_prompt == "old prompt" and texts(ctx) == ["old question", "old answer"]
    ctx.append([Message(role="user", content="goes on")])
    ctx.close()
    assert texts(Context.load(path)) == ["old question", "old answer", "goes on"]


def test_a_rotation_writes_the_new_history_whole_and_private(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx = Context.load(old_session(path).path)
    ctx.rotate("new prompt", [Message(role="user", content="the summary")], 7)
    assert ctx.system_prompt == "new prompt" and texts(ctx) == ["the summary"] and ctx.token_count == 7
    assert [json.loads(line)["role"] for line in path.read_text().splitlines()] == ["_system_prompt", "user", "_usage"]
    assert texts(Context.load(tmp_path / "context_1.jsonl")) == ["old question", "old answer"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not rotation_path(path).exists()
    assert not ctx.changed_elsewhere()  # its own rotation is not news to it
