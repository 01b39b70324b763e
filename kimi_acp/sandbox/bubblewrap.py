"""The policy as a bubblewrap (`bwrap`) command line (Linux).

The whole file system read-only (`--ro-bind / /`), a fresh `/dev` and `/proc`, the session's temp
dir at `/tmp`, each writable dir bound read-write; then the hidden dirs covered by an empty read-only
tmpfs and the hidden files by `/dev/null`; then git's metadata (each repository's `.git`, the git
dir a `.git` file points to) bound read-only onto itself. A mount point of its own, a `.git` can be
neither changed nor renamed, moved or replaced (rename(2) of a mount point fails with EBUSY), so
nothing can be planted in it: no `commondir`, no `config.worktree`, no hook. A writable dir without
a `.git` gets an empty read-only one to mount on (git takes an empty `.git` for no repository;
bwrap leaves the empty directory behind). `--unshare-net` leaves the command a network namespace
with nothing but its own loopback; `--unshare-pid` makes bwrap's child pid 1 of a pid namespace
and `--die-with-parent` kills it with bwrap, so killing bwrap's process group (cancel, timeout)
kills the whole tree; `--new-session` keeps the command off the caller's terminal (no TIOCSTI injection).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from .policy import SandboxPolicy, within

PROBE_TIMEOUT_S = 10.0
_TMP = Path("/tmp")


def bwrap_argv(program: str, policy: SandboxPolicy, argv: Sequence[str], cwd: Path) -> list[str]:
    args = [
        program,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--bind",
        str(policy.temp_dir),
        "/tmp",
    ]
    for directory in policy.workspace:  # read-only mode: readable, and there even under /tmp
        args += ["--bind" if directory in policy.writable else "--ro-bind", str(directory), str(directory)]

    def visible(path: Path) -> bool:
        """Whether `path` is there to hide: what lay under the real /tmp is gone (the temp dir is
        there instead) unless a workspace dir brought it back."""
        return not within(path, _TMP) or any(within(path, w) for w in policy.workspace)

    hidden: list[Path] = []
    for directory in sorted(policy.hidden_dirs):
        if not visible(directory) or any(within(directory, h) for h in hidden):
            continue
        hidden.append(directory)
        args += ["--tmpfs", str(directory)]
        for inner in (*policy.readable_again, *policy.workspace):
            if inner != directory and within(inner, directory):
                flag = "--bind" if inner in policy.writable else "--ro-bind"
                args += [flag, str(inner), str(inner)]
        args += ["--remount-ro", str(directory)]
    for path in policy.hidden_files:
        if visible(path) and not any(within(path, h) for h in hidden):
            args += ["--ro-bind", "/dev/null", str(path)]
    for path in policy.read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in policy.missing_git:  # bwrap makes the (empty) directory to mount on
        args += ["--tmpfs", str(path), "--remount-ro", str(path)]
    if not policy.network:
        args.append("--unshare-net")
    args += ["--unshare-pid", "--die-with-parent", "--new-session", "--setenv", "TMPDIR", "/tmp"]
    args += ["--chdir", str(cwd), "--", *argv]
    return args


def probe(program: str, shell: str) -> str | None:
    """Run an empty command the way real ones run; None when it works, else why not (one line)."""
    argv = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid",
            "--die-with-parent", "--new-session", "--", shell, "-c", ":"]  # fmt: skip
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=PROBE_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not run ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap does not work here ({said[-1] if said else f'exit code {done.returncode}'})"
    return None
