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
- **Read-only inside writable dirs**: git's metadata of each repository of the workspace: its `.git`
  (a directory or a `.git` file), the git dir a `.git` file points to and that one's common dir,
  and the `.git` files of its submodules. What is there decides what git runs (`config`'s
  `core.fsmonitor`, `hooks/`, a planted `commondir` that sends git to another `config`), so none
  of it may change, nor may `.git` be renamed or replaced. A writable dir without a `.git` may
  not get one either (a planted repository would be the user's next `git status` there). A
  mount-based sandbox cannot keep git's own writes (the index, refs) apart from a planted
  `commondir` in the same directory, so git commands that change the repository (add, commit,
  init) fail inside and run outside, with a question (docs/security.md).
- **Network**: none unless `[sandbox] allow_network = true` (bubblewrap: a network namespace of its
  own, so not even the host's loopback).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..permissions.sensitive import credential_locations
from ..util.regular_file import open_regular
from . import Mode

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
    read_only: tuple[Path, ...]  # inside writable dirs, kept read-only: git's metadata (files and dirs)
    missing_git: tuple[Path, ...]  # `.git` of a writable workspace dir that has none: not to be made
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
            for p in (*self.read_only, *self.missing_git, *self.hidden_dirs, *self.hidden_files)
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
    metadata: list[Path] = []
    missing: list[Path] = []
    for root in writable:
        if not os.path.lexists(root / ".git"):
            missing.append(root / ".git")
            continue
        # outside the writable dirs, read-only anyway
        metadata += [path for path in git_metadata(root) if any(within(path, w) for w in writable)]
    metadata = list(dict.fromkeys(metadata))
    read_only = [path for path in metadata if not any(path != top and within(path, top) for top in metadata)]
    return SandboxPolicy(
        mode=mode,
        workspace=tuple(workspace),
        writable=tuple(writable),
        temp_dir=Path(os.path.realpath(temp_dir)),
        hidden_dirs=_unique_real(hidden_dirs),
        hidden_files=_unique_real(hidden_files),
        readable_again=_unique_real(readable_again),
        read_only=_unique_real(read_only),
        missing_git=_unique_real(missing),
        network=allow_network,
    )


def git_metadata(root: Path) -> list[Path]:
    """What decides what git runs in the work tree at `root`: its `.git` (a directory, or a file
    naming the git dir elsewhere, as in a linked worktree or a submodule), that git dir and its
    common dir (where `config` and `hooks/` are read), and the same for each submodule checked out
    (`git status` runs git in each). Only what exists (bwrap cannot bind what is not there; a `.git`
    file naming a removed worktree is no repository to git either); the caller keeps what it must."""
    found: list[Path] = []
    for tree in (root, *_submodules(root)):
        dot = tree / ".git"
        if not os.path.lexists(dot):
            continue
        found.append(dot)
        git_dir = _points_to(dot) if dot.is_file() else dot
        if git_dir is None:
            continue
        found.append(git_dir)
        common = _read_path(git_dir / "commondir", git_dir)
        if common is not None:
            found.append(common)
    return [path for path in dict.fromkeys(found) if path.exists()]


def _points_to(dot_git_file: Path) -> Path | None:
    """The git dir a `.git` file names (`gitdir: PATH`, relative to the file's directory)."""
    text = _small_text(dot_git_file)
    if text is None or not text.startswith("gitdir:"):
        return None
    return Path(os.path.realpath(dot_git_file.parent / text[len("gitdir:") :].strip()))


def _read_path(file: Path, base: Path) -> Path | None:
    """The path a one-line file of git's holds (`commondir`), relative to `base`; None without one."""
    text = _small_text(file)
    return Path(os.path.realpath(base / text)) if text else None


_SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)
MAX_SUBMODULES = 256  # a larger `.gitmodules` is judged by its first entries


def _submodules(root: Path) -> list[Path]:
    """The work trees of the submodules `.gitmodules` lists (inside `root`)."""
    text = _small_text(root / ".gitmodules")
    if text is None:
        return []
    trees = []
    for match in _SUBMODULE_PATH.finditer(text):
        value = match.group(1).strip().strip('"')
        tree = Path(os.path.normpath(root / value))
        if value and within(tree, root) and tree != root:
            trees.append(tree)
        if len(trees) == MAX_SUBMODULES:
            break
    return trees


MAX_GIT_FILE_BYTES = 1 << 20


def _small_text(path: Path) -> str | None:
    """A file of git's as text (stripped), None when it is missing, unreadable or not a regular
    file: a repository's `.git` or `commondir` can be a FIFO, which a plain read would wait on."""
    try:
        with open_regular(path) as file:
            return file.read(MAX_GIT_FILE_BYTES).decode("utf-8", "replace").strip()
    except OSError:
        return None


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
