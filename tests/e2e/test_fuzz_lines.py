"""No input line can crash a server, and every request gets exactly one answer (DESIGN.md 4.6).

10,000 lines of every shape (valid JSON that is not an object, objects with ids and methods of
every type, real method names with junk params, broken JSON, deep nesting, odd encodings) are
written to a real `kimi acp` and a real `kimi --wire`, then one well-formed request. The server
must answer that one, answer each fuzzed request that carries a usable id exactly once, write
nothing but JSON-RPC on stdout, and exit 0 at the end of input. Deterministic: a fixed seed."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_fixtures import acp_env, write_config
from tests.support.wire_client import scripted_config

LINES = 10_000
ACP_METHODS = ["initialize", "session/new", "session/load", "session/prompt", "session/cancel", "session/list",
               "session/set_mode", "session/set_config_option", "session/delete", "authenticate", "logout",
               "session/resume", "session/close", "_kimi/x", "fs/read_text_file", "nonsense", ""]
WIRE_METHODS = ["initialize", "replay", "steer", "cancel", "set_plan_mode", "event", "request", "nonsense", ""]


def junk(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**63, 3.5, -0.0, 10**30])
    if kind == 3:
        return rng.choice(["", "x", "ü" * 5, "\u0000", "\ud800", "a" * 3000, "../../etc/passwd", "null"])
    if kind == 4:
        return rng.choice([[], {}, [None], {"": None}])
    if kind == 5:
        return rng.choice(["cwd", "/", "/nonexistent", "sessionId"])
    if kind == 6:
        return [junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["sessionId", "cwd", "prompt", "protocolVersion", "clientCapabilities", "mcpServers", "user_input",
            "modeId", "configId", "value", "capabilities", "a", "_meta"]
    return {rng.choice(keys): junk(rng, depth + 1) for _ in range(rng.randrange(5))}


def fuzz_lines(methods: list[str], seed: int) -> tuple[list[bytes], set[str]]:
    """The lines, and the ids of the requests among them that must each get one answer."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    answerable: set[str] = set()
    for index in range(LINES):
        shape = rng.randrange(12)
        if shape == 0:
            lines.append(json.dumps(junk(rng)).encode())  # valid JSON, often not an object
        elif shape == 1:
            lines.append(rng.choice([b"{", b"{]", b"\xff\xfe", b"nul", b'{"a":1,}', b"[" * 5000, b'{"id":1']))
        elif shape == 2:
            lines.append(("[" * rng.randrange(50, 200) + "]" * rng.randrange(50, 200)).encode())
        else:
            message: dict[str, Any] = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0", None])}
            if rng.random() < 0.9:
                message["method"] = rng.choice(methods) if rng.random() < 0.9 else junk(rng)
            id_kind = rng.randrange(6)
            if id_kind < 3:
                message["id"] = f"f{index}"
            elif id_kind == 3:
                message["id"] = junk(rng)
            if rng.random() < 0.8:
                message["params"] = junk(rng)
            if rng.random() < 0.1:
                message["result"] = junk(rng)
            if (
                message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str) and message["method"]
                and isinstance(message.get("id"), str) and message["id"].startswith("f")
            ):
                answerable.add(message["id"])
            lines.append(json.dumps(message, ensure_ascii=rng.random() < 0.5).encode(errors="surrogatepass"))
    return lines, answerable


def run_server(argv: list[str], lines: list[bytes], final: dict[str, Any], env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    data = b"\n".join(lines) + b"\n" + json.dumps(final).encode() + b"\n"
    done = subprocess.run(
        [sys.executable, "-m", "kimi_acp", *argv], input=data, capture_output=True, timeout=120, env=env, cwd=cwd
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    answers = []
    for line in done.stdout.splitlines():
        message = json.loads(line)  # stdout is JSON-RPC only
        assert message.get("jsonrpc") == "2.0", message
        answers.append(message)
    return answers


def check(answers: list[dict[str, Any]], answerable: set[str], final_id: str) -> None:
    assert len(answerable) > 1000  # the fuzz really sent requests that must be answered
    responses = Counter(a.get("id") for a in answers if "method" not in a)
    assert responses[final_id] == 1
    missing = sorted(i for i in answerable if responses[i] == 0)
    doubled = sorted(i for i in answerable if responses[i] > 1)
    assert (missing[:5], doubled[:5]) == ([], [])


@pytest.mark.parametrize("seed", [7])
def test_kimi_acp_survives_ten_thousand_fuzzed_lines(share: Path, project: Path, seed: int) -> None:
    write_config(share, [])
    lines, answerable = fuzz_lines(ACP_METHODS, seed)
    final = {"jsonrpc": "2.0", "id": "final", "method": "initialize", "params": {"protocolVersion": 1}}
    env = {**os.environ, **acp_env(share)}
    answers = run_server(["acp"], lines, final, env, project)
    check(answers, answerable, "final")
    assert any(a.get("id") == "final" and "result" in a for a in answers)


@pytest.mark.parametrize("seed", [11])
def test_kimi_wire_survives_ten_thousand_fuzzed_lines(tmp_path: Path, work_dir: Path, seed: int) -> None:
    config = scripted_config(tmp_path, [])
    lines, answerable = fuzz_lines(WIRE_METHODS, seed)
    final = {"jsonrpc": "2.0", "id": "final", "method": "initialize", "params": {"protocol_version": "1.10"}}
    answers = run_server(["--wire", "--work-dir", str(work_dir), "--config-file", str(config)], lines, final, dict(os.environ), work_dir)
    check(answers, answerable, "final")
    assert any(a.get("id") == "final" and "result" in a for a in answers)
