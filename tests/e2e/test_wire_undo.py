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
    assert sorted(notice["payload"]["restored"]) == [
        "config.ini",
        "doomed.txt",
        "notes.md",
        "run.sh",
        "src/old_name.py",
    ]
    assert sorted(notice["payload"]["removed"]) == ["created.txt", "src/new_name.py"]
    text = text_of(seen)
    assert text.startswith("Undid 1 turn (“change things”).") and "no longer in the conversation" in text
    # Only the agent's files changed: the undo record is private, like the rest of the share dir.
    undo_dir = session_dir(share_dir, work_dir) / "undo"
    for root, _dirs, files in os.walk(undo_dir):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in files:
            assert stat.S_IMODE(os.lstat(Path(root) / name).st_mode) & 0o077 == 0, name

    response, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert "Nothing to undo" in text_of(seen)
    assert undo_notice(seen)["type"] == "undo_refused"


async def test_ignored_and_over_cap_files_are_reported_not_restored(
    start_wire, tmp_path, share_dir, work_dir
):
    (work_dir / ".gitignore").write_text("*.log\nbuild/\n")
    (work_dir / "app.log").write_text("old log\n")
    (work_dir / "build").mkdir()
    (work_dir / "big.bin").write_bytes(b"a" * 3000)
    (work_dir / "small.txt").write_text("small\n")
    config = tmp_path / "config.json"
    scripts = [
        tool_call(
            "s1",
            "Shell",
            {
                "command": "echo new >> app.log && echo out > build/out.o && echo b >> big.bin && echo x > small.txt"
            },
        ),
        "text: ok",
    ]
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


async def test_a_file_changed_since_the_turn_is_left_and_said_unless_forced(start_wire, work_dir):
    for name in ("a.txt", "b.txt", "c.txt"):
        (work_dir / name).write_text(f"{name} before\n")
    wire = await start_wire(
        [
            tool_call(
                "s1", "Shell", {"command": "echo turn >> a.txt && echo turn >> b.txt && echo turn >> c.txt"}
            ),
            "text: one",
            tool_call("s2", "Shell", {"command": "echo again >> a.txt"}),
            "text: two",
        ],
        "--yolo",
    )
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "first"})
    (work_dir / "b.txt").write_text("the user's own edit\n")

    _, seen = await wire.call("prompt", {"user_input": "/undo --dry-run"})
    preview = undo_notice(seen)
    assert preview["type"] == "undo_preview"
    assert preview["payload"]["restored"] == ["a.txt", "c.txt"]
    assert preview["payload"]["left"] == [
        {"path": "b.txt", "why": "changed since the turn (by you or another program)"}
    ]
    assert (work_dir / "a.txt").read_text() == "a.txt before\nturn\n"  # a preview changes nothing

    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    payload = undo_notice(seen)["payload"]
    assert payload["restored"] == ["a.txt", "c.txt"] and [item["path"] for item in payload["left"]] == [
        "b.txt"
    ]
    assert "`b.txt`: changed since the turn (by you or another program)" in text_of(seen)
    assert (work_dir / "a.txt").read_text() == "a.txt before\n"
    assert (work_dir / "b.txt").read_text() == "the user's own edit\n"  # never overwritten silently

    await wire.call("prompt", {"user_input": "second"})
    (work_dir / "a.txt").write_text("edited by the user\n")
    _, seen = await wire.call("prompt", {"user_input": "/undo --force"})
    assert undo_notice(seen)["payload"]["restored"] == ["a.txt"]
    assert (work_dir / "a.txt").read_text() == "a.txt before\n"


async def test_a_running_turn_cannot_be_undone(start_wire, work_dir):
    wire = await start_wire([tool_call("s1", "Shell", {"command": "echo hi"}), "text: ok"])
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    approval, _ = await wire.next_request()  # the turn waits on its approval
    refused, _ = await wire.call("prompt", {"user_input": "/undo"})
    assert refused["error"]["code"] == -32000
    assert "a turn still running cannot be undone" in refused["error"]["message"]
    payload = approval["params"]["payload"]
    await wire.respond(approval["id"], {"request_id": payload["id"], "response": "reject"})
    done, _ = await wire.response(prompt_id)
    assert done["result"]["status"] == "finished"


async def test_an_undo_cut_short_is_finished_by_the_next(start_wire, share_dir, work_dir, monkeypatch):
    import kimi_acp.core.undo as undo

    for name in ("a.txt", "b.txt", "c.txt"):
        (work_dir / name).write_text(f"{name} before\n")
    wire = await start_wire(
        [tool_call("s1", "Shell", {"command": "rm a.txt b.txt c.txt"}), "text: gone"], "--yolo"
    )
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "delete them"})
    real_restore, calls = undo.restore, []

    def crash_on_the_second(*args):
        calls.append(args)
        if len(calls) == 2:
            raise RuntimeError("the power went out")  # nothing in undo catches it: it stops as a crash would
        return real_restore(*args)

    monkeypatch.setattr(undo, "restore", crash_on_the_second)
    failed, _ = await wire.call("prompt", {"user_input": "/undo"})
    assert "error" in failed
    directory = session_dir(share_dir, work_dir)
    assert (directory / "undo" / "pending.json").exists()
    assert sorted(p.name for p in work_dir.iterdir()) == ["a.txt"]  # one restored, whole; the others not yet
    assert not (directory / "context_1.jsonl").exists()

    monkeypatch.setattr(undo, "restore", real_restore)
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert text_of(seen).startswith("Finished an undo a crash had interrupted (1 turn: “delete them”).")
    for name in ("a.txt", "b.txt", "c.txt"):
        assert (work_dir / name).read_text() == f"{name} before\n"
    assert not (directory / "undo" / "pending.json").exists()
    assert (directory / "context_1.jsonl").exists() and not (directory / "context_2.jsonl").exists()
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert "Nothing to undo" in text_of(seen)


