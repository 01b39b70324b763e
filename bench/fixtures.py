"""What a measure runs against: temp share dirs with a config.toml, scripts for `_scripted_echo`,
the fake model process, and session histories generated directly in Kimi's on-disk format.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# Variables that would override the config we write (the agent's env overrides, §4.1 of the design).
_OVERRIDES = ("KIMI_", "OPENAI_", "ANTHROPIC_", "MOONSHOT_")


class Workspace:
    """A temp root for one benchmark invocation; every share dir and work dir lives under it."""

    def __init__(self, keep: bool = False) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="kimi-bench-"))
        self.keep = keep
        self._n = 0

    def new_dir(self, label: str) -> Path:
        self._n += 1
        path = self.root / f"{self._n:04d}-{label}"
        path.mkdir(parents=True)
        return path

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class Share:
    """A `$KIMI_SHARE_DIR` with its config, and a work dir to open sessions in."""

    dir: Path
    work_dir: Path
    scripts: Path | None = None

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_OVERRIDES)}
        # as installed: with a bytecode cache (a dev shell's PYTHONDONTWRITEBYTECODE would make
        # every start compile each module changed since its .pyc was written)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["KIMI_SHARE_DIR"] = str(self.dir)
        env["PYTHONUNBUFFERED"] = "1"
        if self.scripts is not None:
            # Kimi Code CLI reads the scripts from its own environment, ours from the provider's `env`
            env["KIMI_SCRIPTED_ECHO_SCRIPTS"] = str(self.scripts)
        env.update(extra or {})
        return env

    def new_work_dir(self, label: str) -> Path:
        path = self.dir.parent / label
        path.mkdir(parents=True, exist_ok=True)
        return path


SCHEMA_INDEX_SNIPPET = "import sys; from kimi_acp._compat.acp_schema_index import write_index; sys.exit(0 if write_index() else 1)"


def prime_schema_index(acp_cmd: Sequence[str], cache_dir: Path) -> bool:
    """Cache kimi-acp's ACP schema index in `cache_dir`, as every start after the first finds it on
    a user's machine (the first start writes it after its first session). Only for a command of
    the form `PYTHON -m kimi_acp ...`; False otherwise or when it fails."""
    import subprocess

    if len(acp_cmd) < 3 or list(acp_cmd[1:3]) != ["-m", "kimi_acp"]:
        return False
    env = {**os.environ, "KIMI_CACHE_DIR": str(cache_dir)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([acp_cmd[0], "-c", SCHEMA_INDEX_SNIPPET], env=env, capture_output=True, timeout=60)
    return done.returncode == 0


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string with ASCII escapes is a valid TOML basic string


def make_share(
    workspace: Workspace,
    label: str,
    model: str,
    *,
    scripts: Sequence[str] = (),
    port: int | None = None,
    features: bool = False,
) -> Share:
    """A share dir whose default model is `scripted` (`_scripted_echo` playing `scripts`) or
    `loopback` (`openai_legacy` at the fake model on `port`).

    `features`: also what a user with MCP, skills and web tools set up has, none of it used by
    the session measured: skills in `skills/`, an `mcp.json` without servers, `[services.*]`."""
    base = workspace.new_dir(label)
    share_dir = base / "share"
    work_dir = base / "work"
    share_dir.mkdir()
    work_dir.mkdir()
    scripts_file = base / "scripts.json"
    scripts_file.write_text(json.dumps(list(scripts)), encoding="utf-8")
    # telemetry off: Kimi Code CLI would otherwise send events (we have none; the key is ignored)
    lines = [f"default_model = {_toml_str(model)}", "telemetry = false", ""]
    lines += [
        "[models.scripted]",
        'provider = "scripted_provider"',
        'model = "scripted_echo"',
        "max_context_size = 1000000",
        "",
        "[providers.scripted_provider]",
        'type = "_scripted_echo"',
        'base_url = ""',
        'api_key = ""',
        f"env = {{ KIMI_SCRIPTED_ECHO_SCRIPTS = {_toml_str(str(scripts_file))} }}",
        "",
    ]
    if port is not None:
        lines += [
            "[models.loopback]",
            'provider = "loopback_provider"',
            'model = "bench"',
            "max_context_size = 1000000",
            "",
            "[providers.loopback_provider]",
            'type = "openai_legacy"',
            f'base_url = "http://127.0.0.1:{port}/v1"',
            'api_key = "sk-bench"',
            "",
        ]
    if features:
        lines += _features(share_dir)
    (share_dir / "config.toml").write_text("\n".join(lines), encoding="utf-8")
    return Share(share_dir, work_dir, scripts_file)


FEATURE_SKILLS = 8


def _features(share_dir: Path) -> list[str]:
    """Skills, an empty `mcp.json` and web services: installed, configured, not used."""
    for i in range(FEATURE_SKILLS):
        skill = share_dir / "skills" / f"bench-skill-{i}"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: bench-skill-{i}\ndescription: Benchmark skill {i}, never used.\n---\n\n"
            + "Do the thing carefully.\n" * 20,
            encoding="utf-8",
        )
    (share_dir / "mcp.json").write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    lines = []
    for name in ("moonshot_search", "moonshot_fetch"):
        # port 9 (discard) on loopback: never contacted by the measured sessions
        lines += [f"[services.{name}]", 'base_url = "http://127.0.0.1:9/v1"', 'api_key = "sk-unused"', ""]
    return lines


def text_script(texts: Sequence[str]) -> str:
    """An echo-DSL script streaming each text as one chunk.

    The DSL strips each line and then one pair of outer quotes (no escapes), so a text with edge
    spaces is written quoted: `text: "c0001 "`.
    """
    return "\n".join(f'text: "{t}"' if t != t.strip() or t[:1] in "'\"" else f"text: {t}" for t in texts)


# --------------------------------------------------------------------------- the fake model process


@dataclass
class FakeModel:
    proc: asyncio.subprocess.Process
    port: int


@contextlib.asynccontextmanager
async def fake_model() -> AsyncIterator[FakeModel]:
    """`python -m bench.fake_model` as a child; yields its port, always stopped afterwards."""
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.fake_model",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        cwd=root,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 15)
        if not line.startswith(b"PORT "):
            raise RuntimeError(f"fake model did not start: {line!r}")
        yield FakeModel(proc, int(line.split()[1]))
    finally:
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 3)
            except TimeoutError:
                proc.kill()
                await proc.wait()


# --------------------------------------------------------------------------- session histories


def work_dir_key(work_dir: Path) -> str:
    """Kimi's bucket name: md5 of the absolute, normalized (not symlink-resolved) work dir."""
    canonical = os.path.normpath(os.path.abspath(os.path.expanduser(str(work_dir))))
    return hashlib.md5(canonical.encode("utf-8")).hexdigest()


