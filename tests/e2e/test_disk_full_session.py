"""A `kimi --wire` session whose share dir fills up: /clear and /compact fail, say so, and keep the
conversation; once there is room again the next turn works on the whole history. The share dir is
a small tmpfs in the server's own mount namespace (issue #21, item 10)."""

from __future__ import annotations

import json
from pathlib import Path

from kimi_acp.sessions import work_dir_key
from tests.support.tmpfs import in_namespace, start_wire_on_tmpfs
from tests.support.wire_client import scripted_config, text_of


def user_prompts(text: str) -> list[str]:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [line["content"] for line in lines if line.get("role") == "user" and isinstance(line.get("content"), str)]


async def test_clear_and_compact_on_a_full_disk_keep_the_conversation(tmp_path: Path, work_dir: Path, unavailable) -> None:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    config = scripted_config(config_dir, ["text: one", "text: two", "text: the summary", "text: fresh start"])
    share = tmp_path / "share"
    wire = await start_wire_on_tmpfs(
        share, "--work-dir", str(work_dir), "--config-file", str(config),
        size_kib=2048, stderr_file=tmp_path / "stderr.txt", unavailable=unavailable,
    )
    try:
        for prompt in ("first", "second"):
            response, _ = await wire.call("prompt", {"user_input": prompt})
            assert response["result"] == {"status": "finished"}
        in_namespace(wire, "dd", "if=/dev/zero", f"of={share / 'filler'}", "bs=4k")  # until the disk is full

        response, seen = await wire.call("prompt", {"user_input": "/clear"})
        assert "The context could not be cleared: No space left on device." in text_of(seen)
        response, seen = await wire.call("prompt", {"user_input": "/compact"})
        assert "error" in response and "No space left on device" in response["error"]["message"]

        assert in_namespace(wire, "rm", str(share / "filler")).returncode == 0
        response, seen = await wire.call("prompt", {"user_input": "next"})
        assert response["result"] == {"status": "finished"} and text_of(seen) == "fresh start"

        session = share / "sessions" / work_dir_key(work_dir)
        listing = in_namespace(wire, "sh", "-c", 'cd "$1"/* && ls -A', "sh", str(session))
        assert listing.returncode == 0, listing.stderr
        names = listing.stdout.split()
        assert "context.jsonl" in names and not [n for n in names if n.startswith(("context_", ".context"))]
        context = in_namespace(wire, "sh", "-c", 'cat "$1"/*/context.jsonl', "sh", str(session))
        assert user_prompts(context.stdout) == ["first", "second", "next"]  # nothing rotated, nothing lost
        response, seen = await wire.call("prompt", {"user_input": "/clear"})  # with room, it works
        assert text_of(seen) == "The context has been cleared."
    finally:
        assert await wire.close() == 0
