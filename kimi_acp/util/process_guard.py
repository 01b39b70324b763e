"""The agent's own process, kept from the processes it starts (issue #30). Standard library only.

Child environments are scrubbed of the agent's keys (`child_env.py`), but on Linux any process of
the same user may read another's `/proc/<pid>/environ`, `mem`, `fd/` and attach a debugger to it:
a Shell command could read `KIMI_API_KEY` from its parent. `prctl(PR_SET_DUMPABLE, 0)` makes the
kernel refuse all of that to everyone but root (and makes the process leave no core dump). The
process itself still reads its own `/proc/self`; children are dumpable again once they `exec`.

Taking the keys out of `os.environ` would not help: `/proc/<pid>/environ` shows the environment the
process started with, which `unsetenv` does not change, and the config reads the key variables
again for every session it opens. macOS has no `/proc`, and nothing is done there (issue #30 found
no interface that hands another process of the user this one's environment; not checked on a Mac).
"""

from __future__ import annotations

import logging
import os
import sys

PR_SET_DUMPABLE = 4  # <linux/prctl.h>

_done = False


def keep_process_private() -> None:
    """Make this process unreadable by other processes of the user (Linux; once per process).

    Cheap (one system call, ctypes loaded on first use) and never fatal: a failure is logged once
    and the agent goes on as before."""
    global _done
    if _done or not sys.platform.startswith("linux"):
        return
    _done = True
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))
    except (OSError, AttributeError) as exc:  # no libc, no prctl, a seccomp filter refusing it
        logging.getLogger(__name__).warning(
            "could not keep this process's memory and environment from its own commands "
            "(prctl PR_SET_DUMPABLE): %s",
            exc,
        )

