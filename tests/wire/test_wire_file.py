"""`wire.jsonl`: merged recording, tolerant reading, protocol version."""

from __future__ import annotations

import json
from pathlib import Path

from kimi_acp.wire.file import WireRecorder, read_wire_file
from kimi_acp.wire.types import (
    FunctionBody,
    StatusUpdate,
    StepBegin,
    TextPart,
    ThinkPart,
    ToolCall,
    ToolCallPart,
    TurnBegin,
    TurnEnd,
)

METADATA = {"type": "metadata", "protocol_version": "1.10"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def messages(path: Path) -> list[dict]:
    return [line["message"] for line in lines(path)[1:]]


def call(call_id: str, name: str, arguments: str | None) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionBody(name=name, arguments=arguments))


def test_first_line_is_metadata_and_records_have_timestamp_and_envelope(tmp_path: Path) -> None:
    path = tmp_path / "s" / "wire.jsonl"
    path.parent.mkdir()  # the session folder: sessions.create makes it, the recorder never does
    recorder = WireRecorder(path)
    recorder.record(TurnBegin(user_input="héllo"))
    recorder.record(StepBegin(n=1))
    recorder.close()
    data = lines(path)
    assert data[0] == METADATA
    assert [set(d) for d in data[1:]] == [{"timestamp", "message"}] * 2
    assert all(isinstance(d["timestamp"], float) for d in data[1:])
    assert data[1]["message"] == {"type": "TurnBegin", "payload": {"user_input": "héllo"}}
    assert data[2]["message"] == {"type": "StepBegin", "payload": {"n": 1}}
    assert "héllo" in path.read_text(encoding="utf-8")  # non-ASCII kept as is


