"""The rule for what a test needs and this machine lacks: skip locally, fail in CI.

CI sets CI=true. There a missing tool, file or library version a test needs is a failure, never a
skip: a check must not silently turn itself off (`.ci/run` installs what the tests need).
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason` on a developer's machine; fail it in CI."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing requirement is a failure, not a skip; .ci/run must install it)", pytrace=False)
    pytest.skip(reason)
