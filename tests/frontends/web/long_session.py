"""Generated long sessions for `kimi web`: a wire.jsonl written as the recorder writes one.

`tool_calls(n)`: `n` Shell calls, five per step, ten steps per turn, each step with a line of text.
`records(n)`: `n` records of a varied session (thinking, Markdown with code, reads, edits with
diffs, todo lists, questions), so the page renders every kind of card while it replays.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kimi_acp import sessions
from kimi_acp.wire.file import WireRecorder
from kimi_acp.wire.types import (
    DiffDisplayBlock,
    FunctionBody,
    StatusUpdate,
    StepBegin,
    TextPart,
    ThinkPart,
    TodoDisplayBlock,
    TodoDisplayItem,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolReturnValue,
    TurnBegin,
    TurnEnd,
)

LAST_ANSWER = "The last answer of the long session."


def _call(call_id: str, name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionBody(name=name, arguments=json.dumps(args)))


def _status(n: int) -> StatusUpdate:
    return StatusUpdate(token_usage=TokenUsage(input_other=1000 + n, output=50), message_id=f"m{n}")


def tool_call_messages(n: int) -> Iterator[Any]:
    call = 0
    turn = 0
    while call < n:
        turn += 1
        yield TurnBegin(user_input=f"Turn {turn}: run the checks")
        for step in range(1, 11):
            if call >= n:
                break
            yield StepBegin(n=step)
            yield TextPart(text=f"Step {step} of turn {turn}: running five commands.")
            ids = [f"c{call + k}" for k in range(min(5, n - call))]
            for call_id in ids:
                yield _call(call_id, "Shell", {"command": f"echo {call_id} && ls -la src/"})
            yield _status(call)
            for call_id in ids:
                yield ToolResult(tool_call_id=call_id, return_value=ToolReturnValue(
                    is_error=False, output=f"{call_id}\ntotal 8\n-rw-r--r-- 1 me me 120 a.py\n", message="Command executed successfully."))  # fmt: skip
            call += len(ids)
        yield StepBegin(n=11)
        yield TextPart(text=LAST_ANSWER if call >= n else f"Turn {turn} done: **all checks passed**.")
        yield _status(call)
        yield TurnEnd()


def varied_messages(n: int) -> Iterator[Any]:
    """At least `n` records, then the end of the turn (its last text is LAST_ANSWER)."""
    count = 0
    turn = 0
    while True:
        turn += 1
        out: list[Any] = [TurnBegin(user_input=f"Question {turn}: fix the parser"), StepBegin(n=1),
                          ThinkPart(think=f"Thinking about turn {turn}: the parser misses a case."),
                          TextPart(text=f"## Turn {turn}\n\nI will read `parser.py`, then edit it:\n\n```python\ndef parse(s):\n    return s.split(',')\n```\n")]  # fmt: skip
        c = f"t{turn}"
        out += [_call(c + "r", "ReadFile", {"path": "parser.py"}), _call(c + "w", "StrReplaceFile", {"path": "parser.py", "edit": {"old": "a", "new": "b"}}),
                _call(c + "t", "SetTodoList", {"todos": [{"title": "Read", "status": "done"}, {"title": "Edit", "status": "in_progress"}]}),
                _status(turn)]  # fmt: skip
        out.append(ToolResult(tool_call_id=c + "r", return_value=ToolReturnValue(
            is_error=False, output="".join(f"{i:6}\tline {i}\n" for i in range(1, 40)), message="Read 39 lines.")))  # fmt: skip
        diff = DiffDisplayBlock(path="/p/parser.py", old_text="x = 1\ny = 2\nz = 3\n", new_text="x = 1\ny = 20\nz = 3\n",
                                old_start=10 + turn, new_start=10 + turn)  # fmt: skip
        out.append(ToolResult(tool_call_id=c + "w", return_value=ToolReturnValue(is_error=False, message="File successfully edited.", display=[diff])))
        todo = TodoDisplayBlock(items=[TodoDisplayItem(title="Read", status="done"), TodoDisplayItem(title="Edit", status="in_progress")])
        out.append(ToolResult(tool_call_id=c + "t", return_value=ToolReturnValue(is_error=False, output="Todo list updated", display=[todo])))
        count += len(out) + 4
        last = count >= n
        out += [StepBegin(n=2), TextPart(text=LAST_ANSWER if last else f"Done with turn {turn}: the parser now handles `y = 20`."),
                _status(turn), TurnEnd()]  # fmt: skip
        yield from out
        if last:
            return


def write_session(work_dir: Path, messages: Iterator[Any]) -> tuple[str, int]:
    """A new session of `work_dir` holding `messages`; its id and how many records were written."""
    session = sessions.create(work_dir)
    recorder = WireRecorder(session.wire_file)
    for message in messages:
        recorder.record(message)
    recorder.close()
    with open(session.wire_file, encoding="utf-8") as f:
        records = sum(1 for _ in f) - 1  # the metadata line is not a record
    return session.id, records
