"""One session's sandbox: the mode in force, the machine's mechanism, the private temp dir.

The mode is the session's own choice (the IDE's picker, `/sandbox`; kept in state.json), else the
process's `--sandbox`, else `[sandbox] mode`. With a mode on and a sandbox on this machine
(`confining`), the Shell tool asks nothing and runs each command inside a `Confinement` (the
`kaos.base.CommandSandbox` the Kaos wraps the command with), and edits inside the workspace run
unasked; a command that fails because of the sandbox gets a note saying so (`failure_note`).

It is a core `TurnService`: before a turn it looks for the machine's sandbox (once per process,
off the event loop) and, when the mode asks for one and there is none, tells the user once with a
Wire `Notification` (ACP: a notice, or a line of the agent's message); the session then asks as
before. Closing the session removes the temp dir.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import SandboxSettings
from ..sessions import Session
from ..wire.types import Notification
from . import MODE_TEXT, MODES, Mode

if TYPE_CHECKING:  # the probe and the policy are loaded when a session's mode is on
    from .detect import Machine
    from .policy import SandboxPolicy

log = logging.getLogger(__name__)

OUTSIDE_PARAMETER = "outside_sandbox"
# What a command's output says when the sandbox refused it something (a mount point of the sandbox,
# such as a repository's `.git`, cannot be renamed or removed: "device or resource busy").
_REFUSALS = re.compile(
    r"read-only file system|permission denied|operation not permitted|device or resource busy|"
    r"network is unreachable|"
    r"could not resolve host|temporary failure in name resolution|name or service not known|"
    r"no address associated with hostname|connection refused|failed to connect|couldn't connect|"
    r"no route to host|nodename nor servname|getaddrinfo",
    re.IGNORECASE,
)
_MISSING = re.compile(r"no such file or directory", re.IGNORECASE)


@dataclass(frozen=True)
class Confinement:
    """A command's sandbox: the policy and the mechanism that enforces it (a `CommandSandbox`)."""

    name: str  # "bubblewrap", "landlock", "seatbelt"
    policy: SandboxPolicy
    program: str | None = None

    @property
    def guards_credentials(self) -> bool:
        """Whether it hides the credential files and keeps git's metadata (each repository's
        `.git`) read-only: bubblewrap and Seatbelt do; Landlock only allows, so it does neither,
        and a command naming such a path asks (permissions/command_paths.py)."""
        return self.name != "landlock"

    def wrap(self, argv: Sequence[str], cwd: Path) -> list[str]:
        if self.name == "bubblewrap":
            from .bubblewrap import bwrap_argv

            return bwrap_argv(self.program or "bwrap", self.policy, argv, cwd)
        if self.name == "landlock":
            from .landlock import launcher_argv

            return launcher_argv(self.policy, argv, cwd)
        from .seatbelt import seatbelt_argv

        return seatbelt_argv(self.policy, argv)


