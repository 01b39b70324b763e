"""Hook commands for tests: one small Python script whose behaviour the command line chooses, and
which appends every payload it receives to a JSON-lines file."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

HOOK_SCRIPT = r'''
import json, os, sys, time
log, mode = sys.argv[1], sys.argv[2]
reason = sys.argv[3] if len(sys.argv) > 3 else ""
data = json.load(sys.stdin)
data["_env_has_kimi_key"] = "KIMI_API_KEY" in os.environ
data["_pid"] = os.getpid()
with open(log, "a") as f:
    f.write(json.dumps(data) + "\n")
if mode == "allow":
    sys.exit(0)
if mode == "exit2":
    sys.stderr.write(reason)
    sys.exit(2)
if mode == "deny-json":
    out = {"hookSpecificOutput": {"hookEventName": data["hook_event_name"], "permissionDecision": "deny",
                                  "permissionDecisionReason": reason}}
    print(json.dumps(out))
    sys.exit(0)
if mode == "decision-json":
    print(json.dumps({"decision": "block", "reason": reason}))
    sys.exit(0)
if mode == "exit1":
    sys.stderr.write("something went wrong")
    sys.exit(1)
if mode == "crash":
    raise RuntimeError("the hook crashed")
if mode == "garbage":
    print("{this is not json")
    sys.exit(0)
if mode == "sleep":
    time.sleep(float(reason))
    sys.exit(2)  # never reached when killed on time: a late block must not count
raise SystemExit("unknown mode " + mode)
'''


class HookScript:
    """`command(mode, reason)` gives a `[[hooks]]` command; `payloads()` what the hooks received."""

    def __init__(self, directory: Path, name: str = "hook") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.script = directory / f"{name}.py"
        self.script.write_text(HOOK_SCRIPT, encoding="utf-8")
        self.log = directory / f"{name}.jsonl"

    def command(self, mode: str, reason: str = "") -> str:
        parts = [sys.executable, str(self.script), str(self.log), mode] + ([reason] if reason else [])
        return " ".join(shlex.quote(p) for p in parts)

    def payloads(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()]


def hook(event: str, command: str, matcher: str = "", timeout: int | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"event": event, "command": command, "matcher": matcher}
    if timeout is not None:
        entry["timeout"] = timeout
    return entry
