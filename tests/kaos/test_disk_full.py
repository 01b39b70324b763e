"""A full disk, on a real (small) tmpfs: a write never leaves the user's file truncated, and a
compaction that cannot write keeps the conversation (issue #21, items 9 and 10)."""

from __future__ import annotations

import errno
from pathlib import Path

from tests.support.tmpfs import run_on_tmpfs

WRITE = '''
import asyncio
from types import SimpleNamespace

from kimi_acp.kaos.local import LocalKaos
from kimi_acp.tools.write import write_or_error

target = MNT / "notes.txt"
old = b"old line\\n" * 20000  # ~180 KiB: truncating it would free room for part of the new text
target.write_bytes(old)
fill_disk(leave=64 * 1024)
big = "new line\\n" * 60000  # ~540 KiB: more than the free space plus the old file
error = None
try:
    asyncio.run(LocalKaos().write_text(target, big))
except OSError as exc:
    error = exc.errno
tool = asyncio.run(write_or_error(SimpleNamespace(kaos=LocalKaos(), checkpoints=None), target, big))
appended = None
try:
    asyncio.run(LocalKaos().write_text(target, big, append=True))
except OSError as exc:
    appended = exc.errno
print(json.dumps({
    "errno": error,
    "append_errno": appended,
    "tool_error": tool.is_error,
    "tool_message": tool.message,
    "intact": target.read_bytes() == old,
    "files": sorted(p.name for p in MNT.iterdir()),
}))
'''


def test_a_write_that_does_not_fit_leaves_the_old_file_whole(tmp_path: Path, unavailable) -> None:
    got = run_on_tmpfs(WRITE, size_kib=1024, mountpoint=tmp_path / "mnt", unavailable=unavailable)
    assert got["errno"] == errno.ENOSPC and got["append_errno"] == errno.ENOSPC
    assert got["tool_error"] is True
    assert got["tool_message"] == f"Failed to write `{tmp_path / 'mnt' / 'notes.txt'}`: No space left on device."
    assert got["intact"] is True  # byte for byte the old content
    assert got["files"] == ["filler", "notes.txt"]  # no temp file left behind


ROTATE = '''
from kimi_acp.core.context import Context
from kimi_acp.llm.types import Message

path = MNT / "session" / "context.jsonl"
path.parent.mkdir()
ctx = Context(path)
ctx.start("the prompt")
ctx.append([Message(role="user", content="question " * 500), Message(role="assistant", content="answer")])
ctx.set_token_count(100)
ctx.close()
fill_disk()

summary = Message(role="user", content="summary " * 5000)
rotate_errno = None
try:
    ctx.rotate("a new prompt", [summary], 10)
except OSError as exc:
    rotate_errno = exc.errno
after_rotate = {"roles": [m.role for m in ctx.history], "prompt": ctx.system_prompt, "tokens": ctx.token_count}
on_disk = [m.role for m in Context.load(path).history]
files_after = sorted(p.name for p in path.parent.iterdir())

append_errno = None
try:  # bigger than any slack in the file's last page: refused by the disk
    ctx.append([Message(role="user", content="x" * 20000)])
except OSError as exc:
    append_errno = exc.errno
roles_after_append = [m.role for m in ctx.history]

free_disk()
ctx.append([Message(role="user", content="still here")])  # the same object goes on
ctx.close()
reloaded = Context.load(path)
ctx.rotate("a new prompt", [summary], 10)  # and with room, the compaction works
ctx.close()
print(json.dumps({
    "rotate_errno": rotate_errno,
    "after_rotate": after_rotate,
    "on_disk": on_disk,
    "files_after": files_after,
    "append_errno": append_errno,
    "roles_after_append": roles_after_append,
    "reloaded": [m.text() for m in reloaded.history],
    "reloaded_prompt": reloaded.system_prompt,
    "rotated": [m.text()[:7] for m in Context.load(path).history],
    "files_end": sorted(p.name for p in path.parent.iterdir()),
}))
'''


def test_a_compaction_on_a_full_disk_keeps_the_history_and_the_session_goes_on(tmp_path: Path, unavailable) -> None:
    got = run_on_tmpfs(ROTATE, size_kib=512, mountpoint=tmp_path / "mnt", unavailable=unavailable)
    assert got["rotate_errno"] == errno.ENOSPC
    assert got["after_rotate"] == {"roles": ["user", "assistant"], "prompt": "the prompt", "tokens": 100}
    assert got["on_disk"] == ["user", "assistant"]
    assert got["files_after"] == ["context.jsonl"]  # neither the new file nor a rotation left behind
    assert got["append_errno"] == errno.ENOSPC
    assert got["roles_after_append"] == ["user", "assistant"]  # what the disk refused is not kept
    assert got["reloaded"][1:] == ["answer", "still here"]  # the refused (torn) line is skipped
    assert got["reloaded_prompt"] == "the prompt"
    assert got["rotated"] == ["summary"]
    assert got["files_end"] == ["context.jsonl", "context_1.jsonl"]