def test_metadata_written_once_across_recorders(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    for n in (1, 2):
        recorder = WireRecorder(path)
        recorder.record(StepBegin(n=n))
        recorder.close()
    data = lines(path)
    assert data[0] == METADATA
    assert [d.get("type") for d in data].count("metadata") == 1
    assert [d["message"]["payload"]["n"] for d in data[1:]] == [1, 2]


def test_nothing_recorded_means_no_file(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    recorder.flush()
    recorder.close()
    assert not path.exists()


def test_consecutive_text_chunks_merge_until_a_non_mergeable_message(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    for piece in ("Hel", "lo", ", ", "world"):
        recorder.record(TextPart(text=piece))
    assert not path.exists() or len(lines(path)) <= 1  # still pending, not written yet
    recorder.record(StatusUpdate(context_tokens=3))
    recorder.close()
    assert messages(path) == [
        {"type": "ContentPart", "payload": {"type": "text", "text": "Hello, world"}},
        {"type": "StatusUpdate", "payload": StatusUpdate(context_tokens=3).model_dump(mode="json")},
    ]


def test_think_chunks_merge_and_keep_the_encrypted_signature(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    recorder.record(ThinkPart(think="a"))
    recorder.record(ThinkPart(think="b", encrypted="sig-123"))
    recorder.record(ThinkPart(think="c"))  # a later chunk without a signature does not erase it
    recorder.record(TextPart(text="answer"))  # text does not merge into think
    recorder.flush()
    assert messages(path) == [
        {"type": "ContentPart", "payload": {"type": "think", "think": "abc", "encrypted": "sig-123"}},
        {"type": "ContentPart", "payload": {"type": "text", "text": "answer"}},
    ]
    recorder.close()


def test_text_then_think_then_text_are_three_records(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    for part in (TextPart(text="a"), ThinkPart(think="t"), TextPart(text="b"), TextPart(text="c")):
        recorder.record(part)
    recorder.close()
    assert [m["payload"] for m in messages(path)] == [
        {"type": "text", "text": "a"},
        {"type": "think", "think": "t", "encrypted": None},
        {"type": "text", "text": "bc"},
    ]


def test_tool_call_and_its_parts_become_one_tool_call_with_full_arguments(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    recorder.record(ToolCall(id="c1", function=FunctionBody(name="Shell", arguments='{"comm'), extras={"k": 1}))
    recorder.record(ToolCallPart(arguments_part='and": "ec'))
    recorder.record(ToolCallPart(arguments_part=None))
    recorder.record(ToolCallPart(arguments_part='ho hi"}'))
    recorder.record(call("c2", "ReadFile", None))  # a new call closes the first one
    recorder.record(ToolCallPart(arguments_part='{"path": "a"}'))
    recorder.record(TurnEnd())
    recorder.close()
    records = messages(path)
    assert [m["type"] for m in records] == ["ToolCall", "ToolCall", "TurnEnd"]
    first, second = records[0]["payload"], records[1]["payload"]
    assert first == {
        "type": "function",
        "id": "c1",
        "function": {"name": "Shell", "arguments": '{"command": "echo hi"}'},
        "extras": {"k": 1},
    }
    assert json.loads(second["function"]["arguments"]) == {"path": "a"}
    assert second["id"] == "c2"


def test_tool_call_without_arguments_keeps_null(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    recorder.record(call("c1", "Glob", None))
    recorder.close()
    assert messages(path)[0]["payload"]["function"] == {"name": "Glob", "arguments": None}


def test_tool_call_part_without_an_open_call_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    recorder.record(ToolCallPart(arguments_part="orphan"))
    recorder.record(TextPart(text="x"))
    recorder.record(ToolCallPart(arguments_part="after text"))  # text is open, not a call
    recorder.record(StepBegin(n=2))
    recorder.close()
    records = messages(path)
    assert [m["type"] for m in records] == ["ContentPart", "StepBegin"]
    assert records[0]["payload"]["text"] == "x"
    assert "orphan" not in path.read_text() and "after text" not in path.read_text()


def test_flush_writes_pending_and_close_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    recorder.record(TextPart(text="pending"))
    recorder.flush()
    assert messages(path) == [{"type": "ContentPart", "payload": {"type": "text", "text": "pending"}}]
    recorder.record(TextPart(text="more"))  # a new run after a flush: its own record
    recorder.close()
    recorder.close()
    assert [m["payload"]["text"] for m in messages(path)] == ["pending", "more"]


def test_appending_after_a_torn_last_line_does_not_lose_the_new_record(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    recorder.record(TurnBegin(user_input="before the crash"))
    recorder.close()
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"timestamp": 1.0, "message": {"type": "TurnE')  # crash mid-write
    recorder = WireRecorder(path)
    recorder.record(TurnBegin(user_input="after the restart"))
    recorder.close()
    assert [r.message for r in read_wire_file(path)] == [
        TurnBegin(user_input="before the crash"),
        TurnBegin(user_input="after the restart"),
    ]


# --------------------------------------------------------------------------- reading


def test_read_round_trips_what_was_recorded(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder(path)
    sent = [TurnBegin(user_input="q"), StepBegin(n=1), TextPart(text="a"), TextPart(text="b"), TurnEnd()]
    for message in sent:
        recorder.record(message)
    recorder.close()
    records = list(read_wire_file(path))
    assert [r.message for r in records] == [TurnBegin(user_input="q"), StepBegin(n=1), TextPart(text="ab"), TurnEnd()]
    assert all(r.timestamp > 0 for r in records)


def test_read_skips_torn_last_line_blank_lines_unknown_types_and_metadata(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    good1 = {"timestamp": 1.5, "message": {"type": "TurnBegin", "payload": {"user_input": "hi"}}}
    unknown = {"timestamp": 2.0, "message": {"type": "FutureEvent", "payload": {"x": 1}}}
    invalid = {"timestamp": 2.5, "message": {"type": "StepBegin", "payload": {"n": "not a number"}}}
    good2 = {"timestamp": 3, "message": {"type": "TurnEnd", "payload": {}}}
    full = json.dumps({"timestamp": 4.0, "message": {"type": "StepBegin", "payload": {"n": 9}}})
    path.write_text(
        "\n".join(
            [
                json.dumps(METADATA),
                json.dumps(good1),
                "",
                "   ",
                json.dumps(unknown),
                json.dumps(invalid),
                "[1, 2, 3]",
                json.dumps({"timestamp": 2.7}),
                json.dumps(good2),
                full[: len(full) // 2],  # torn: half a line, no newline
            ]
        ),
        encoding="utf-8",
    )
    records = list(read_wire_file(path))
    assert [(r.timestamp, r.message) for r in records] == [(1.5, TurnBegin(user_input="hi")), (3.0, TurnEnd())]


def test_read_tolerates_a_torn_multibyte_character_and_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    good = json.dumps({"timestamp": 1.0, "message": {"type": "TurnBegin", "payload": {"user_input": "ok"}}})
    path.write_bytes(good.encode() + b"\n" + '{"timestamp": 2, "message": "é'.encode()[:-1])
    assert [r.message for r in read_wire_file(path)] == [TurnBegin(user_input="ok")]
    assert list(read_wire_file(tmp_path / "missing.jsonl")) == []


def test_a_legacy_file_without_metadata_still_reads(tmp_path: Path) -> None:
    legacy = tmp_path / "c.jsonl"
    legacy.write_text(json.dumps({"timestamp": 1.0, "message": {"type": "TurnEnd", "payload": {}}}) + "\n")
    assert [r.message for r in read_wire_file(legacy)] == [TurnEnd()]
