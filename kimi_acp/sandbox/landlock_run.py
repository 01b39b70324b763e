"""The Landlock launcher: restrict this process, then exec the command (Linux without bubblewrap).

    python -I -S landlock_run.py [--write PATH]... [--no-network] [--tmpdir DIR] [--chdir DIR] -- ARGV...

Started by path, with no site-packages and nothing of the package imported (the standard library
only), so it costs one bare interpreter start; the restriction is applied here, in a process of
its own with one thread, never with `preexec_fn` in the threaded server. Landlock is inherited
across `execve` and by every child, and cannot be lifted.

- Writes (creating, removing, renaming, truncating files and directories) only beneath the
  `--write` paths, `/dev/shm` and the terminal and null devices. Reads and execution are not
  restricted: Landlock only allows, never hides, so hiding a file would mean listing every
  directory that may be read.
- `--no-network`: TCP connect and bind refused (Landlock ABI 4 and later). UDP (DNS) and Unix
  sockets are not covered by Landlock.
- ABI 6 and later: no signals to processes outside the sandbox, no connecting to abstract Unix
  sockets created outside it.

Exit code 126, with the reason on stderr, when the restriction cannot be applied: the command
never runs unconfined.
"""

from __future__ import annotations

import ctypes
import os
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

FS_WRITE_FILE = 1 << 1
FS_REMOVE_DIR, FS_REMOVE_FILE = 1 << 4, 1 << 5
FS_MAKE_CHAR, FS_MAKE_DIR, FS_MAKE_REG, FS_MAKE_SOCK = 1 << 6, 1 << 7, 1 << 8, 1 << 9
FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 10, 1 << 11, 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
DEVICE_DIRS = ("/dev/pts", "/dev/shm")
FAILED = 126


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]  # fmt: skip


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 without Landlock (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                                  ctypes.c_uint32(CREATE_RULESET_VERSION))  # fmt: skip
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def restrict(writable: list[str], *, network: bool) -> None:
    """Restrict this process (and whatever it execs) as the module docstring says; OSError if not."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("this kernel has no Landlock")
    if not network and abi < 4:
        raise OSError(f"Landlock ABI {abi} cannot refuse network connections (4 or later is needed)")
    libc = _libc()
    file_rights = FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0)
    dir_rights = (file_rights | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG
                  | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM | (FS_REFER if abi >= 2 else 0))  # fmt: skip
    attr = _RulesetAttr(dir_rights, 0 if network else NET_BIND_TCP | NET_CONNECT_TCP,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)  # fmt: skip
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(
        ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for path in [*writable, *DEVICE_DIRS, *DEVICE_FILES]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # not there: nothing to allow
            try:
                # the terminals' devices may be written, not created or removed
                rights = dir_rights if os.path.isdir(path) and path != "/dev/pts" else file_rights
                rule = _PathBeneath(rights, fd)
                if libc.syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_long(ruleset), ctypes.c_long(RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) < 0:  # fmt: skip
                    raise OSError(
                        ctypes.get_errno(), f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}"
                    )
            finally:
                os.close(fd)
        if (
            libc.prctl(
                PR_SET_NO_NEW_PRIVS,
                ctypes.c_ulong(1),
                ctypes.c_ulong(0),
                ctypes.c_ulong(0),
                ctypes.c_ulong(0),
            )
            != 0
        ):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_long(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)


def main(args: list[str]) -> int:
    writable: list[str] = []
    network, tmpdir, chdir = True, None, None
    while args and args[0] != "--":
        flag = args.pop(0)
        if flag == "--no-network":
            network = False
        elif flag in ("--write", "--tmpdir", "--chdir") and args:
            value = args.pop(0)
            if flag == "--write":
                writable.append(value)
            elif flag == "--tmpdir":
                tmpdir = value
            else:
                chdir = value
        else:
            print(f"kimi sandbox (landlock): unknown option {flag!r}", file=sys.stderr)
            return FAILED
    command = args[1:]
    if not command:
        print("kimi sandbox (landlock): no command after --", file=sys.stderr)
        return FAILED
    try:
        restrict(writable, network=network)
        if chdir:
            os.chdir(chdir)
        if tmpdir:
            os.environ["TMPDIR"] = tmpdir
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"kimi sandbox (landlock): {exc.strerror or exc}; the command was not run", file=sys.stderr)
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
