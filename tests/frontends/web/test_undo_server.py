"""`kimi web`'s undo controls over HTTP: the marks on the event stream, the preview, the undo
itself, a running turn refused with the reason, bad input refused."""

from __future__ import annotations

from pathlib import Path

from tests.frontends.web.conftest import StartWeb
from tests.frontends.web.test_server import events, new_session, post, until
from tests.support.wire_client import tool_call


def test_marks_preview_undo_and_refusals(start_web: StartWeb, work_dir: Path) -> None:
    (work_dir / "a.txt").write_text("before\n")
    scripts = [
        tool_call("s1", "Shell", {"command": "echo after > a.txt"}),
        "text: changed",
        tool_call("s2", "Shell", {"command": "sleep 60"}),
    ]
    server = start_web(scripts, "--yolo")
    session_id = new_session(server)
    base = f"/api/sessions/{session_id}"
    stream = events(server, session_id)
    until(stream, "HistoryEnd")
    assert post(server, base + "/prompt", {"text": "change a"}).status_code == 200
    marks = until(stream, "Undo")[-1]["params"]
    assert marks["runs"] == [{"run": 0, "turns": 1, "seq": 1}] and marks["undone"] == []

    preview = post(server, base + "/undo_preview", {"turns": 1})
    assert preview.status_code == 200
    assert preview.json()["restored"] == ["a.txt"] and preview.json()["dry_run"] is True
    assert (work_dir / "a.txt").read_text() == "after\n"
    for bad in ({}, {"turns": "1"}, {"turns": 0}, {"turns": True}, {"turns": 1001}):
        assert post(server, base + "/undo_preview", bad).status_code == 400
    assert (
        post(server, base + "/undo", {"turns": 1, "seq": 99}).status_code == 409
    )  # the page looked at another turn

    assert post(server, base + "/undo", {"turns": 1, "seq": 1}).status_code == 200
    until(stream, "RunEnd")
    marks = until(stream, "Undo")[-1]["params"]
    assert marks == {"runs": [], "undone": [0]}
    assert (work_dir / "a.txt").read_text() == "before\n"

    assert post(server, base + "/prompt", {"text": "wait"}).status_code == 200
    until(stream, "ToolCallBegin")
    for action in ("/undo_preview", "/undo"):
        busy = post(server, base + action, {"turns": 1})
        assert busy.status_code == 409 and "cannot be undone until it ends" in busy.json()["error"]
    busy = post(server, base + "/prompt", {"text": "/undo"})
    assert busy.status_code == 409 and "cannot be undone until it ends" in busy.json()["error"]
    assert post(server, base + "/cancel", {}).status_code == 200
    until(stream, "RunEnd")
