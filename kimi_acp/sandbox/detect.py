"""Which sandbox this machine has: bubblewrap, else Landlock (Linux), Seatbelt (macOS), or none.

Found once per process, and only when a session asks for a sandbox: `bwrap` is tried for real
(an empty command with the namespaces a command gets), since an installed bwrap may still be
refused its namespaces (a container, a kernel without unprivileged user namespaces).

`KIMI_SANDBOX_BACKENDS` (comma-separated: `bubblewrap`, `landlock`, `seatbelt`; `none`) limits
which are considered; tests use it to take Landlock out, or to try it where bwrap is installed.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from dataclasses import dataclass

from ..util import process_state

BACKENDS = ("bubblewrap", "landlock", "seatbelt")
ENV_VAR = "KIMI_SANDBOX_BACKENDS"


@dataclass(frozen=True)
class Machine:
    backend: str | None  # "bubblewrap", "landlock", "seatbelt"; None: no sandbox here
    program: str | None = None  # bwrap's or sandbox-exec's path
    landlock_abi: int = 0
    why_not: str = ""  # without a backend: why, in a few words

    @property
    def label(self) -> str:
        if self.backend == "landlock":
            return f"landlock (ABI {self.landlock_abi})"
        return self.backend or "none"


def allowed_backends() -> tuple[str, ...]:
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return BACKENDS
    names = {n.strip().lower() for n in raw.split(",")}
    return tuple(b for b in BACKENDS if b in names)


@process_state.cache  # the probe of this process's environment (KIMI_SANDBOX_BACKENDS, PATH)
@functools.lru_cache(maxsize=1)
def machine() -> Machine:
    """This machine's sandbox (cached for the process: `forget()` clears it)."""
    allowed = allowed_backends()
    reasons: list[str] = []
    if sys.platform == "darwin":
        from .seatbelt import SANDBOX_EXEC

        if "seatbelt" in allowed and os.access(SANDBOX_EXEC, os.X_OK):
            return Machine("seatbelt", SANDBOX_EXEC)
        return Machine(None, why_not=f"{SANDBOX_EXEC} is not available")
    if not sys.platform.startswith("linux"):
        return Machine(None, why_not=f"no sandbox is supported on {sys.platform}")
    if "bubblewrap" in allowed:
        program = shutil.which("bwrap")
        if program is None:
            reasons.append("bubblewrap (bwrap) is not installed")
        else:
            from ..kaos.local import user_shell
            from .bubblewrap import probe

            problem = probe(program, user_shell())
            if problem is None:
                return Machine("bubblewrap", program)
            reasons.append(problem)
    if "landlock" in allowed:
        from .landlock_run import landlock_abi

        abi = landlock_abi()
        if abi >= 1:
            return Machine("landlock", landlock_abi=abi)
        reasons.append("the kernel has no Landlock")
    if not reasons:
        reasons.append(f"{ENV_VAR} allows none")
    return Machine(None, why_not=", and ".join(reasons))


def known() -> Machine | None:
    """The machine's sandbox if it was looked for already (never starts the probe)."""
    return machine() if machine.cache_info().currsize else None


def forget() -> None:
    machine.cache_clear()
