"""A small tmpfs in a private mount namespace, for disk-full tests on real files.

`run_on_tmpfs` runs a Python snippet under `unshare --mount --propagation private` with a tmpfs of
the given size mounted at a directory: the mount exists only for that process, so a test can fill
a file system without touching the machine's. The snippet starts after `PRELUDE`: `MNT` is the
mount point and `fill_disk(leave)` fills it. It prints one JSON object on its last line, which is
returned. `start_wire_on_tmpfs` starts `kimi --wire` the same way, with its share dir on the
tmpfs; `in_namespace` runs a command beside it (fill the disk, free it, read its files). Where
namespaces or mounts are not permitted the test calls `unavailable` (skipped locally, a failure in
CI, where the tests run as root).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from tests.support.wire_client import WireProcess

NOT_MOUNTED = 97  # the shell's exit code when `mount` refused

PRELUDE = '''
import errno, json, os, sys
from pathlib import Path

MNT = Path(os.environ["KIMI_TEST_TMPFS"])


def fill_disk(leave: int = 0) -> None:
    """Fill MNT until a write fails (whole pages, so nothing is left over), then free `leave` bytes."""
    path = MNT / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    block = b"\\0" * 4096
    try:
        while True:
            os.write(fd, block)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    if leave:
        os.truncate(path, max(0, path.stat().st_size - leave))


def free_disk() -> None:
    os.unlink(MNT / "filler")
'''


def _mount_then(size_kib: int) -> list[str]:
    """unshare + sh: mount the tmpfs at $KIMI_TEST_TMPFS, then exec the rest of argv."""
    shell = f'mount -t tmpfs -o size={size_kib}k kimi-test "$KIMI_TEST_TMPFS" || exit {NOT_MOUNTED}; exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", shell, "sh"]


def _check_tools(unavailable: Callable[[str], NoReturn], *names: str) -> None:
    missing = [name for name in ("unshare", "mount", *names) if shutil.which(name) is None]
    if missing:
        unavailable(f"not installed: {', '.join(missing)} (util-linux)")


def _refused(returncode: int | None, stderr: str) -> bool:
    """Whether the namespace or the mount was refused (not the code under test failing)."""
    return returncode == NOT_MOUNTED or (returncode not in (0, None) and stderr.startswith("unshare:"))


def run_on_tmpfs(
    snippet: str, *, size_kib: int, mountpoint: Path, unavailable: Callable[[str], NoReturn]
) -> dict[str, Any]:
    """Run `PRELUDE + snippet` with a `size_kib` tmpfs at `mountpoint`; its last stdout line, decoded."""
    _check_tools(unavailable)
    mountpoint.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [*_mount_then(size_kib), sys.executable, "-c", PRELUDE + snippet],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KIMI_TEST_TMPFS": str(mountpoint)},
    )
    if _refused(done.returncode, done.stderr):
        unavailable(f"cannot mount a tmpfs in a private mount namespace (needs root): {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


async def start_wire_on_tmpfs(
    share: Path, *args: str, size_kib: int, stderr_file: Path, unavailable: Callable[[str], NoReturn]
) -> WireProcess:
    """`kimi --wire ARGS` in a mount namespace of its own, with a `size_kib` tmpfs as its share dir
    (its stderr goes to `stderr_file`)."""
    _check_tools(unavailable, "nsenter")
    share.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONFAULTHANDLER": "1", **os.environ, "KIMI_TEST_TMPFS": str(share), "KIMI_SHARE_DIR": str(share)}
    # stderr to a file beside the share dir, not a pipe: on a full disk the log cannot be written,
    # and logging reports each failure on stderr, which must never fill up and block the server.
    with open(stderr_file, "wb") as stderr:
        proc = await asyncio.create_subprocess_exec(
            *_mount_then(size_kib), sys.executable, "-m", "kimi_acp", "--wire", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
            env=env, limit=64 * 1024 * 1024,
        )
    wire = WireProcess(proc)
    try:
        await wire.call("initialize", {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}})
    except (EOFError, AssertionError):  # stdout closed (stderr is not a pipe here)
        await proc.wait()
        said = stderr_file.read_text(errors="replace")
        if _refused(proc.returncode, said):
            unavailable(f"cannot mount a tmpfs in a private mount namespace (needs root): {said.strip()}")
        raise AssertionError(f"kimi --wire exited {proc.returncode}: {said}") from None
    return wire


def in_namespace(wire: WireProcess, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run argv in the mount namespace of `wire` (its process is the one unshare started)."""
    return subprocess.run(
        ["nsenter", f"--target={wire.proc.pid}", "--mount", "--", *argv], capture_output=True, text=True, timeout=60
    )
