"""`kimi acp` driven from Node by the official TypeScript SDK (`@agentclientprotocol/sdk`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.acp_fixtures import write_config
from tests.support.wire_client import tool_call

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


def _node_ready() -> None:
    """Make sure the pinned SDK is installed (the marker already skipped, or failed in CI, without node/npm)."""
    if not (NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run(
            ["npm", "ci" if (NODE_DIR / "package-lock.json").exists() else "install", "--no-audit", "--no-fund"],
            cwd=NODE_DIR, check=True, capture_output=True, timeout=300,
        )


@pytest.mark.requires_tool("node", "npm")  # skipped without them, but a failure in CI (tests/conftest.py)
def test_typescript_sdk_client_runs_a_session(tmp_path: Path) -> None:
    _node_ready()
    share = tmp_path / "share"
    share.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    write_config(
        share,
        ["text: Hello, Node", tool_call("s1", "Shell", {"command": "echo node-ok"}), "text: ran it"],
    )
    env = {**os.environ, "KIMI_SHARE_DIR": str(share)}
    completed = subprocess.run(
        ["node", str(NODE_DIR / "client.mjs"), sys.executable, str(project)],
        cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["protocolVersion"] == 1 and result["agentName"] == "kimi-acp"
    assert result["modes"] == ["default", "yolo", "plan"]
    assert result["stopReasons"] == ["end_turn", "end_turn"]
    assert result["text"] == "Hello, Noderan it"
    assert result["toolCalls"] == [{"title": "Shell: echo node-ok", "kind": "execute"}]
    assert result["finalStatuses"][-1] == "completed"
    assert result["permissions"] == [{"title": "Shell: echo node-ok", "options": ["approve", "approve_for_session", "reject"]}]
    assert result["listed"] == [result["sessionId"]]
    assert result["modeAfterSet"] == "yolo"
