"""The policy as a Landlock launcher command line (Linux where `bwrap` is missing or cannot run).

The command runs as `python -I -S .../landlock_run.py --write DIR … [--no-network] -- shell -c …`:
a bare interpreter restricts itself and execs the shell (see `landlock_run.py`). What Landlock
cannot do, and bubblewrap does (docs/security.md):

- **hide** anything: it allows, it never denies, so the credential files and the share dir stay
  readable (the Shell output is still redacted of every secret the agent knows);
- keep **git's metadata** (`.git`) read-only inside a writable dir: an allowed directory's whole
  tree is allowed (a command naming a path in `.git` asks instead: permissions/protected.py);
- give the command a **private `/tmp`**: its `TMPDIR` is the session's temp dir, but `/tmp` itself
  is read-only;
- refuse **UDP** (DNS) or **Unix sockets**: only TCP connect and bind are refused.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from .landlock_run import landlock_abi
from .policy import SandboxPolicy

LAUNCHER = Path(__file__).with_name("landlock_run.py")

__all__ = ["LAUNCHER", "landlock_abi", "launcher_argv"]


def launcher_argv(policy: SandboxPolicy, argv: Sequence[str], cwd: Path) -> list[str]:
    args = [sys.executable, "-I", "-S", str(LAUNCHER)]
    for directory in (*policy.writable, policy.temp_dir):
        args += ["--write", str(directory)]
    if not policy.network:
        args.append("--no-network")
    args += ["--tmpdir", str(policy.temp_dir), "--chdir", str(cwd), "--", *argv]
    return args
