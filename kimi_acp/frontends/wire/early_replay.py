"""`replay` answered before the session is loaded. Standard library only, and light: the main
thread imports it before the preload starts.

A client reopening a thread sends `initialize` and then `replay` at once, and used to wait for
the whole background load (config, agent core, tools) before the first event arrived, while the
replay itself is a read of `wire.jsonl` (figures: docs/performance.md, Figures that used to live
in the code). The main thread, which answered `initialize` early (`startup/early.py`), answers such a
`replay` too, straight from the file: every record goes out as it is stored (our recorder writes
exactly the envelope the server would send again).

Only when that is certain; otherwise the request is left to the server, which decodes every
record: no `--session ID` (a new session has no history anyway; `--continue` needs `kimi.json`),
a session directory that does not exist yet, a file of another protocol version (legacy records
are converted by the decoder), or any record this module does not recognise (a torn line, an
unknown type, a request without an id).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from ...util.session_paths import is_valid_session_id, session_dir
from ...wire.protocol import WIRE_PROTOCOL_VERSION

# Envelope types sent as `event` notifications and as `request`s (a subset of wire/types.py's
# EVENT_TYPES and REQUEST_TYPES, checked by a test): any other type goes to the full decoder.
EVENT_NAMES = frozenset(
    {
        "TurnBegin", "TurnEnd", "StepBegin", "StepInterrupted", "StepRetry", "CompactionBegin",
        "CompactionEnd", "MCPLoadingBegin", "MCPLoadingEnd", "StatusUpdate", "Notification",
        "ToolResult", "ApprovalResponse", "SubagentEvent", "BtwBegin", "BtwEnd", "SteerInput",
        "PlanDisplay", "HookTriggered", "HookResolved", "ToolCall", "ToolCallPart", "ContentPart",
    }
)  # fmt: skip
REQUEST_NAMES = frozenset({"ApprovalRequest", "ToolCallRequest", "QuestionRequest", "HookRequest"})
LEGACY_NAMES = {"ApprovalRequestResolved": "ApprovalResponse"}  # as wire/types.py's LEGACY_TYPE_NAMES
MAX_FILE_BYTES = 64 * 1024 * 1024  # larger histories are left to the server (it streams them)


def session_wire_file(options: dict[str, Any]) -> Path | None:
    """The `wire.jsonl` that `kimi --wire --session ID` will open, when that is certain."""
    session_id = options.get("session_id")
    if not isinstance(session_id, str) or options.get("continue_last") or not is_valid_session_id(session_id):
        return None
    directory = session_dir(options["work_dir"] if options.get("work_dir") else Path.cwd(), session_id)
    return directory / "wire.jsonl" if directory.is_dir() else None


Hold = Callable[[], AbstractContextManager[Any]]


def replay_output(path: Path, request_id: Any, hold: Hold = nullcontext) -> bytes | None:
    """Every line the server's `replay` would write (events, history requests, the response),
    or None when some record needs the server's decoder. The file is read first; the rest is
    computation, done inside `hold()` (startup/early.py: the preload thread waits meanwhile, so nothing
    in there may import)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = b""  # the session exists, its history is empty
    except OSError:
        return None
    with hold():
        return _render(raw, request_id)


def _render(raw: bytes, request_id: Any) -> bytes | None:
    lines: list[str] = []
    events = requests = 0
    for n, text in enumerate(raw.split(b"\n")):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        if n == 0 and data.get("type") == "metadata":
            if data.get("protocol_version") != WIRE_PROTOCOL_VERSION:
                return None
            continue
        if n == 0:
            return None  # no metadata line: a legacy (1.1) file
        message = data.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("payload"), dict):
            return None
        kind = message.get("type")
        kind = LEGACY_NAMES.get(kind, kind) if isinstance(kind, str) else kind
        envelope = {"type": kind, "payload": message["payload"]}
        if kind in REQUEST_NAMES:
            history_id = message["payload"].get("id")
            if not isinstance(history_id, str):
                return None
            # Replayed requests are history: clients must not answer them (as the server says).
            lines.append(_line({"jsonrpc": "2.0", "method": "request", "id": history_id, "params": envelope}))
            requests += 1
        elif kind in EVENT_NAMES:
            lines.append(_line({"jsonrpc": "2.0", "method": "event", "params": envelope}))
            events += 1
        else:
            return None
    result = {"status": "finished", "events": events, "requests": requests}
    lines.append(_line({"jsonrpc": "2.0", "id": request_id, "result": result}))
    return "".join(lines).encode("utf-8")


def _line(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"


def answer(message: Any, options: dict[str, Any], hold: Hold = nullcontext) -> bytes | None:
    """The output for a well-formed `replay` request (no params) that can be served now."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "replay":
        return None
    request_id = message.get("id")
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        return None
    if message.get("params") not in (None, {}) or set(message) - {"jsonrpc", "id", "method", "params"}:
        return None
    path = session_wire_file(options)
    return replay_output(path, request_id, hold) if path is not None else None
