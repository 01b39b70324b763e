"""The early Wire `replay` (kimi_acp/frontends/wire/early_replay.py): what it serves from the session file
and every case it leaves to the loaded server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.frontends.wire import early_replay
from kimi_acp.frontends.wire.early_replay import (
    EVENT_NAMES,
    LEGACY_NAMES,
    REQUEST_NAMES,
    answer,
    replay_output,
    session_wire_file,
)
from kimi_acp.util.session_paths import canonical_path
from kimi_acp.wire.types import EVENT_TYPES, LEGACY_TYPE_NAMES, REQUEST_TYPES

META = json.dumps({"type": "metadata", "protocol_version": "1.10"})


def record(kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": 1.0, "message": {"type": kind, "payload": payload}})


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def decoded(output: bytes | None) -> list[dict]:
    assert output is not None
    return [json.loads(line) for line in output.decode().splitlines()]


def test_names_are_the_decoders_own():
    # never early-send a type the server would skip or send another way
    assert set(EVENT_TYPES) | {"ContentPart"} >= EVENT_NAMES
    assert set(REQUEST_TYPES) >= REQUEST_NAMES
    assert not EVENT_NAMES & REQUEST_NAMES
    assert LEGACY_NAMES == LEGACY_TYPE_NAMES


@pytest.mark.parametrize("work_dir", ["/a/b/../c", "~/x/./y", "rel/dir", "/", "/tmp//z/", "{tmp}/link/.."])
def test_it_finds_the_file_the_sessions_store_writes(work_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The early replay and the sessions store share one module for the layout
    (util/session_paths.py): a session the store creates is the file the replay opens."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")  # `..` of a symlink: not resolved, as Kimi does
    work_dir = work_dir.format(tmp=tmp_path)
    session = sessions.create(work_dir)
    session.wire_file.write_text("")
    assert session_wire_file({"work_dir": work_dir, "session_id": session.id}) == session.wire_file
    assert sessions.find(work_dir, session.id).dir == session.wire_file.parent


@pytest.mark.parametrize("session_id", ["", ".", "..", "a/b", "../x", "x" * 129, "a b", "a\nb"])
def test_an_id_the_store_refuses_is_never_looked_up(session_id: str):
    assert not sessions.is_valid_session_id(session_id)
    assert session_wire_file({"work_dir": "/tmp", "session_id": session_id}) is None


def test_the_computing_part_is_done_holding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The file is read before `hold()` is entered (reads let the preload thread run), the rest inside."""
    path = write(tmp_path / "wire.jsonl", META, record("TurnBegin", {"user_input": "hi"}))
    events: list[str] = []
    real_read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: events.append("read") or real_read(self))

    class Hold:
        def __enter__(self):
            events.append("enter")

        def __exit__(self, *exc):
            events.append("exit")

    out = replay_output(path, 1, Hold)
    assert events == ["read", "enter", "exit"]
    assert [m.get("method") for m in decoded(out)] == ["event", None]


def test_early_replay_imports_stay_light():
    """The main thread imports it before the preload starts (only with --session): the standard
    library's json/hashlib/pathlib and our tiny modules, nothing that delays `initialize`."""
    import subprocess
    import sys

    probe = "import sys; before = set(sys.modules); import kimi_acp.frontends.wire.early_replay; print(sorted(set(sys.modules) - before))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.replace("'", '"')))
    allowed = {
        "kimi_acp._version",  # with the package root
        "kimi_acp.frontends.wire.early_replay",
        "kimi_acp.wire.protocol",
        "kimi_acp.util.share_dir",
        "kimi_acp.util.session_paths",
    }
    packages = {m.rsplit(".", i)[0] for m in allowed for i in range(1, m.count(".") + 1)}  # their (empty) parents
    assert not {m for m in loaded if m.startswith("kimi_acp.")} - allowed - packages
    assert not loaded & {"tempfile", "shutil", "logging", "pydantic", "asyncio"}


def test_events_requests_and_the_response(tmp_path: Path):
    path = write(
        tmp_path / "wire.jsonl",
        META,
        record("TurnBegin", {"user_input": "héllo"}),
        record("ContentPart", {"type": "text", "text": "a"}),
        record("ApprovalRequest", {"id": "ap-1", "tool_call_id": "t", "sender": "Shell", "action": "run", "description": "x", "display": []}),
        record("ApprovalRequestResolved", {"request_id": "ap-1", "response": "approve"}),
        "",
        record("TurnEnd", {}),
    )
    lines = decoded(replay_output(path, 7))
    assert [m.get("method") for m in lines] == ["event", "event", "request", "event", "event", None]
    assert lines[0]["params"] == {"type": "TurnBegin", "payload": {"user_input": "héllo"}}
    assert lines[2]["id"] == "ap-1" and lines[2]["params"]["type"] == "ApprovalRequest"
    assert lines[3]["params"]["type"] == "ApprovalResponse"  # the legacy name, renamed as the decoder does
    assert lines[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"status": "finished", "events": 4, "requests": 1}}


