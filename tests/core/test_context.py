"""`context.jsonl`: Kimi's line format, tolerant loading, rotation, token estimates."""

from __future__ import annotations

import json
from pathlib import Path

from kimi_acp.core.context import Context
from kimi_acp.llm.types import Message
from kimi_acp.wire.types import FunctionBody, TextPart, ThinkPart, ToolCall


def raw_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def one_turn(path: Path) -> tuple[Context, list[Message]]:
    ctx = Context(path)
    ctx.start("You are a test agent.")
    ctx.checkpoint()
    messages = [
        Message(role="user", content="list files"),
        Message(
            role="assistant",
            content=[ThinkPart(think="hmm", encrypted="sig"), TextPart(text="Running ls")],
            tool_calls=[ToolCall(id="c1", function=FunctionBody(name="Shell", arguments='{"command": "ls"}'))],
        ),
        Message(role="tool", tool_call_id="c1", content=[TextPart(text="<system>ok</system>"), TextPart(text="a.txt")]),
    ]
    ctx.append(messages[:1])
    ctx.checkpoint()
    ctx.set_token_count(123)
    ctx.append(messages[1:])
    ctx.set_token_count(456)
    return ctx, messages


def test_lines_are_in_kimis_format(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx, _ = one_turn(path)
    ctx.close()
    lines = raw_lines(path)
    assert lines[0] == {"role": "_system_prompt", "content": "You are a test agent."}
    assert [line["role"] for line in lines] == [
        "_system_prompt", "_checkpoint", "user", "_checkpoint", "_usage", "assistant", "tool", "_usage",
    ]
    assert lines[1] == {"role": "_checkpoint", "id": 0} and lines[3] == {"role": "_checkpoint", "id": 1}
    assert lines[4] == {"role": "_usage", "token_count": 123}
    assert lines[2] == {"role": "user", "content": "list files"}  # a plain string stays a string, no nulls
    assert lines[5]["tool_calls"] == [
        {"type": "function", "id": "c1", "function": {"name": "Shell", "arguments": '{"command": "ls"}'}}
    ]
    assert lines[6]["tool_call_id"] == "c1"
    assert "null" not in path.read_text()


def test_append_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx, messages = one_turn(path)
    ctx.close()
    loaded = Context.load(path)
    assert loaded.system_prompt == "You are a test agent."
    assert loaded.history == messages
    assert loaded.n_checkpoints == 2
    assert loaded.token_count == 456
    assert loaded.estimated_tokens == ctx.estimated_tokens
    assert not loaded.is_new
    # appending to a loaded context continues the file and the checkpoint numbering
    loaded.checkpoint()
    loaded.append([Message(role="user", content="next")])
    loaded.close()
    lines = raw_lines(path)
    assert lines[-2] == {"role": "_checkpoint", "id": 2} and lines[-1]["content"] == "next"
    assert [line["role"] for line in lines].count("_system_prompt") == 1


def test_start_is_a_no_op_when_a_prompt_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx = Context(path)
    ctx.start("first")
    ctx.start("second")
    ctx.close()
    loaded = Context.load(path)
    loaded.start("third")
    loaded.close()
    assert [line for line in raw_lines(path) if line["role"] == "_system_prompt"] == [
        {"role": "_system_prompt", "content": "first"}
    ]
    assert Context.load(path).system_prompt == "first"


def test_missing_file_is_a_new_empty_context(tmp_path: Path) -> None:
    ctx = Context.load(tmp_path / "nope.jsonl")
    assert ctx.is_new and ctx.history == [] and ctx.system_prompt is None and ctx.token_count == 0
    assert not (tmp_path / "nope.jsonl").exists()


def test_torn_last_line_and_junk_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx, messages = one_turn(path)
    ctx.close()
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n   \n")
        f.write('["not", "an", "object"]\n')
        f.write('{"role": "robot", "content": "invalid role"}\n')
        f.write('{"role": "_future_marker", "x": 1}\n')
        f.write('{"role": "_usage", "token_count": "many"}\n')
        f.write('{"role": "assistant", "content": "half a li')  # crash mid-write
    loaded = Context.load(path)
    assert loaded.history == messages
    assert loaded.token_count == 456


def test_torn_multibyte_character_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    good = json.dumps({"role": "user", "content": "ok"})
    path.write_bytes(good.encode() + b"\n" + '{"role": "user", "content": "é'.encode()[:-1])
    assert Context.load(path).history == [Message(role="user", content="ok")]


def test_append_after_a_torn_last_line_keeps_the_new_message(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx = Context(path)
    ctx.start("sys")
    ctx.append([Message(role="user", content="before")])
    ctx.close()
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"role": "assistant", "content": "cut')
    resumed = Context.load(path)
    resumed.append([Message(role="user", content="after")])
    resumed.close()
    assert [m.content for m in Context.load(path).history] == ["before", "after"]


def test_rotate_moves_the_file_aside_and_starts_fresh(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx, _ = one_turn(path)
    original = path.read_bytes()
    kept = [Message(role="user", content="summary of before")]
    ctx.rotate("new prompt", kept, token_count=77)
    assert (tmp_path / "context_1.jsonl").read_bytes() == original
    assert ctx.history == kept and ctx.system_prompt == "new prompt" and ctx.token_count == 77
    assert ctx.n_checkpoints == 0
    ctx.append([Message(role="assistant", content="after rotation")])
    ctx.close()
    assert raw_lines(path) == [
        {"role": "_system_prompt", "content": "new prompt"},
        {"role": "user", "content": "summary of before"},
        {"role": "_usage", "token_count": 77},
        {"role": "assistant", "content": "after rotation"},
    ]
    second = path.read_bytes()
    ctx.rotate("third prompt")  # /clear: nothing kept
    ctx.close()
    assert (tmp_path / "context_1.jsonl").read_bytes() == original
    assert (tmp_path / "context_2.jsonl").read_bytes() == second
    assert raw_lines(path) == [{"role": "_system_prompt", "content": "third prompt"}]
    loaded = Context.load(path)
    # /clear counted nothing: the count is the prompt's estimate, and no `_usage` line says otherwise
    assert loaded.history == [] and loaded.system_prompt == "third prompt" and loaded.token_count == len("third prompt") // 4


def test_rotate_skips_existing_rotation_numbers(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    (tmp_path / "context_1.jsonl").write_text("from kimi\n")
    ctx = Context(path)
    ctx.start("p")
    ctx.rotate("q")
    ctx.close()
    assert (tmp_path / "context_1.jsonl").read_text() == "from kimi\n"
    assert raw_lines(tmp_path / "context_2.jsonl") == [{"role": "_system_prompt", "content": "p"}]


def test_estimated_tokens_grow_with_content(tmp_path: Path) -> None:
    ctx = Context(tmp_path / "context.jsonl")
    assert ctx.estimated_tokens == 0
    ctx.start("s" * 400)
    assert ctx.estimated_tokens == 100
    before = ctx.estimated_tokens
    ctx.append([Message(role="user", content="u" * 4000)])
    assert ctx.estimated_tokens == before + 1000
    before = ctx.estimated_tokens
    ctx.append(
        [
            Message(
                role="assistant",
                content=[ThinkPart(think="t" * 40)],
                tool_calls=[ToolCall(id="c", function=FunctionBody(name="Glob", arguments="a" * 36))],
            )
        ]
    )
    assert ctx.estimated_tokens == before + (40 + 4 + 36) // 4
    ctx.rotate("x" * 8)
    assert ctx.estimated_tokens == 2
    ctx.close()


def test_an_estimate_is_kept_in_memory_and_never_written_as_usage(tmp_path: Path) -> None:
    """Kimi clients read `_usage` as a provider's count: without one only the estimate grows."""
    path = tmp_path / "context.jsonl"
    ctx = Context(path)
    ctx.start("p" * 400)
    ctx.append([Message(role="user", content="u" * 800), Message(role="assistant", content="a" * 400)])
    assert ctx.token_count == ctx.estimated_tokens == 100 + 200 + 100
    ctx.close()
    assert "_usage" not in [line["role"] for line in raw_lines(path)]
    assert Context.load(path).token_count == 400  # read back: the same estimate, for compaction


def test_the_count_is_the_last_usage_plus_an_estimate_of_what_came_after(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    ctx = Context(path)
    ctx.start("p" * 400)
    ctx.append([Message(role="user", content="u" * 800), Message(role="assistant", content="a" * 400)])
    ctx.set_token_count(5000)
    ctx.append([Message(role="tool", tool_call_id="c1", content="t" * 4000)])
    assert ctx.token_count == 5000 + 1000
    ctx.close()
    assert [line.get("token_count") for line in raw_lines(path) if line["role"] == "_usage"] == [5000]
    assert Context.load(path).token_count == 6000
