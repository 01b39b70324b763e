"""The Landlock launcher on this machine (issue #24): it restricts itself, then runs the command;
writes land only beneath the writable dirs, TCP connections are refused, and a restriction that
cannot be applied never runs the command unconfined."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from kimi_acp.sandbox.landlock import LAUNCHER, landlock_abi


@pytest.fixture(autouse=True)
def _landlock(unavailable: Callable[[str], NoReturn]) -> None:
    if landlock_abi() < 4:
        unavailable(f"the kernel's Landlock ABI is {landlock_abi()} (4 or later refuses TCP)")


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback TCP port that accepts connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def launch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip


def test_writes_land_inside_only_and_tcp_is_refused(tmp_path: Path, listener: int) -> None:
    inside, outside, temp = tmp_path / "inside", tmp_path / "outside", tmp_path / "temp"
    for d in (inside, outside, temp):
        d.mkdir()
    script = (
        "touch inside/ok && mkdir inside/sub && mv inside/ok inside/sub/ok && echo wrote; "
        "touch outside/no 2>&1; echo x > /dev/null && echo devnull; echo $TMPDIR; touch $TMPDIR/t && echo temp; "
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener}), timeout=5)' 2>&1 | tail -1"
    )
    done = launch("--write", str(inside), "--write", str(temp), "--no-network", "--tmpdir", str(temp), "--",
                  "/bin/sh", "-c", script, cwd=tmp_path)  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0] == "wrote" and (inside / "sub" / "ok").exists()
    assert "Permission denied" in lines[1] and not (outside / "no").exists()
    assert lines[2:5] == ["devnull", str(temp), "temp"]
    assert "PermissionError" in lines[5] and "Permission denied" in lines[5]  # connect(2): EACCES


def test_with_the_network_allowed_tcp_goes_through(tmp_path: Path, listener: int) -> None:
    script = (
        f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=5); print('connected')"
    )
    done = launch("--write", str(tmp_path), "--", sys.executable, "-c", script, cwd=tmp_path)
    assert done.stdout.strip() == "connected", done.stderr


def test_the_restriction_is_inherited_and_cannot_be_lifted(tmp_path: Path) -> None:
    """A child of the command, and the launcher run again inside, are as restricted."""
    (tmp_path / "w").mkdir()
    nested = (
        f"{sys.executable} -I -S {LAUNCHER} --write {tmp_path} -- /bin/sh -c 'touch {tmp_path}/escaped' 2>&1"
    )
    done = launch("--write", str(tmp_path / "w"), "--", "/bin/sh", "-c", nested, cwd=tmp_path)
    assert "Permission denied" in done.stdout and not (tmp_path / "escaped").exists()


def test_a_bad_call_never_runs_the_command(tmp_path: Path) -> None:
    done = launch("--bogus", "--", "/bin/sh", "-c", f"touch {tmp_path}/ran", cwd=tmp_path)
    assert done.returncode == 126 and "unknown option" in done.stderr and not (tmp_path / "ran").exists()
    done = launch("--write", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 126 and "no command" in done.stderr