class SessionSandbox:
    def __init__(self, session: Session, settings: SandboxSettings | None = None, *, runtime_mode: str | None = None) -> None:
        """`runtime_mode`: `--sandbox` of this process, for a session that chose no mode itself."""
        self._session = session
        self.settings = settings or SandboxSettings()
        self.runtime_mode = runtime_mode
        self._temp: Path | None = None
        self._told = False  # the user heard there is no sandbox here

    # ------------------------------------------------------------------ the mode

    @property
    def mode(self) -> Mode:
        for candidate in (self._session.state.sandbox, self.runtime_mode, self.settings.mode):
            if candidate in MODES:
                return candidate
        return "off"

    def set_mode(self, mode: str) -> None:
        """This session's own choice (persisted); ValueError for an unknown mode."""
        if mode not in MODES:
            raise ValueError(f"unknown sandbox mode {mode!r} (available: {', '.join(MODES)})")
        if self._session.state.sandbox != mode:
            self._session.state.sandbox = mode
            self._session.save_state()
            self._told = False  # a new choice: the next turn says again if there is no sandbox

    # ------------------------------------------------------------------ the machine

    def detect(self) -> Machine:
        """This machine's sandbox (the probe runs once per process: call it off the event loop)."""
        from .detect import machine

        return machine()

    def unavailable_reason(self) -> str | None:
        """Why the mode cannot be enforced here (None: it can, or the mode is off)."""
        if self.mode == "off":
            return None
        found = self.detect()
        if found.backend is None:
            return found.why_not or "this machine has no sandbox"
        if found.backend == "landlock" and found.landlock_abi < 4 and not self.settings.allow_network:
            return f"Landlock ABI {found.landlock_abi} here cannot keep commands off the network (ABI 4 can)"
        return None

    @property
    def confining(self) -> bool:
        """Whether commands run in a sandbox now: a mode on, and one on this machine."""
        return self.mode != "off" and self.unavailable_reason() is None

    def confinement(self, work_dir: Path, dirs: Sequence[Path]) -> Confinement | None:
        """The sandbox of one command in `work_dir` with the workspace `dirs`; None when commands
        run unconfined (mode off, or no sandbox here: they ask, as before)."""
        if not self.confining:
            return None
        from .policy import build_policy

        found = self.detect()
        assert found.backend is not None
        policy = build_policy(self.mode, work_dir=work_dir, dirs=list(dirs), temp_dir=self.temp_dir(),
                              allow_network=self.settings.allow_network)  # fmt: skip
        return Confinement(found.backend, policy, found.program)

    def edits_unasked(self, path: Path, work_dir: Path, dirs: Sequence[Path]) -> bool:
        """Whether an edit of `path` stays inside the sandbox's boundary (workspace-write only)."""
        confinement = self.confinement(work_dir, dirs) if self.mode == "workspace-write" else None
        return confinement is not None and confinement.policy.writes_to(path)

    def temp_dir(self) -> Path:
        """The session's private temp dir (0700), made on first use, removed when the session closes."""
        if self._temp is None or not self._temp.is_dir():
            self._temp = Path(tempfile.mkdtemp(prefix=f"kimi-sandbox-{self._session.id[:8]}-"))
        return self._temp

    # ------------------------------------------------------------------ words

    def describe(self) -> str:
        """The mode in force, in words: `workspace-write (bubblewrap, no network)`, `off`, or
        `workspace-write requested, none on this machine`."""
        mode = self.mode
        if mode == "off":
            return "off"
        if not self.confining:
            return f"{mode} requested, but not enforced: {self.unavailable_reason()}"
        network = "network allowed" if self.settings.allow_network else "no network"
        return f"{mode} ({self.detect().label}, {network})"

    def card_note(self, *, outside_reason: str | None = None) -> str | None:
        """What a Shell approval card says about the sandbox; None when the mode is off."""
        mode = self.mode
        if mode == "off":
            return None
        if not self.confining:
            return (
                f"Runs unconfined: the session asks for the {mode} sandbox, but {self.unavailable_reason()}."
            )
        if outside_reason is not None:
            return f"Runs OUTSIDE the sandbox ({self.describe()}). The model's reason: {outside_reason}"
        return f"Runs inside the sandbox: {self.describe()}."

    def unavailable_notice(self) -> Notification:
        reason = self.unavailable_reason() or "no sandbox is available"
        return Notification(
            id=uuid.uuid4().hex,
            category="sandbox",
            type="sandbox_unavailable",
            title=f"No sandbox: the {self.mode} sandbox cannot be used here",
            body=(
                f"This session asks for the {self.mode} sandbox, but {reason}. Commands and edits "
                "ask for approval as before. On Linux, install bubblewrap (e.g. `apt-get install "
                "bubblewrap`) to run them in the sandbox."
            ),
            severity="warning",
            created_at=time.time(),
        )

    # ------------------------------------------------------------------ TurnService

    async def before_turn(self, send: Callable[[Any], None]) -> None:
        if self.mode == "off" or self._told:
            return
        await asyncio.to_thread(self.detect)  # the probe, once per process, off the event loop
        # Read again after the await (the mode may have been switched off meanwhile): a reason is
        # given only for a mode that is on but cannot be enforced.
        if self.unavailable_reason() is not None and not self._told:
            self._told = True
            log.warning("session %s: %s", self._session.id, self.describe())
            send(self.unavailable_notice())

    def mark_told(self) -> None:
        """The user was told there is no sandbox (by `/sandbox`): no notice at the next turn."""
        self._told = True

    async def aclose(self) -> None:
        temp, self._temp = self._temp, None
        if temp is not None:
            await asyncio.to_thread(shutil.rmtree, temp, True)


def mode_text(mode: str) -> str:
    return MODE_TEXT.get(mode, mode)


def failure_note(confinement: Confinement, output: str) -> str | None:
    """The note a sandboxed command that failed gets when its output shows the sandbox refusing it
    something (a write, a hidden file, the network, the private /tmp); None otherwise."""
    policy = confinement.policy
    hidden = [str(p) for p in (*policy.hidden_dirs, *policy.hidden_files)]
    signs = bool(_REFUSALS.search(output)) or any(h in output for h in hidden)
    if not signs and _MISSING.search(output):
        signs = confinement.name == "bubblewrap" and "/tmp/" in output  # the private /tmp
    if not signs:
        return None
    return (
        f"Note: {sandbox_summary(confinement)} If it failed because of that, call Shell again with "
        f"`{OUTSIDE_PARAMETER}: true` and a `reason`: the user is asked to approve running it outside the sandbox."
    )


def sandbox_summary(confinement: Confinement) -> str:
    """What the sandbox allowed the command, in one or two sentences for the model."""
    policy = confinement.policy
    where = (
        "only the workspace and its temp dir ($TMPDIR)" if policy.writable else "only its temp dir ($TMPDIR)"
    )
    parts = [f"this command ran in the {policy.mode} sandbox ({confinement.name}): it may write {where}"]
    if confinement.name == "bubblewrap":
        parts.append("/tmp is private to the session")
    if confinement.name != "landlock":
        parts.append("credentials and the agent's own files ($KIMI_SHARE_DIR) are hidden")
        parts.append(
            "each repository's .git is read-only, so git commands that change it (add, commit, checkout, "
            "init, config) must run outside the sandbox"
        )
    if not policy.network:
        parts.append("there is no network (not even the host's localhost)")
    return "; ".join(parts) + "."
