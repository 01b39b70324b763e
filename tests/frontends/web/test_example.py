"""examples/wire_browser: the NDJSON note's example app runs in one command and streams the note's lines."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kimi_acp import decode_event_line
from tests.support.wire_client import scripted_config

APP = Path(__file__).resolve().parents[3] / "examples" / "wire_browser" / "app.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def example(tmp_path: Path, work_dir: Path) -> Iterator[str]:
    config = scripted_config(tmp_path, ["think: adding\ntext: 5", "text: again"])
    argv = [sys.executable, str(APP), "--port", str(_free_port()), "--work-dir", str(work_dir), "--config", str(config)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        match = re.search(r"open (http://\S+)", line)
        assert match, (line, proc.stderr.read() if proc.stderr and proc.poll() is not None else "")
        url = match.group(1)
        for _ in range(100):  # the URL is printed just before uvicorn binds
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_the_example_streams_the_notes_ndjson(example: str) -> None:
    base, token = example.split("/?token=")
    assert httpx.post(base + "/run", json={"prompt": "2+3?"}, timeout=30).status_code == 401
    with httpx.stream("POST", base + "/run", json={"prompt": "2+3?"}, headers={"X-Token": token}, timeout=30) as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [line + "\n" for line in r.iter_lines() if line]
    methods = [json.loads(line)["method"] for line in lines]
    assert methods == ["RunBegin", "TurnBegin", "ReasoningDelta", "TextDelta", "StepEnd", "TurnEnd", "RunEnd"]
    assert decode_event_line(lines[-1]).content == "5"  # type: ignore[union-attr]


@pytest.mark.timeout(120)
def test_the_example_page_in_chromium(example: str, browser_page: Any) -> None:
    from playwright.sync_api import expect

    page = browser_page
    page.goto(example)
    page.fill("#prompt", "2+3?")
    page.press("#prompt", "Enter")
    expect(page.locator("#answer")).to_have_text("5")
    expect(page.locator("#thinking")).to_have_text("adding")
    expect(page.locator("#status")).to_contain_text("done")
