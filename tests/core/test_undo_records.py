"""The undo records themselves (core/undo.py, undo_journal.py, undo_shadow.py), without a model:
pruning to the last N turns, a turn a crash cut short, what a nested repository and modes become."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kimi_acp.config import UndoSettings
from kimi_acp.core.undo import PRUNE_SLACK, Checkpoints, build_plan, decide

pytestmark = pytest.mark.requires_tool("git")


def checkpoints(tmp_path: Path, work: Path, **settings: int) -> Checkpoints:
    (tmp_path / "session").mkdir(exist_ok=True)  # the session folder exists; undo makes what is below it
    return Checkpoints(tmp_path / "session" / "undo", UndoSettings(**settings), lambda: [work])


async def a_turn(cp: Checkpoints, context: Path, work: Path, n: int) -> None:
    await cp.begin_turn(f"turn {n}", context)
    edited = work / "edited.txt"
    await cp.before_edit(edited)
    edited.write_text(f"edit {n}\n")
    await cp.before_command()
    (work / "shell.txt").write_text(f"shell {n}\n")
    await cp.end_turn()


def refs(cp: Checkpoints, work: Path) -> list[str]:
    out = cp.store(os.path.realpath(work)).run("for-each-ref", "--format=%(refname)", "refs/kimi/")
    return sorted(out.decode().split())


async def test_only_the_last_keep_turns_are_kept_and_their_snapshots_pruned(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    context = tmp_path / "context.jsonl"
    context.write_text("{}\n")
    cp = checkpoints(tmp_path, work, keep_turns=2)
    for n in range(1, 3 + PRUNE_SLACK + 1):  # one past the slack: the first prune
        await a_turn(cp, context, work, n)
    turns = cp.journal.turns()
    assert sorted(turns) == [7, 8]
    assert [t.seq for t in cp.undoable()] == [8, 7]
    assert refs(cp, work) == ["refs/kimi/index", "refs/kimi/t7", "refs/kimi/t8"]
    kept = {c.before.sha for t in turns.values() for c in t.changes or () if c.before.source == "blob"}
    assert sorted(os.listdir(cp.journal.blobs)) == sorted(kept)  # the old contents of pruned turns are gone
    # The pruned snapshots' objects are gone too: turn 1's "shell 1" is nowhere in the store.
    store = cp.store(os.path.realpath(work))
    listed = store.run("cat-file", "--batch-all-objects", "--batch-check").decode()
    blobs = [line.split()[0] for line in listed.splitlines() if line.split()[1] == "blob"]
    contents = store.read_blobs(blobs).values()
    assert b"shell 1\n" not in contents and b"shell 6\n" in contents


async def test_a_turn_cut_short_is_ended_by_the_next_process(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("before\n")
    context = tmp_path / "context.jsonl"
    context.write_text("{}\n")
    crashed = checkpoints(tmp_path, work)
    await crashed.begin_turn("cut short", context)
    await crashed.before_command()
    (work / "a.txt").write_text("after\n")  # ... and the process dies: no end_turn
    assert crashed.undoable() == []

    later = checkpoints(tmp_path, work)
    await later.begin_turn("next", context)
    await later.end_turn()
    first = later.journal.turns()[1]
    assert first.ended and [c.path for c in first.changes or ()] == ["a.txt"]
    assert [t.seq for t in later.undoable()] == [2, 1]


async def test_a_nested_repository_is_left_and_modes_come_from_the_record(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "vendor" / "lib").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work / "vendor" / "lib")], check=True)
    (work / "vendor" / "lib" / "code.c").write_text("int x;\n")
    (work / "secret.env").write_text("TOKEN=1\n")
    os.chmod(work / "secret.env", 0o600)
    context = tmp_path / "context.jsonl"
    context.write_text("{}\n")
    cp = checkpoints(tmp_path, work)
    await cp.begin_turn("go", context)
    await cp.before_command()
    (work / "secret.env").unlink()
    (work / "vendor" / "lib" / "code.c").write_text("int y;\n")
    (work / "vendor" / "lib" / "new.c").write_text("new\n")
    await cp.end_turn()
    (record,) = cp.undoable()
    changes = {c.path: c for c in record.changes or ()}
    assert changes["secret.env"].before.mode == 0o600  # git keeps 644; the record keeps the real bits
    plan = build_plan([record], cp.workspace_roots(), force=False)
    decisions = {d.op.path: d for d in (decide(op, False) for op in plan.ops)}
    assert decisions["secret.env"].action == "restore"
    assert all(not path.startswith("vendor/lib/") for path in decisions)  # its files were never snapshotted
    said = {u.path: u.why for u in record.uncovered}
    assert said["vendor/lib/code.c"] == said["vendor/lib/new.c"] == "inside a git repository of its own: not in the snapshot"


async def test_a_stale_index_lock_left_by_a_killed_process_is_removed(tmp_path: Path) -> None:
    from kimi_acp.core.undo_shadow import ShadowError

    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    context = tmp_path / "context.jsonl"
    context.write_text("{}\n")
    cp = checkpoints(tmp_path, work)
    store = cp.store(os.path.realpath(work))
    store.ensure()
    lock = store.directory / "index.lock"
    lock.write_text("")
    os.utime(lock, (0, 0))  # long ago: its git is gone
    await cp.begin_turn("go", context)
    await cp.before_command()
    (work / "a.txt").write_text("b\n")
    await cp.end_turn()
    (record,) = cp.undoable()
    assert [c.path for c in record.changes or ()] == ["a.txt"] and not lock.exists()
    lock.write_text("")  # a fresh one (another process mid-snapshot) is left alone: this snapshot fails
    with pytest.raises(ShadowError, match=r"index\.lock|remove the file"):
        store.snapshot()
    assert lock.exists()


async def test_a_deleted_session_is_never_brought_back_by_undo(tmp_path: Path) -> None:
    """`session/delete` while a turn (or the store's read-ahead) still runs: undo's records must not
    re-create the session folder (it once came back with undo/shadow/…/info/attributes in it)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    session = tmp_path / "session"
    cp = checkpoints(tmp_path, work)
    store = cp.store(os.path.realpath(work))
    session.rmdir()  # deleted before anything was written
    with pytest.raises(FileNotFoundError):
        store.ensure()
    with pytest.raises(FileNotFoundError):
        cp.journal.append({"event": "begin", "turn": 1})
    with pytest.raises(FileNotFoundError):
        cp.journal.store_blob("0" * 40, b"old bytes")
    with pytest.raises(FileNotFoundError):
        cp.journal.save_pending({"turns": [1]})
    await cp.begin_turn("turn 1", tmp_path / "context.jsonl")  # never raises: logged, not recorded
    await cp.before_command()
    await cp.end_turn()
    assert not session.exists()
