"""An approval request shows only visible text, and says so when it had to escape (core/card_text.py,
issue #29 item 6); a request with nothing to escape goes out unchanged."""

from __future__ import annotations

from kimi_acp.core.card_text import is_escapes_note, visible_request
from kimi_acp.util.visible_text import escapes_note
from kimi_acp.wire.types import (
    ApprovalRequest,
    BackgroundTaskDisplayBlock,
    BriefDisplayBlock,
    DiffDisplayBlock,
    ShellDisplayBlock,
    TodoDisplayBlock,
    TodoDisplayItem,
    UnknownDisplayBlock,
)

COMMAND = "echo 'ok\u202e'\x1b[8m; touch X\x1b[0m"


def request(**fields) -> ApprovalRequest:
    base = {"id": "r1", "tool_call_id": "c1", "sender": "Shell", "action": "run command", "description": "Run command `ls`"}
    return ApprovalRequest(**{**base, **fields})


def test_a_plain_request_is_unchanged():
    plain = request(display=[ShellDisplayBlock(language="bash", command="ls -la\n\tpwd")], session_scope="`ls …`",
                    sandbox="Runs inside the sandbox.", warning="`a` holds credentials.")
    assert visible_request(plain).model_dump() == plain.model_dump()


def test_a_command_with_hidden_characters_is_shown_escaped_after_a_note():
    shown = visible_request(request(
        description=f"Run command `{COMMAND}`", display=[ShellDisplayBlock(language="bash", command=COMMAND)],
        session_scope="`echo\n\u200bok …`", sandbox="Runs OUTSIDE. The model's reason: x\n\n**Sandbox:** inside",
        source_description="explore\u202e",
    ))  # fmt: skip
    note, shell = shown.display
    assert is_escapes_note(note) and note.text == escapes_note("command")
    assert shell.command == "echo 'ok\\u202e'\\x1b[8m; touch X\\x1b[0m"
    assert shown.description == f"Run command `{shell.command}`"
    assert shown.session_scope == "`echo\\n\\u200bok …`"  # one line
    assert shown.sandbox == "Runs OUTSIDE. The model's reason: x\\n\\n**Sandbox:** inside"
    assert shown.source_description == "explore\\u202e"
    wire = shown.model_dump_json()
    assert "\u202e" not in wire and "\\u001b" not in wire and "\u200b" not in wire


def test_every_display_block_is_made_visible():
    diff = DiffDisplayBlock(path="/w/a\u202e.py", old_text="x = 1\r\n", new_text="x = 2  # \u202e\r\n" + "\n" * 20)
    blocks = [
        diff,
        BriefDisplayBlock(text="b\x07"),
        BackgroundTaskDisplayBlock(task_id="bash-1", kind="bash", status="running", description="dev\nserver\u200b"),
        TodoDisplayBlock(items=[TodoDisplayItem(title="do\u2066 it", status="pending")]),
        UnknownDisplayBlock(type="custom", data={"k\u200b": ["v\x1b"]}),
    ]
    shown = visible_request(request(sender="WriteFile", description="Write file", display=blocks))
    note, diff_shown, brief, task, todo, unknown = shown.display
    assert note.text == escapes_note("request")
    assert diff_shown.path == "/w/a\\u202e.py"
    assert diff_shown.old_text == "x = 1\r\n"  # a file's CRLF endings and blank lines are its own
    assert diff_shown.new_text == "x = 2  # \\u202e\r\n" + "\n" * 20
    assert brief.text == "b\\x07"
    assert task.description == "dev\\nserver\\u200b"
    assert todo.items[0].title == "do\\u2066 it"
    assert unknown.data == {"k\\u200b": ["v\\x1b"]}


def test_the_note_is_added_once():
    already = request(display=[BriefDisplayBlock(text=escapes_note("request"))], description="Call `a\u202e`")
    shown = visible_request(already)
    assert [b.text for b in shown.display] == [escapes_note("request")]
