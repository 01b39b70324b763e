"""The policy as a macOS Seatbelt profile, for `sandbox-exec -p PROFILE` (macOS).

Closed by default; reading allowed everywhere but the hidden paths (the share dir's `skills/` and
`plans/` readable again); writing allowed beneath the writable dirs, the temp dir and the terminal
and null devices, never to git's metadata (each writable dir's `.git`, there or not, in any case
on a case-insensitive disk, and the git dirs a `.git` file points to: Seatbelt decides on paths,
so a `.git` that is not there cannot be made, nor one renamed); processes may start and signal
each other inside the sandbox only; no network unless allowed (Unix sockets included: a container
daemon's socket is not reachable). The last matching rule wins, so the denials follow the
allowances they narrow. `sandbox-exec` is deprecated by Apple but still what Codex and Claude
Code use; the profile is tested for its text here (it cannot run on Linux).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .policy import SandboxPolicy

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# The services ordinary command-line programs look up: user and group names, logging, notify,
# the system configuration (proxies, DNS settings). Nothing that acts for the caller.
MACH_SERVICES = (
    "com.apple.system.opendirectoryd.libinfo", "com.apple.system.logger", "com.apple.system.notification_center",
    "com.apple.system.DirectoryService.libinfo_v1", "com.apple.SystemConfiguration.configd",
    "com.apple.logd", "com.apple.diagnosticd",
)  # fmt: skip


def quote(path: Path | str) -> str:
    """A Seatbelt string literal."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


_REGEX_SPECIAL = frozenset('\\.^$*+?()[]{}|"')


def dot_git_regex(root: Path) -> str:
    """A Seatbelt regex of `root/.git` and everything beneath it, `.git` in any case (APFS is
    case-insensitive by default: a `.GIT` made there is the `.git` git opens)."""
    escaped = "".join("\\" + c if c in _REGEX_SPECIAL else c for c in str(root).rstrip("/"))
    return '#"^' + escaped + '/\\.[Gg][Ii][Tt](/|$)"'


def profile(policy: SandboxPolicy) -> str:
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow process-info* (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow ipc-posix-shm ipc-posix-sem)",
        "(allow pseudo-tty)",
        "(allow mach-lookup " + " ".join(f"(global-name {quote(s)})" for s in MACH_SERVICES) + ")",
        "(allow file-read*)",
    ]
    hidden = [f"(subpath {quote(d)})" for d in policy.hidden_dirs] + [
        f"(literal {quote(f)})" for f in policy.hidden_files
    ]
    if hidden:
        lines.append("(deny file-read* file-write* " + " ".join(hidden) + ")")
    if policy.readable_again:
        lines.append(
            "(allow file-read* " + " ".join(f"(subpath {quote(d)})" for d in policy.readable_again) + ")"
        )
    writable = [f"(subpath {quote(d)})" for d in (*policy.writable, policy.temp_dir)]
    devices = [
        '(literal "/dev/null")',
        '(literal "/dev/zero")',
        '(literal "/dev/tty")',
        '(regex #"^/dev/ttys[0-9]+$")',
    ]
    lines.append("(allow file-write* " + " ".join(writable + devices) + ")")
    lines.append('(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))')
    kept = [f"(regex {dot_git_regex(root)})" for root in policy.writable]
    kept += [f"(subpath {quote(p)})" for p in (*policy.read_only, *policy.missing_git)]
    if kept:
        lines.append("(deny file-write* " + " ".join(kept) + ")")
    if policy.network:
        lines.append("(allow network*)")
    return "\n".join(lines) + "\n"


def seatbelt_argv(policy: SandboxPolicy, argv: Sequence[str]) -> list[str]:
    """`sandbox-exec` with the profile; `env` gives the command its TMPDIR (the session's temp dir)."""
    return [SANDBOX_EXEC, "-p", profile(policy), "/usr/bin/env", f"TMPDIR={policy.temp_dir}", *argv]
