"""`kimi acp` and `kimi --wire` started by hand on a terminal: a one-line hint on stderr, nothing on
stdout, and Ctrl-D quits. `kimi acp --help` says how to log in."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.wire_client import scripted_config

CTRL_D = b"\x04"


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout
    while needle not in data and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    return data


# `kimi-acp` as its console script runs it (no need for the script to be installed).
KIMI_ACP = ["-c", "import sys; sys.argv[0] = 'kimi-acp'; from kimi_acp.cli.main import acp_main; acp_main()"]


def run_on_a_terminal(*args: str, timeout: float = 15) -> tuple[int, bytes, bytes]:
    """`python <args>` with a pseudo-terminal as stdin: wait for the hint, then press Ctrl-D."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, *args], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
    )
    os.close(slave)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        stderr = _read_until(proc.stderr.fileno(), b"\n", timeout)
        os.write(master, CTRL_D)
        out, rest = proc.communicate(timeout=timeout)
        return proc.returncode, out, stderr + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


@pytest.mark.parametrize(("args", "name"), [(["-m", "kimi_acp", "acp"], "kimi acp"), (KIMI_ACP, "kimi-acp")])
def test_acp_on_a_terminal_prints_a_hint_to_stderr_only(args: list[str], name: str) -> None:
    code, out, err = run_on_a_terminal(*args)
    assert code == 0, err
    assert out == b""
    assert err.decode() == (
        f"{name} speaks the Agent Client Protocol on stdin/stdout; start it from your editor "
        "(see `kimi help acp`). Press Ctrl-D to quit.\n"
    )


def test_wire_on_a_terminal_prints_a_hint_to_stderr_only(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, [])
    code, out, err = run_on_a_terminal("-m", "kimi_acp", "--wire", "--work-dir", str(work_dir), "--config-file", str(config))
    assert code == 0, err
    assert out == b""
    lines = err.decode().splitlines()
    assert lines == [
        "kimi --wire speaks the Wire protocol (JSON-RPC 2.0) on stdin/stdout; drive it from a program "
        "(see `kimi help wire`). Press Ctrl-D to quit."
    ]


@pytest.mark.parametrize("args", [["acp"], ["--wire"]])
def test_no_hint_when_stdin_is_not_a_terminal(args: list[str], tmp_path: Path, work_dir: Path) -> None:
    if args == ["--wire"]:
        args = [*args, "--work-dir", str(work_dir), "--config-file", str(scripted_config(tmp_path, []))]
    result = subprocess.run(
        [sys.executable, "-m", "kimi_acp", *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=15
    )
    assert result.returncode == 0
    assert result.stdout == b"" and result.stderr == b""


@pytest.mark.parametrize(
    ("args", "usage"),
    [(["-m", "kimi_acp", "acp", "--help"], "Usage: kimi acp [OPTIONS] [login]"), ([*KIMI_ACP, "--help"], "Usage: kimi-acp [login]")],
)
def test_acp_help_says_how_to_log_in(args: list[str], usage: str) -> None:
    result = subprocess.run([sys.executable, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=15)
    assert result.returncode == 0 and result.stderr == ""
    text = " ".join(result.stdout.split())
    assert text.startswith(usage)
    assert "`kimi login`" in text and "`kimi acp login`" in text and "`kimi-acp login`" in text
    assert "kimi help acp" in text and "KIMI_API_KEY" in text