@dataclass
class History:
    session_id: str
    work_dir: Path
    turns: int
    tool_turns: int
    wire_records: int  # message lines in wire.jsonl (what Wire `replay` sends)
    bytes: int  # size of wire.jsonl + context.jsonl


USER_TEXT = "Please look at module {i} and explain what the function `handle_{i}` does, briefly."
ANSWER_TEXT = (
    "The function `handle_{i}` validates its input, looks the key up in the cache and falls back to "
    "the database when the entry is missing or stale. Errors are logged with the request id and "
    "re-raised as `ServiceError` so the caller can retry. It is called from the HTTP layer for every "
    "request to `/items/{i}`, which is why its latency matters. A small refactor would separate the "
    "cache policy from the lookup itself."
)
TOOL_OUTPUT = "".join(
    f"{n:6d}\tdef line_{n}(value):  # some code of the file being read\n" for n in range(1, 25)
)


def build_history(
    share_dir: Path, work_dir: Path, turns: int = 500, tool_turns: int = 20, session_id: str | None = None
) -> History:
    """Write context.jsonl, wire.jsonl and state.json of a session with `turns` turns, the last
    `tool_turns`-spread ones with a ReadFile call and its result, as the agent would have."""
    session_id = session_id or str(uuid.uuid4())
    canonical = Path(os.path.normpath(os.path.abspath(str(work_dir))))
    directory = share_dir / "sessions" / work_dir_key(canonical) / session_id
    directory.mkdir(parents=True, exist_ok=True)
    every = max(1, turns // tool_turns) if tool_turns else 0
    tool_set = {t for t in range(turns) if every and t % every == every // 2}
    tool_set = set(sorted(tool_set)[:tool_turns])
    ts = time.time() - turns * 10
    wire = [json.dumps({"type": "metadata", "protocol_version": "1.10"})]
    context = [
        json.dumps({"role": "_system_prompt", "content": "You are a benchmark agent."}),
        json.dumps({"role": "_checkpoint", "id": 0}),
    ]
    checkpoint = 1
    tokens = 300

    def record(kind: str, payload: dict) -> None:
        nonlocal ts
        ts += 0.01
        wire.append(
            json.dumps({"timestamp": ts, "message": {"type": kind, "payload": payload}}, ensure_ascii=False)
        )

    def ctx(entry: dict) -> None:
        context.append(
            json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
            if not entry["role"].startswith("_")
            else json.dumps(entry)
        )

    def status() -> None:
        record(
            "StatusUpdate",
            {
                "context_usage": tokens / 1_000_000,
                "context_tokens": tokens,
                "max_context_tokens": 1_000_000,
                "token_usage": None,
                "message_id": None,
                "plan_mode": False,
                "mcp_status": None,
            },
        )

    for turn in range(turns):
        user = USER_TEXT.format(i=turn)
        answer = ANSWER_TEXT.format(i=turn)
        record("TurnBegin", {"user_input": user})
        record("StepBegin", {"n": 1})
        ctx({"role": "_checkpoint", "id": checkpoint})
        checkpoint += 1
        ctx({"role": "user", "content": user})
        ctx({"role": "_checkpoint", "id": checkpoint})
        checkpoint += 1
        if turn in tool_set:
            call_id = f"tool_{turn}"
            arguments = json.dumps({"path": f"src/module_{turn}.py"})
            record("ContentPart", {"type": "text", "text": "Let me read the file."})
            call = {
                "type": "function",
                "id": call_id,
                "function": {"name": "ReadFile", "arguments": arguments},
            }
            record("ToolCall", {**call, "extras": None})
            status()
            result = {
                "is_error": False,
                "output": TOOL_OUTPUT,
                "message": "Read 24 lines (1-24) of 24. End of file reached.",
                "display": [{"type": "brief", "text": "Read 24 lines"}],
                "extras": None,
            }
            record("ToolResult", {"tool_call_id": call_id, "return_value": result})
            ctx(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Let me read the file."}],
                    "tool_calls": [call],
                }
            )
            ctx(
                {
                    "role": "tool",
                    "content": [
                        {"type": "text", "text": f"<system>{result['message']}</system>"},
                        {"type": "text", "text": TOOL_OUTPUT},
                    ],
                    "tool_call_id": call_id,
                }
            )
            tokens += len(TOOL_OUTPUT) // 4
            ctx({"role": "_usage", "token_count": tokens})
            ctx({"role": "_checkpoint", "id": checkpoint})
            checkpoint += 1
            record("StepBegin", {"n": 2})
        record("ContentPart", {"type": "text", "text": answer})
        tokens += (len(user) + len(answer)) // 4
        status()
        record("TurnEnd", {})
        ctx({"role": "assistant", "content": [{"type": "text", "text": answer}]})
        ctx({"role": "_usage", "token_count": tokens})

    (directory / "wire.jsonl").write_text("\n".join(wire) + "\n", encoding="utf-8")
    (directory / "context.jsonl").write_text("\n".join(context) + "\n", encoding="utf-8")
    state = {
        "version": 1,
        "approval": {"yolo": False, "afk": False, "auto_approve_actions": []},
        "additional_dirs": [],
        "custom_title": f"Benchmark history ({turns} turns)",
        "plan_mode": False,
        "todos": [],
        "work_dir": str(canonical),
    }
    (directory / "state.json").write_text(json.dumps(state, indent=2), encoding="utf-8")
    _remember_work_dir(share_dir, canonical, session_id)
    size = (directory / "wire.jsonl").stat().st_size + (directory / "context.jsonl").stat().st_size
    return History(session_id, canonical, turns, len(tool_set), len(wire) - 1, size)


def _remember_work_dir(share_dir: Path, work_dir: Path, session_id: str) -> None:
    """`kimi.json`: Kimi Code CLI finds a session's bucket only through this list of work dirs."""
    path = share_dir / "kimi.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {"work_dirs": []}
    entries = [e for e in data.get("work_dirs", []) if e.get("path") != str(work_dir)]
    entries.append({"path": str(work_dir), "kaos": "local", "last_session_id": session_id})
    data["work_dirs"] = entries
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def copy_history(share_dir: Path, history: History) -> History:
    """The same session under a new id (to load it again in the same process, cold)."""
    source = share_dir / "sessions" / work_dir_key(history.work_dir) / history.session_id
    new_id = str(uuid.uuid4())
    shutil.copytree(source, source.parent / new_id)
    return History(
        new_id, history.work_dir, history.turns, history.tool_turns, history.wire_records, history.bytes
    )
