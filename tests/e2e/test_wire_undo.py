"""`/undo` through `kimi --wire`, on real files: what a turn's tools changed comes back, byte for
byte and mode for mode; what undo cannot restore, and what the user changed since, is said."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from kimi_acp.sessions import work_dir_key
from tests.support.wire_client import events, text_of, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


def session_dir(share_dir: Path, work_dir: Path) -> Path:
    (directory,) = list((share_dir / "sessions" / work_dir_key(work_dir)).iterdir())
    return directory


def snapshot(directory: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every file, link and directory under `directory` (not .git): kind, bytes, permission bits."""
    found = {}
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = Path(root) / name
            st = path.lstat()
            rel = path.relative_to(directory).as_posix()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path).encode(), 0)
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", b"", stat.S_IMODE(st.st_mode))
            else:
                found[rel] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return found


def undo_notice(seen: list[dict]) -> dict:
    (notice,) = [e["payload"] for e in events(seen, "Notification") if e["payload"]["category"] == "undo"]
    return notice


def make_project(work_dir: Path) -> None:
    (work_dir / "notes.md").write_bytes(b"# Notes\r\nkeep the CRLF\r\n")
    os.chmod(work_dir / "notes.md", 0o600)
    (work_dir / "run.sh").write_bytes(b"#!/bin/sh\necho old\n")
    os.chmod(work_dir / "run.sh", 0o750)
    (work_dir / "config.ini").write_bytes(b"mode = slow\n")
    os.chmod(work_dir / "config.ini", 0o640)
    (work_dir / "src").mkdir()
    (work_dir / "src" / "old_name.py").write_bytes(b"print('moved')\n")
    (work_dir / "doomed.txt").write_bytes(b"\x00binary\xff bytes\n")
    os.chmod(work_dir / "doomed.txt", 0o604)
    (work_dir / "link").symlink_to("notes.md")


async def test_undo_restores_edits_and_shell_changes_exactly(start_wire, share_dir, work_dir):
    make_project(work_dir)
    before = snapshot(work_dir)
    command = "sed -i 's/slow/fast/' config.ini && mv src/old_name.py src/new_name.py && rm doomed.txt && printf made > created.txt"
    wire = await start_wire(
        [
            tool_call("w1", "WriteFile", {"path": "notes.md", "content": "replaced\n"}),
            tool_call("e1", "StrReplaceFile", {"path": "run.sh", "edit": {"old": "old", "new": "new"}}),
            tool_call("s1", "Shell", {"command": command}),
            "text: done",
        ],
        "--yolo",
    )
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "change things"})
    assert response["result"] == {"status": "finished"}
    assert not any(e["payload"]["return_value"]["is_error"] for e in events(seen, "ToolResult"))
    assert (work_dir / "created.txt").exists() and not (work_dir / "doomed.txt").exists()
    assert (work_dir / "notes.md").read_bytes() == b"replaced\n"

    response, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert response["result"] == {"status": "finished"}
    assert snapshot(work_dir) == before
    notice = undo_notice(seen)
    assert notice["type"] == "turns_undone" and notice["payload"]["left"] == []
    assert sorted(notice["payload"]["restored"]) == ["config.ini", "doomed.txt", "notes.md", "run.sh", "src/old_name.py"]
    assert sorted(notice["payload"]["removed"]) == ["created.txt", "src/new_name.py"]
    text = text_of(seen)
    assert text.startswith("Undid 1 turn (“change things”).") and "no longer in the conversation" in text
    # Only the agent's files changed: the undo record is private, like the rest of the share dir.
    undo_dir = session_dir(share_dir, work_dir) / "undo"
    for root, dirs, files in os.walk(undo_dir):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in files:
            assert stat.S_IMODE(os.lstat(Path(root) / name).st_mode) & 0o077 == 0, name

    response, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert "Nothing to undo" in text_of(seen)
    assert undo_notice(seen)["type"] == "undo_refused"


async def test_ignored_and_over_cap_files_are_reported_not_restored(start_wire, tmp_path, share_dir, work_dir):
    (work_dir / ".gitignore").write_text("*.log\nbuild/\n")
    (work_dir / "app.log").write_text("old log\n")
    (work_dir / "build").mkdir()
    (work_dir / "big.bin").write_bytes(b"a" * 3000)
    (work_dir / "small.txt").write_text("small\n")
    config = tmp_path / "config.json"
    scripts = [tool_call("s1", "Shell", {"command": "echo new >> app.log && echo out > build/out.o && echo b >> big.bin && echo x > small.txt"}), "text: ok"]
    from tests.support.wire_client import scripted_config_data

    data = scripted_config_data(tmp_path, scripts)
    data["undo"] = {"max_file_bytes": 2000}
    config.write_text(json.dumps(data))
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "go"})
    response, seen = await wire.call("prompt", {"user_input": "/undo"})
    notice = undo_notice(seen)["payload"]
    assert notice["restored"] == ["small.txt"]
    reasons = {item["path"]: item["why"] for item in notice["not_covered"]}
    assert "ignored by .gitignore" in reasons["app.log"]
    assert "ignored by .gitignore" in reasons["build/out.o"]
    assert "over the 2,000 bytes size cap" in reasons["big.bin"]
    assert (work_dir / "small.txt").read_text() == "small\n"
    assert (work_dir / "app.log").read_text() == "old log\nnew\n"  # not restored: said so
    assert "app.log" in text_of(seen) and "big.bin" in text_of(seen)
