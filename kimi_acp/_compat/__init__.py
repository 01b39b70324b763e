"""Every use of another project's private internals, and nothing else.

The servers start faster by reaching into pydantic, the ACP SDK, the MCP SDK and CPython in ways
those projects do not document (see each module). A new release may change any of it, so every
such use here:

- names the versions it was checked against (`Checked`) and is applied only within them: a
  newer minor release, or one we cannot tell, gets the plain way;
- falls back to the plain way on any exception while it is set up;
- says so in one log line when it is not applied, and why;
- is switched off with `KIMI_PLAIN_STARTUP=1` (all of them) or `KIMI_PLAIN_STARTUP=name,name`
  (those named; the names are the modules' `TRICK`s), which is how bench measures what each buys.

Exit condition: a module goes when bench no longer measures a gain for it over the plain way
(docs/performance.md, "Start-up tricks"), or when the project it reaches into offers a public way.
Tests simulate each private name gone and show start-up falling back and serving
(tests/_compat/test_compat.py).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..util import process_state

PLAIN_ENV = "KIMI_PLAIN_STARTUP"

_said: set[str] = process_state.container(f"{__name__}._said", set())
# said before logging was set up (the tricks run first in the preload)
_notes: list[str] = process_state.container(f"{__name__}._notes", [])


def _log(message: str) -> None:
    import logging

    if logging.getLogger().handlers:
        logging.getLogger(__name__).info(message)
    else:
        _notes.append(message)


def take_notes() -> list[str]:
    """What was said before logging was set up; `startup.logs.setup_logging` logs it."""
    notes = list(_notes)
    _notes.clear()
    return notes


def switched_off(trick: str) -> bool:
    """Whether `KIMI_PLAIN_STARTUP` turns `trick` off ("1" or "all": every trick)."""
    value = os.environ.get(PLAIN_ENV, "").strip()
    if value in ("", "0"):
        return False
    names = {n.strip() for n in value.split(",")}
    return bool(names & {"1", "all", "true", "yes", trick})


@dataclass(frozen=True)
class Checked:
    """A project and the (major, minor) releases a trick was checked against, both ends included."""

    project: str
    lowest: tuple[int, int]
    highest: tuple[int, int]

    def covers(self, version: tuple[int, ...] | None) -> bool:
        return version is not None and self.lowest <= tuple(version[:2]) <= self.highest

    def describe(self) -> str:
        return f"{self.project} {'.'.join(map(str, self.lowest))}–{'.'.join(map(str, self.highest))}"


# The releases the tricks were checked against: CI runs the suite on the newest ones
# pyproject.toml allows, and a smoke job on the lowest (see .ci/run).
PYTHON = Checked("Python", (3, 11), (3, 13))
PYDANTIC = Checked("pydantic", (2, 11), (2, 14))
ACP_SDK = Checked("agent-client-protocol", (0, 12), (0, 12))
MCP_SDK = Checked("mcp", (1, 24), (1, 30))


def applies(trick: str, *checks: tuple[Checked, tuple[int, ...] | None]) -> bool:
    """Whether `trick` may be used now: not switched off, and every version checked.

    Says why in one log line (once per trick) when it may not."""
    reason = None
    if switched_off(trick):
        reason = f"{PLAIN_ENV} is set"
    else:
        for checked, version in checks:
            if not checked.covers(version):
                found = ".".join(map(str, version)) if version else "an unknown version"
                reason = f"{checked.project} is {found}, checked against {checked.describe()}"
                break
    if reason is None:
        return True
    if trick not in _said:
        _said.add(trick)
        _log(f"compat: {trick} not used ({reason}); the plain way instead")
    return False


def fell_back(trick: str, exc: BaseException) -> None:
    """Log the one line of a trick that failed while being set up (the plain way follows)."""
    _log(f"compat: {trick} failed ({type(exc).__name__}: {exc}); the plain way instead")


def python_version() -> tuple[int, ...]:
    return tuple(sys.version_info[:3])


def parse_version(text: str) -> tuple[int, ...] | None:
    """(2, 14, 4) from "2.14.4" (pre-release tails dropped); None for anything else."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(g) for g in match.groups() if g is not None) if match else None


def installed_version(distribution: str, package: str) -> tuple[int, ...] | None:
    """The installed version of `distribution` (whose import name is `package`) without importing
    it, and without `importlib.metadata` (its import is start-up time): the name of its `.dist-info`
    directory beside the package, as installers write it (`pydantic-2.14.4.dist-info`)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    site = Path(spec.origin).parent.parent
    wanted = _normalized(distribution)
    try:
        entries = os.listdir(site)
    except OSError:
        return None
    found = set()
    for entry in entries:
        name, sep, version = entry.removesuffix(".dist-info").rpartition("-")
        if entry.endswith(".dist-info") and sep and _normalized(name) == wanted:
            found.add(parse_version(version))
    return found.pop() if len(found) == 1 else None  # none, or two installs side by side: unknown


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()