async def test_a_directory_over_the_file_cap_is_not_snapshotted_and_undo_says_so(
    start_wire, tmp_path, work_dir
):
    from tests.support.wire_client import scripted_config_data

    for i in range(5):
        (work_dir / f"f{i}.txt").write_text(f"{i}\n")
    scripts = [
        tool_call("s1", "Shell", {"command": "echo changed > f0.txt"}),
        tool_call("w1", "WriteFile", {"path": "f1.txt", "content": "edited\n"}),
        "text: ok",
    ]
    data = scripted_config_data(tmp_path, scripts)
    data["undo"] = {"max_files": 3}
    (tmp_path / "capped.json").write_text(json.dumps(data))
    wire = await start_wire((), "--yolo", config=tmp_path / "capped.json")
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "go"})
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    payload = undo_notice(seen)["payload"]
    assert payload["restored"] == ["f1.txt"]  # WriteFile's edit is always recorded
    (why,) = [item["why"] for item in payload["not_covered"]]
    assert "more than 3 files" in why and "cannot be undone" in why
    assert (work_dir / "f0.txt").read_text() == "changed\n" and (work_dir / "f1.txt").read_text() == "1\n"


async def test_a_subagents_changes_belong_to_the_turn_that_ran_it(start_wire, work_dir):
    (work_dir / "a.txt").write_text("a before\n")
    report = "I changed the files as asked. " * 8
    scripts = [
        tool_call("sub", "Agent", {"description": "edit", "prompt": "Change the files.", "subagent_type": "coder"}),
        tool_call("w1", "WriteFile", {"path": "a.txt", "content": "by the subagent\n"}),
        tool_call("s1", "Shell", {"command": "echo made > b.txt"}),
        f"text: {report}",
        "text: The subagent is done.",
    ]
    wire = await start_wire(scripts, "--yolo")
    await wire.call("initialize", INIT)
    done, _ = await wire.call("prompt", {"user_input": "delegate"})
    assert done["result"] == {"status": "finished"}
    assert (work_dir / "a.txt").read_text() == "by the subagent\n" and (work_dir / "b.txt").exists()
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    payload = undo_notice(seen)["payload"]
    assert payload["turns"] == [1] and payload["restored"] == ["a.txt"] and payload["removed"] == ["b.txt"]
    assert (work_dir / "a.txt").read_text() == "a before\n" and not (work_dir / "b.txt").exists()


async def test_undo_after_clear_rewinds_to_the_history_before_the_turn(start_wire, share_dir, work_dir):
    wire = await start_wire(["text: one", "text: two"])
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "turn one"})
    await wire.call("prompt", {"user_input": "turn two"})
    await wire.call("prompt", {"user_input": "/clear"})  # context.jsonl moves to context_1.jsonl
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert "That turn is no longer in the conversation" in text_of(seen)
    status = events(seen, "StatusUpdate")[-1]["payload"]
    assert status["context_tokens"] > 0  # the history before turn two is back
    directory = session_dir(share_dir, work_dir)
    lines = [json.loads(line) for line in (directory / "context.jsonl").read_text().splitlines()]
    users = [line["content"] for line in lines if line.get("role") == "user"]
    assert [u if isinstance(u, str) else u[0]["text"] for u in users] == ["turn one"]
    assert [line["role"] for line in lines][:2] == ["_system_prompt", "_checkpoint"]
    assert sorted(p.name for p in directory.glob("context_*.jsonl")) == ["context_1.jsonl", "context_2.jsonl"]


async def test_a_turn_that_changes_nothing_takes_no_snapshot_and_can_still_be_undone(start_wire, share_dir, work_dir):
    (work_dir / "a.txt").write_text("a\n")
    wire = await start_wire(["text: just talking", "text: again"])
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "hello"})
    await wire.call("prompt", {"user_input": "hello again"})
    undo_dir = session_dir(share_dir, work_dir) / "undo"
    assert sorted(p.name for p in undo_dir.iterdir()) == ["journal.jsonl"]  # no snapshot, no copy
    assert len(undo_dir.joinpath("journal.jsonl").read_text().splitlines()) == 4  # begin and end, twice
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert "That turn changed no files." in text_of(seen) and "That turn is no longer in the conversation" in text_of(seen)
