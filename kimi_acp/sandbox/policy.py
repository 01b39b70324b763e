"""What a sandboxed command may do: one policy, enforced by bubblewrap, Landlock or Seatbelt.

- **Writable**: the work dir and the additional dirs (`workspace-write`; none in `read-only`), and
  a private temp dir of the session (bubblewrap shows it at `/tmp`; `TMPDIR` names it everywhere).
  Everything else is read-only.
- **Hidden** (not even readable): `$KIMI_SHARE_DIR` but its `skills/` and `plans/`, the credential
  files and directories `permissions/sensitive.py` knows under the home directory (`~/.ssh`,
  `~/.aws/credentials`, `~/.docker/config.json`, `~/.kube/config`, `~/.gnupg`, gh, gcloud and Azure
  tokens, `~/.netrc`, …), a `--config-file` elsewhere, and the sockets of services that would act
  outside the sandbox for whoever connects (container daemons, the D-Bus buses, the user's runtime
  dir with its agents).
- **Read-only inside writable dirs**: each one's `.git/hooks` and `.git/config` (and those of the
  repository a `.git` file points to), which would run code at the user's next git command.
- **Network**: none unless `[sandbox] allow_network = true` (bubblewrap: a network namespace of its
  own, so not even the host's loopback).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..permissions.sensitive import credential_locations

Mode = Literal["off", "workspace-write", "read-only"]
MODES: tuple[Mode, ...] = ("off", "workspace-write", "read-only")
MODE_TEXT = {
    "off": "commands run as before: each asks for approval",
    "workspace-write": "commands run unasked in a sandbox that may write only the workspace and its temp dir",
    "read-only": "commands run unasked in a sandbox that may write only its temp dir",
}
# Talking to one of these is acting outside any sandbox: a container daemon runs what it is asked
# to (as root), the system bus reaches privileged services. The user's session bus and agents live
# in the user's runtime dir, hidden whole.
SERVICE_SOCKETS = (
    "/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock", "/run/containerd/containerd.sock",
    "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket",
)  # fmt: skip


@dataclass(frozen=True)
class SandboxPolicy:
    mode: Mode
    workspace: tuple[Path, ...]  # real paths of the work dir and the additional dirs (readable in any mode)
    writable: tuple[Path, ...]  # those of them a command may write: all in workspace-write, none in read-only
    temp_dir: Path  # the session's private temp dir, always writable
    hidden_dirs: tuple[Path, ...]
    hidden_files: tuple[Path, ...]  # files and sockets
    readable_again: tuple[Path, ...]  # inside hidden dirs, left readable (the share dir's skills/ and plans/)
    read_only: tuple[Path, ...]  # inside writable dirs, kept read-only (.git/hooks, .git/config)
    missing_hooks: tuple[
        Path, ...
    ]  # `.git/hooks` dirs that do not exist: kept from being created where possible
    network: bool

    def hides(self, path: Path) -> bool:
        """Whether a command cannot even read `path` (decided on its real path)."""
        real = Path(os.path.realpath(path))
        if any(within(real, p) for p in self.readable_again):
            return False
        return any(within(real, p) for p in (*self.hidden_dirs, *self.hidden_files))

    def writes_to(self, path: Path) -> bool:
        """Whether the policy lets a command write `path` (decided on its real path)."""
        real = Path(os.path.realpath(path))
        if any(
            within(real, p)
            for p in (*self.read_only, *self.missing_hooks, *self.hidden_dirs, *self.hidden_files)
        ):
            return False
        return any(within(real, root) for root in (*self.writable, self.temp_dir))


def build_policy(
    mode: Mode, *, work_dir: Path, dirs: tuple[Path, ...] | list[Path], temp_dir: Path, allow_network: bool
) -> SandboxPolicy:
    """The policy of one command of a session in `mode` (not "off"), from the state of the disk now
    (which credential files exist, where each `.git` is)."""
    workspace: list[Path] = []
    for directory in (work_dir, *dirs):
        real = Path(os.path.realpath(directory))
        if real.is_dir() and real not in workspace:
            workspace.append(real)
    writable = workspace if mode == "workspace-write" else []
    hidden_dirs, hidden_files, readable_again = credential_locations()
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    if os.path.isdir(runtime):
        hidden_dirs.append(Path(runtime))
    hidden_files += [Path(s) for s in SERVICE_SOCKETS if Path(s).is_socket()]
    read_only: list[Path] = []
    missing: list[Path] = []
    for root in writable:
        for git_dir in _git_dirs(root):
            if not any(within(git_dir, w) for w in writable):
                continue  # outside the workspace: read-only anyway
            hooks, config = git_dir / "hooks", git_dir / "config"
            (read_only if hooks.is_dir() else missing).append(hooks)
            if config.is_file():
                read_only.append(config)
    return SandboxPolicy(
        mode=mode,
        workspace=tuple(workspace),
        writable=tuple(writable),
        temp_dir=Path(os.path.realpath(temp_dir)),
        hidden_dirs=_unique_real(hidden_dirs),
        hidden_files=_unique_real(hidden_files),
        readable_again=_unique_real(readable_again),
        read_only=_unique_real(read_only),
        missing_hooks=_unique_real(missing),
        network=allow_network,
    )


def _git_dirs(root: Path) -> list[Path]:
    """The git directories of a work tree at `root`: `.git`, or the one a `.git` file points to
    (a linked worktree, a submodule) and its common dir."""
    dot = root / ".git"
    if dot.is_dir():
        return [dot]
    if not dot.is_file():
        return []
    try:
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    git_dir = Path(os.path.realpath(root / text[len("gitdir:") :].strip()))
    found = [git_dir] if git_dir.is_dir() else []
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        found.append(Path(os.path.realpath(git_dir / common)))
    except OSError:
        pass
    return found


def _unique_real(paths: list[Path]) -> tuple[Path, ...]:
    """Each path as given and where it really leads (a symlinked `~/.aws` is hidden at both)."""
    out: dict[Path, None] = {}
    for path in paths:
        typed = Path(os.path.abspath(path))
        out[typed] = None
        out[Path(os.path.realpath(typed))] = None
    return tuple(out)


def within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
