"""`kimi web` as a real process on a scripted model, for the server and browser tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.support.wire_client import scripted_config

URL_LINE = re.compile(r"kimi web: open (http://\S+/\?token=(\S+))")
START_TIMEOUT_S = 30.0


@dataclass
class WebServer:
    proc: subprocess.Popen[str]
    url: str  # the printed URL, token included
    token: str
    work_dir: Path

    @property
    def base(self) -> str:
        return self.url.split("/?token=")[0]

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Kimi-Token": self.token}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


StartWeb = Callable[..., WebServer]


@pytest.fixture
def start_web(tmp_path: Path, work_dir: Path) -> Iterator[StartWeb]:
    """Start `python -m kimi_acp web` on `_scripted_echo` scripts; stopped at teardown."""
    started: list[WebServer] = []

    def start(scripts: Sequence[str], *args: str, config_keys: dict[str, Any] | None = None) -> WebServer:
        """`config_keys` are added to the config (its folder is `tmp_path/cfg<n>`, made here)."""
        directory = tmp_path / f"cfg{len(started)}"
        directory.mkdir(exist_ok=True)
        config = scripted_config(directory, scripts)
        if config_keys:
            config.write_text(json.dumps({**json.loads(config.read_text()), **config_keys}))
        argv = [sys.executable, "-m", "kimi_acp", "web", "--work-dir", str(work_dir), "--config-file", str(config), *args]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        deadline = time.monotonic() + START_TIMEOUT_S
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
            if not line:
                break
            lines.append(line)
            match = URL_LINE.search(line)
            if match:
                server = WebServer(proc, match.group(1), match.group(2), work_dir)
                started.append(server)
                return server
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"kimi web did not print its URL: {''.join(lines)!r} {err!r}")

    yield start
    for server in started:
        server.stop()


CHROMIUM_NAMES = ("chromium", "chromium-browser")
WAIT_MS = 20_000


def _chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        if path := shutil.which(name):
            return path
    return None


@pytest.fixture
def browser_page(unavailable: Callable[[str], NoReturn]) -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        unavailable("not installed: chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        unavailable("not installed: playwright (pip install -e '.[dev]')")
    expect.set_options(timeout=WAIT_MS)  # generous: CI shares two cores
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 820})
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()
