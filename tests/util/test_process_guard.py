"""The agent's process kept from its own commands (kimi_acp/util/process_guard.py, issue #30):
not dumpable once a front end starts, and a refusal by the kernel is a log line, never a failure.
What a command then sees of its parent is played through `kimi --wire` in
tests/e2e/test_secrets_wire.py."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest

from kimi_acp.util import process_guard

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_DUMPABLE is Linux's")


@linux_only
def test_a_process_that_asked_is_no_longer_dumpable_and_its_children_are() -> None:
    private = "import ctypes; private = lambda: ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0\n"  # PR_GET_DUMPABLE
    program = (
        "import subprocess, sys\n"
        "from kimi_acp.util import process_guard as g\n"
        + private
        + "before = private()\n"
        "g.keep_process_private()\n"
        f"child = subprocess.run([sys.executable, '-c', {private + 'print(private())'!r}],"
        " capture_output=True, text=True).stdout.strip()\n"
        "print(before, private(), child)\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["False", "True", "False"], out.stderr


@linux_only
def test_a_refused_prctl_is_logged_once_and_start_up_goes_on(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import ctypes

    class Refusing:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def prctl(self, *args: int) -> int:
            ctypes.set_errno(1)
            return -1

    monkeypatch.setattr(ctypes, "CDLL", Refusing)
    monkeypatch.setattr(process_guard, "_done", False)
    with caplog.at_level(logging.WARNING, logger="kimi_acp.util.process_guard"):
        process_guard.keep_process_private()
        process_guard.keep_process_private()  # once per process: no second try, no second line
    (record,) = caplog.records
    assert "PR_SET_DUMPABLE" in record.getMessage() and "Operation not permitted" in record.getMessage()
