"""The on-disk session store: layout, lookup, listing, titles, kimi.json, selection, state.json."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.sessions import SessionSelectionError
from kimi_acp.util import fs as fsutil


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


def write_wire(session: sessions.Session, *records: dict) -> None:
    lines = [json.dumps({"type": "metadata", "protocol_version": "1.10"})]
    lines += [json.dumps({"timestamp": 1.0, "message": r}) for r in records]
    session.wire_file.write_text("\n".join(lines) + "\n", encoding="utf-8")


def turn_begin(user_input: object) -> dict:
    return {"type": "TurnBegin", "payload": {"user_input": user_input}}


def set_mtime(session: sessions.Session, ts: float) -> None:
    for f in (session.wire_file, session.context_file):
        if f.exists():
            os.utime(f, (ts, ts))


# --------------------------------------------------------------------------- layout


def test_work_dir_key_is_md5_of_the_canonical_path(tmp_path: Path, work_dir: Path) -> None:
    expected = hashlib.md5(str(work_dir).encode("utf-8")).hexdigest()
    assert sessions.work_dir_key(work_dir) == expected
    assert sessions.work_dir_key(str(work_dir) + "/") == expected
    assert sessions.work_dir_key(work_dir / "sub" / "..") == expected
    assert sessions.work_dir_key(str(tmp_path) + "//project/./") == expected


def test_work_dir_key_of_a_relative_path_uses_the_cwd(monkeypatch: pytest.MonkeyPatch, work_dir: Path) -> None:
    monkeypatch.chdir(work_dir.parent)
    assert sessions.work_dir_key("project") == sessions.work_dir_key(work_dir)
    assert sessions.work_dir_key(".") == hashlib.md5(os.getcwd().encode()).hexdigest()


def test_symlinks_are_not_resolved(tmp_path: Path, work_dir: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(work_dir, target_is_directory=True)
    assert sessions.work_dir_key(link) == hashlib.md5(str(link).encode()).hexdigest()
    assert sessions.work_dir_key(link) != sessions.work_dir_key(work_dir)
    assert sessions.canonical_path(link) == link


def test_create_lays_out_the_session_directory(share_dir: Path, work_dir: Path) -> None:
    session = sessions.create(work_dir)
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", session.id)
    assert session.dir == share_dir / "sessions" / sessions.work_dir_key(work_dir) / session.id
    assert session.dir.is_dir()
    assert (session.context_file, session.wire_file, session.state_file) == (
        session.dir / "context.jsonl", session.dir / "wire.jsonl", session.dir / "state.json",
    )
    state = json.loads(session.state_file.read_text())
    assert state["version"] == 1 and state["work_dir"] == str(work_dir)
    assert state["approval"] == {"yolo": False, "afk": False, "auto_approve_actions": []}
    assert session.work_dir == work_dir
    metadata = json.loads((share_dir / "kimi.json").read_text())
    assert metadata == {"work_dirs": [{"path": str(work_dir), "kaos": "local", "last_session_id": None}]}


def test_create_with_a_given_id_and_invalid_ids(work_dir: Path) -> None:
    session = sessions.create(work_dir, "my-session_1.2")
    assert session.id == "my-session_1.2" and session.dir.name == "my-session_1.2"
    for bad in ("../x", "..", ".", "a/b", "a\\b", "", "x" * 129, "sp ace", "nul\x00"):
        with pytest.raises(ValueError):
            sessions.create(work_dir, bad) if bad else sessions.validate_session_id(bad)
        assert not sessions.is_valid_session_id(bad)


def test_find_and_find_by_id(share_dir: Path, work_dir: Path, tmp_path: Path) -> None:
    session = sessions.create(work_dir)
    session.state.custom_title = "Found me"
    session.save_state()
    found = sessions.find(work_dir, session.id)
    assert found is not None
    assert (found.id, found.dir, found.work_dir, found.state.custom_title) == (
        session.id, session.dir, work_dir, "Found me",
    )
    assert sessions.find(work_dir / "..", session.id) is None  # another work dir
    assert sessions.find(work_dir, "no-such-session") is None
    assert sessions.find(work_dir, "../" + session.id) is None
    by_id = sessions.find_by_id(session.id)
    assert by_id is not None and by_id.work_dir == work_dir and by_id.dir == session.dir
    assert sessions.find_by_id("missing") is None
    assert sessions.find_by_id("../../etc") is None


def test_find_by_id_falls_back_to_kimi_json_for_the_work_dir(work_dir: Path) -> None:
    session = sessions.create(work_dir)
    session.state_file.write_text('{"version": 1}')  # written by a version that did not store work_dir
    found = sessions.find_by_id(session.id)
    assert found is not None and found.work_dir == work_dir


# --------------------------------------------------------------------------- listing and titles


def test_list_orders_by_update_time_and_skips_empty_sessions(work_dir: Path) -> None:
    old = sessions.create(work_dir)
    write_wire(old, turn_begin("old question"))
    new = sessions.create(work_dir)
    write_wire(new, turn_begin("new question"))
    middle = sessions.create(work_dir)
    middle.state.custom_title = "titled but no turns"
    middle.save_state()
    empty = sessions.create(work_dir)  # nothing ran
    only_meta = sessions.create(work_dir)
    write_wire(only_meta)
    set_mtime(old, 1_000_000)
    set_mtime(new, 3_000_000)
    os.utime(middle.dir, (2_000_000, 2_000_000))
    listed = sessions.list_sessions(work_dir)
    assert [s.id for s in listed] == [new.id, middle.id, old.id]
    assert empty.id not in {s.id for s in listed} and only_meta.id not in {s.id for s in listed}
    assert [s.title() for s in listed] == ["new question", "titled but no turns", "old question"]
    assert listed[0].updated_at() == 3_000_000


def test_list_of_an_unknown_work_dir_is_empty(tmp_path: Path) -> None:
    assert sessions.list_sessions(tmp_path / "never-used") == []


def test_list_ignores_stray_entries(share_dir: Path, work_dir: Path) -> None:
    session = sessions.create(work_dir)
    write_wire(session, turn_begin("q"))
    base = session.dir.parent
    (base / "stray-file").write_text("x")
    (base / "bad name").mkdir()
    assert [s.id for s in sessions.list_sessions(work_dir)] == [session.id]


def test_title_from_state_then_first_turn_then_untitled(work_dir: Path) -> None:
    session = sessions.create(work_dir)
    assert session.title() == "Untitled"
    write_wire(
        session,
        {"type": "StepBegin", "payload": {"n": 1}},
        turn_begin("  first   question\nwith lines  "),
        turn_begin("second question"),
    )
    assert session.title() == "first question with lines"
    session.state.custom_title = "Custom"
    assert session.title() == "Custom"


def test_title_from_list_input_and_untitled_when_no_turn_begin(work_dir: Path) -> None:
    session = sessions.create(work_dir)
    write_wire(
        session,
        turn_begin([{"type": "text", "text": "look at "}, {"type": "image_url", "image_url": {"url": "u"}},
                    {"type": "text", "text": "this"}]),
    )
    assert session.title() == "look at this"
    other = sessions.create(work_dir)
    write_wire(other, {"type": "StepBegin", "payload": {"n": 1}})
    assert not other.is_empty() and other.title() == "Untitled"
    assert [s.title() for s in sessions.list_sessions(work_dir) if s.id == other.id] == ["Untitled"]


def test_title_is_shortened_to_50_chars(work_dir: Path) -> None:
    session = sessions.create(work_dir)
    write_wire(session, turn_begin("word " * 40))
    title = session.title()
    assert len(title) <= 50 and title.endswith("…") and title.startswith("word word")
    assert sessions.shorten_title("x" * 50) == "x" * 50
    assert len(sessions.shorten_title("x" * 51)) == 50


def test_title_skips_a_torn_turn_begin(work_dir: Path) -> None:
    session = sessions.create(work_dir)
    good = json.dumps({"timestamp": 2, "message": turn_begin("the real one")})
    session.wire_file.write_text('{"timestamp": 1, "message": {"type": "TurnBegin", "pay\n' + good + "\n")
    assert session.title() == "the real one"


def test_iso_time_has_an_offset() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", sessions.iso_time(1_700_000_000))


# --------------------------------------------------------------------------- kimi.json


def test_last_session_id_get_set_and_unknown_keys_preserved(share_dir: Path, work_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (share_dir / "kimi.json").write_text(
        json.dumps(
            {
                "work_dirs": [
                    {"path": str(other), "kaos": "local", "last_session_id": "o-1", "future_field": [1]},
                    {"path": str(work_dir), "kaos": "ssh", "last_session_id": "remote"},
                ],
                "telemetry_id": "abc",
            }
        )
    )
    assert sessions.last_session_id(work_dir) is None  # the ssh entry is another kaos
    assert sessions.last_session_id(other) == "o-1"
    sessions.set_last_session_id(work_dir, "s-1")
    assert sessions.last_session_id(work_dir) == "s-1"
    sessions.set_last_session_id(str(work_dir) + "/./", "s-2")  # canonicalized
    assert sessions.last_session_id(work_dir) == "s-2"
    data = json.loads((share_dir / "kimi.json").read_text())
    assert data["telemetry_id"] == "abc"
    assert data["work_dirs"][0] == {"path": str(other), "kaos": "local", "last_session_id": "o-1", "future_field": [1]}
    assert data["work_dirs"][1] == {"path": str(work_dir), "kaos": "ssh", "last_session_id": "remote"}
    assert data["work_dirs"][2] == {"path": str(work_dir), "kaos": "local", "last_session_id": "s-2"}
    assert not [p for p in share_dir.iterdir() if p.name.endswith(".tmp")]


def test_corrupt_kimi_json_reads_as_empty(share_dir: Path, work_dir: Path) -> None:
    (share_dir / "kimi.json").write_bytes(b"\xff{not json")
    assert sessions.last_session_id(work_dir) is None
    sessions.set_last_session_id(work_dir, "s-1")
    assert sessions.last_session_id(work_dir) == "s-1"


# --------------------------------------------------------------------------- select (CLI flags)


def test_select_new(work_dir: Path) -> None:
    first = sessions.select(work_dir)
    second = sessions.select(work_dir)
    assert first.id != second.id and first.dir.is_dir() and second.dir.is_dir()


def test_select_session_creates_with_the_given_id_then_resumes(work_dir: Path) -> None:
    created = sessions.select(work_dir, "fixed-id")
    assert created.id == "fixed-id" and created.dir.is_dir()
    created.state.custom_title = "kept"
    created.save_state()
    resumed = sessions.select(work_dir, "fixed-id")
    assert resumed.dir == created.dir and resumed.state.custom_title == "kept"


def test_select_continue(work_dir: Path) -> None:
    with pytest.raises(SessionSelectionError, match=r"^No previous session found for the working directory$"):
        sessions.select(work_dir, continue_last=True)
    session = sessions.create(work_dir)
    with pytest.raises(SessionSelectionError):
        sessions.select(work_dir, continue_last=True)  # created, but never recorded as the last one
    sessions.set_last_session_id(work_dir, session.id)
    assert sessions.select(work_dir, continue_last=True).dir == session.dir
    sessions.set_last_session_id(work_dir, "deleted-session")
    with pytest.raises(SessionSelectionError, match="No previous session"):
        sessions.select(work_dir, continue_last=True)


def test_select_both_flags_is_an_error(work_dir: Path) -> None:
    with pytest.raises(SessionSelectionError, match="cannot be used together"):
        sessions.select(work_dir, "abc", continue_last=True)


@pytest.mark.parametrize("bad", ["../x", "..", "a/b", "../../etc/passwd", "x y", "-" * 200])
def test_select_invalid_ids(share_dir: Path, work_dir: Path, bad: str) -> None:
    with pytest.raises(SessionSelectionError) as info:
        sessions.select(work_dir, bad)
    assert "invalid session id" in str(info.value) and "\n" not in str(info.value)
    root = share_dir / "sessions"
    assert not root.exists() or not any(root.rglob("*"))  # nothing created anywhere
    assert not (work_dir.parent / "x").exists()


# --------------------------------------------------------------------------- state.json


@pytest.mark.parametrize(
    "garbage",
    [b"{not json", b"[1, 2]", b'{"approval": {"yolo": "maybe"}}', b"\xff\xfe\x00\x01binary", b""],
)
def test_corrupt_state_json_does_not_crash_and_is_not_overwritten_by_reading(work_dir: Path, garbage: bytes) -> None:
    session = sessions.create(work_dir)
    write_wire(session, turn_begin("still listed"))
    session.state_file.write_bytes(garbage)
    found = sessions.find(work_dir, session.id)
    assert found is not None and found.state == sessions.SessionState()
    assert found.title() == "still listed"
    assert [s.id for s in sessions.list_sessions(work_dir)] == [session.id]
    assert sessions.find_by_id(session.id) is not None
    assert sessions.select(work_dir, session.id).dir == session.dir
    assert session.state_file.read_bytes() == garbage


def test_save_state_is_atomic_and_leaves_no_temp_files(work_dir: Path) -> None:
    session = sessions.create(work_dir)
    for n in range(5):
        session.state.approval.auto_approve_actions.append(f"action {n}")
        session.save_state()
    assert sorted(p.name for p in session.dir.iterdir()) == ["state.json"]
    state = json.loads(session.state_file.read_text())
    assert state["approval"]["auto_approve_actions"] == [f"action {n}" for n in range(5)]


def test_a_failed_state_write_keeps_the_old_file(work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = sessions.create(work_dir)
    session.state.custom_title = "old"
    session.save_state()
    before = session.state_file.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil.os, "fsync", broken_fsync)
    session.state.custom_title = "new"
    with pytest.raises(OSError):
        session.save_state()
    assert session.state_file.read_bytes() == before
    assert sorted(p.name for p in session.dir.iterdir()) == ["state.json"]


def test_unknown_state_keys_are_preserved_on_rewrite(work_dir: Path) -> None:
    session = sessions.create(work_dir)
    session.state_file.write_text(
        json.dumps(
            {
                "version": 1,
                "approval": {"yolo": False, "afk": True, "auto_approve_actions": ["edit file"], "future": "x"},
                "plan_session_id": "p-1",
                "plan_slug": "brave-otter",
                "wire_mtime": 12.5,
                "archived": False,
                "todos": [{"title": "t", "status": "done"}],
            }
        )
    )
    found = sessions.find(work_dir, session.id)
    assert found is not None
    assert found.state.approval.afk is True and found.state.approval.auto_approve_actions == ["edit file"]
    found.state.plan_mode = True
    found.save_state()
    data = json.loads(session.state_file.read_text())
    assert data["plan_mode"] is True
    assert (data["plan_session_id"], data["plan_slug"], data["wire_mtime"], data["archived"]) == (
        "p-1", "brave-otter", 12.5, False,
    )
    assert data["approval"]["future"] == "x"
    assert data["todos"] == [{"title": "t", "status": "done"}]
    assert data["work_dir"] == str(work_dir)


def test_concurrent_processes_creating_sessions_keep_every_work_dir_in_kimi_json(share_dir: Path, tmp_path: Path) -> None:
    """Six processes create sessions at the same moment, each in work dirs of its own: every
    read-modify-write of kimi.json holds `kimi.json.lock`, so no work dir (or last session) is lost."""
    import subprocess
    import sys
    import textwrap

    go = tmp_path / "go"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from kimi_acp import sessions
        worker = sys.argv[1]
        while not Path({str(go)!r}).exists():
            time.sleep(0.005)
        for n in range(12):
            work_dir = Path({str(tmp_path)!r}) / f"w{{worker}}-{{n}}"
            work_dir.mkdir()
            session = sessions.create(work_dir)
            sessions.set_last_session_id(work_dir, session.id)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(i)], stderr=subprocess.PIPE, text=True) for i in range(6)]
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    entries = json.loads((share_dir / "kimi.json").read_text())["work_dirs"]
    assert sorted(Path(e["path"]).name for e in entries) == sorted(f"w{i}-{n}" for i in range(6) for n in range(12))
    assert all(e["last_session_id"] for e in entries)
