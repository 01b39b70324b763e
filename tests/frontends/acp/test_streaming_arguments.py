"""Tool-call arguments read while they stream (frontends/acp/arguments.py) and the card updates they drive."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
import streamingjson

from kimi_acp.frontends.acp.arguments import WATCH_LIMIT, StreamingArguments
from kimi_acp.frontends.acp.updates import UpdateMapper
from kimi_acp.wire.types import FunctionBody, ToolCall, ToolCallPart

CWD = Path("/work/project")


def fed(deltas: list[str]) -> tuple[StreamingArguments, list[dict[str, Any]]]:
    """The arguments after every delta, and each distinct partial view seen on the way."""
    args = StreamingArguments()
    views = []
    for delta in deltas:
        if args.append(delta):
            views.append(json.loads(json.dumps(args.partial)))
    return args, views


def split_every(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_a_string_shows_once_it_is_closed() -> None:
    """Half a value is not what the call will do (`Shell: touc`): a string shows once it is closed."""
    args, views = fed(['{"pa', 'th": "src/a', "pp.py", '", "content": "x', "yz", '"}'])
    assert views == [{"path": "src/app.py"}, {"path": "src/app.py", "content": "xyz"}]
    assert args.final() == {"path": "src/app.py", "content": "xyz"}
    assert args.text == '{"path": "src/app.py", "content": "xyz"}'


def test_a_key_is_complete_once_a_later_key_starts() -> None:
    args = StreamingArguments('{"path": "a.txt"')
    assert not args.complete("path")  # the string may still go on... it is closed, but no key follows
    args.append(', "con')
    assert args.complete("path") and not args.complete("content") and not args.complete("missing")


@pytest.mark.parametrize(
    ("deltas", "value"),
    [
        (['{"p": "say \\', '"hi\\', '""}'], 'say "hi"'),  # an escaped quote split after its backslash
        (['{"p": "a\\\\', '\\\\b"}'], "a\\\\b"),  # escaped backslashes
        (['{"p": "line\\', "n", 'next\\t."}'], "line\nnext\t."),
        (['{"p": "caf\\u00', 'e9!"}'], "café!"),  # a \u escape split in its digits
        (['{"p": "\\/path"}'], "/path"),
    ],
)
def test_escapes_split_across_deltas(deltas: list[str], value: str) -> None:
    args, views = fed(deltas)
    assert args.final() == {"p": value}
    assert views[-1] == {"p": value}
    for view in views:  # no view ever shows a half-read escape: each is a start of the value
        assert value.startswith(view.get("p", ""))


def test_unicode_split_across_deltas() -> None:
    # 🚀 written as a surrogate pair of two \u escapes, cut between them; then raw non-ASCII text.
    args, views = fed(['{"path": "go \\ud83d', '\\ude80 ', "wörld 世", '界"}'])
    assert args.final() == {"path": "go 🚀 wörld 世界"}
    for view in views:
        text = view.get("path", "")
        text.encode("utf-8")  # never a lone surrogate: every view can be sent
    assert views == [{"path": "go 🚀 wörld 世界"}]


def test_nested_objects_and_arrays() -> None:
    document = {"a": {"b": [1, -2.5, {"c": "d", "e": [True, None]}]}, "f": "last"}
    text = json.dumps(document)
    args, views = fed(list(text))  # one character per delta
    assert args.final() == document and views[-1] == document
    assert all(isinstance(v, dict) for v in views)


def test_random_splits_end_in_the_document() -> None:
    rng = random.Random(7)
    documents = [
        {"command": "echo 'hi' && ls -la \"dir\"", "timeout": 30},
        {"path": "ünïcödé/файл.txt", "content": "a\n\tb\\c\"d" * 20, "line_offset": 3},
        {"edits": [{"old": "x", "new": "y"}, {"old": "{", "new": "}"}], "path": "p"},
    ]
    for document in documents:
        text = json.dumps(document, ensure_ascii=rng.random() < 0.5)
        for _ in range(20):
            cuts = sorted(rng.sample(range(1, len(text)), k=min(8, len(text) - 1)))
            deltas = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)])]
            args, views = fed(deltas)
            assert args.final() == document
            assert views[-1] == document


def test_not_an_object_and_garbage() -> None:
    assert StreamingArguments().final() == {}
    args, views = fed(["[1, ", "2]"])
    assert views == [] and args.final() == {}
    args, _ = fed(['{"a": "x"}', " trailing"])
    assert args.final() == {}  # as before: arguments that are not one JSON object read as {}


def test_only_the_head_is_read_incrementally(monkeypatch: pytest.MonkeyPatch) -> None:
    content = "x" * (WATCH_LIMIT * 4)
    text = json.dumps({"content": content, "path": "late.txt"})
    fed_chars = 0
    original = streamingjson.Lexer.append_string

    def counting(self: Any, piece: str) -> None:
        nonlocal fed_chars
        fed_chars += len(piece)
        original(self, piece)

    monkeypatch.setattr(streamingjson.Lexer, "append_string", counting)
    args, _ = fed(split_every(text, 100))
    assert fed_chars == WATCH_LIMIT and not args.watching
    assert args.final() == {"content": content, "path": "late.txt"}  # read whole once complete


def test_arguments_that_arrive_complete_are_read_without_the_lexer(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[int] = []
    original_init = streamingjson.Lexer.__init__

    def counting(self: Any) -> None:
        created.append(1)
        original_init(self)

    monkeypatch.setattr(streamingjson.Lexer, "__init__", counting)
    text = json.dumps({"path": "a.txt", "content": "x" * 100})
    args = StreamingArguments(text)  # a replayed call, or one a provider sent in one piece
    assert args.partial == args.final() == {"path": "a.txt", "content": "x" * 100}
    assert args.complete("path") and not args.complete("content") and created == []
    assert StreamingArguments('{"path": "a.t').partial == {} and created == [1]  # the string is still open
    assert StreamingArguments('{"path": "a.t"').partial == {"path": "a.t"}


def test_a_complete_looking_first_delta_that_goes_on_reads_as_if_streamed() -> None:
    deltas = ['{"a": "x"}', " trailing"]
    whole, streamed = StreamingArguments(deltas[0]), StreamingArguments()
    streamed.append(deltas[0])
    for args in (whole, streamed):
        args.append(deltas[1])
    assert whole.partial == streamed.partial and whole.final() == streamed.final() == {}
    long_first = json.dumps({"content": "y" * (WATCH_LIMIT * 2)})
    assert not StreamingArguments(long_first).watching  # past the watch limit, as when streamed


# --------------------------------------------------------------------------- the card


def stream_call(mapper: UpdateMapper, name: str, text: str, size: int) -> list[dict[str, Any]]:
    deltas = split_every(text, size)
    updates = mapper.map(ToolCall(id="c1", function=FunctionBody(name=name, arguments=deltas[0])))
    for delta in deltas[1:]:
        updates += mapper.map(ToolCallPart(arguments_part=delta))
    return updates + mapper.flush()


def test_title_and_raw_input_follow_the_streaming_arguments() -> None:
    mapper = UpdateMapper(CWD)
    text = json.dumps({"path": "src/main.py", "content": "print('hello')\n" * 50})
    updates = stream_call(mapper, "WriteFile", text, 4)
    titles = [u["title"] for u in updates if "title" in u]
    # `{"pa` names nothing yet; the path shows once its string is closed, never half of it
    assert titles == ["WriteFile", "WriteFile: src/main.py", "WriteFile: src/main.py"]
    (streamed,) = updates[1:-1]
    assert streamed["rawInput"] == {"path": "src/main.py"}  # the content's deltas send nothing until the call is complete
    assert updates[-1]["rawInput"] == json.loads(text)
    assert updates[-1]["locations"] == [{"path": "/work/project/src/main.py"}]


def test_a_long_write_file_streams_in_linear_time() -> None:
    """1 MB of content in 16-character deltas: re-reading everything per delta took minutes."""
    mapper = UpdateMapper(CWD)
    text = json.dumps({"path": "big.txt", "content": "0123456789abcdef\n" * 60_000})
    started = time.perf_counter()
    updates = stream_call(mapper, "WriteFile", text, 16)
    elapsed = time.perf_counter() - started
    assert updates[-1]["rawInput"]["path"] == "big.txt"
    assert len(updates[-1]["rawInput"]["content"]) == 17 * 60_000
    assert elapsed < 10.0, elapsed  # ~0.1 s here; the quadratic re-parse needed minutes


def test_a_tool_without_a_title_argument_is_not_read_while_streaming() -> None:
    mapper = UpdateMapper(CWD)
    updates = stream_call(mapper, "SetTodoList", json.dumps({"todos": [{"title": "a", "status": "pending"}]}), 3)
    assert [u["sessionUpdate"] for u in updates] == ["tool_call", "tool_call_update"]
    assert updates[-1]["rawInput"] == {"todos": [{"title": "a", "status": "pending"}]}