def test_an_existing_session_without_a_file_replays_nothing(tmp_path: Path):
    assert decoded(replay_output(tmp_path / "wire.jsonl", "r")) == [
        {"jsonrpc": "2.0", "id": "r", "result": {"status": "finished", "events": 0, "requests": 0}}
    ]


@pytest.mark.parametrize(
    "lines",
    [
        [record("TurnBegin", {"user_input": "x"})],  # no metadata: a legacy 1.1 file
        [json.dumps({"type": "metadata", "protocol_version": "1.1"}), record("TurnBegin", {"user_input": "x"})],
        [META, '{"timestamp": 1.0, "message": {"type": "TurnBeg'],  # torn line
        [META, record("SomethingNew", {})],  # unknown type
        [META, record("ApprovalRequest", {"tool_call_id": "t"})],  # a request without an id
        [META, json.dumps({"timestamp": 1.0, "message": {"type": "TurnEnd"}})],  # no payload
        [META, "[1, 2]"],
    ],
    ids=["legacy", "old-version", "torn", "unknown-type", "request-without-id", "no-payload", "not-an-object"],
)
def test_anything_unusual_is_left_to_the_server(tmp_path: Path, lines: list[str]):
    assert replay_output(write(tmp_path / "wire.jsonl", *lines), "r") is None


def session_dir(share: Path, work_dir: Path, session_id: str) -> Path:
    key = hashlib.md5(str(canonical_path(work_dir)).encode()).hexdigest()
    directory = share / "sessions" / key / session_id
    directory.mkdir(parents=True)
    return directory


def test_the_session_file_is_found_only_for_an_existing_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    share, work = tmp_path / "share", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    directory = session_dir(share, work, "abc-1")
    options = {"work_dir": str(work), "session_id": "abc-1", "continue_last": False}
    assert session_wire_file(options) == directory / "wire.jsonl"
    assert session_wire_file({**options, "session_id": "other"}) is None  # the server creates it
    assert session_wire_file({**options, "session_id": None}) is None  # a new session
    assert session_wire_file({**options, "continue_last": True}) is None
    assert session_wire_file({**options, "session_id": "../x"}) is None
    monkeypatch.chdir(work)
    assert session_wire_file({**options, "work_dir": None}) == directory / "wire.jsonl"


def test_only_a_plain_replay_request_is_answered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    share, work = tmp_path / "share", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    write(session_dir(share, work, "s1") / "wire.jsonl", META, record("TurnEnd", {}))
    options = {"work_dir": str(work), "session_id": "s1", "continue_last": False}
    plain = {"jsonrpc": "2.0", "id": "r", "method": "replay"}
    assert decoded(answer(plain, options))[-1]["result"]["events"] == 1
    assert decoded(answer({**plain, "params": {}}, options))[-1]["id"] == "r"
    for other in (
        {**plain, "method": "prompt"},
        {**plain, "params": {"x": 1}},
        {**plain, "id": True},
        {**plain, "id": None},
        {k: v for k, v in plain.items() if k != "id"},  # a notification
        {**plain, "jsonrpc": "1.0"},
    ):
        assert answer(other, options) is None, other


def test_a_huge_history_is_left_to_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(early_replay, "MAX_FILE_BYTES", 10)
    assert replay_output(write(tmp_path / "wire.jsonl", META, record("TurnEnd", {})), "r") is None


def test_the_early_answers_import_nothing_once_prepared(tmp_path: Path):
    """`kimi --wire` computes its early `initialize` and `replay` with the preload paused, which
    allows no import (startup/early.py): what they need is imported before the preload starts."""
    import subprocess
    import sys

    session = sessions.create(tmp_path)
    session.wire_file.write_text(META + "\n" + record("TurnBegin", {"user_input": "hi"}) + "\n")
    probe = (
        "import sys\n"
        "from kimi_acp.startup import early\n"
        "from kimi_acp.frontends.wire import main\n"
        f"options = {{'work_dir': {str(tmp_path)!r}, 'session_id': {session.id!r}}}\n"
        "main._import_early_answers(options)\n"
        "before = set(sys.modules)\n"
        "init = main._early_initialize({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {'protocol_version': '1.10'}}, options)\n"
        "import contextlib\n"
        "replay = main._early_replay({'jsonrpc': '2.0', 'id': 2, 'method': 'replay'}, options, contextlib.nullcontext)\n"
        "print(init is not None, replay is not None, sorted(set(sys.modules) - before))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "[]"]
