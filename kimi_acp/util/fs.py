"""Small file helpers shared by the session store and config writing: atomic replace, path canon,
reading a regular file only (never a FIFO or a device), and the private modes of what the agent
keeps for itself (docs/configuration.md, "Where things live").

Everything under the share dir holds conversations or keys, so the directories the agent creates
there are 0700 (`private_dir`), the files 0600 (`open_private`, `atomic_write_text`), and a share
dir found open to other users is closed once (`private_share_dir`)."""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from . import process_state
from .regular_file import check_regular, open_regular
from .share_dir import share_dir

log = logging.getLogger(__name__)


def atomic_write_text(path: Path, text: str, *, mode: int | None = None, make_parents: bool = True) -> None:
    """Write via a temp file in the same directory, fsync, then rename over `path`.

    A crash at any point leaves either the old file or the new one, never a torn mix. The file is
    0600 unless `mode` says otherwise, and missing folders are made 0700 (`private_dir`).
    `make_parents=False`: a missing folder is a FileNotFoundError, not re-created (a session
    folder another process deleted stays deleted).
    """
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, make_parents=make_parents)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None, make_parents: bool = True) -> None:
    """`atomic_write_text` for bytes (undo's saved copies of files)."""
    if make_parents:
        private_dir(path.parent)
    _replace_with(path, lambda f: f.write(data), PRIVATE_FILE_MODE if mode is None else mode)


def ends_with_newline(path: Path) -> bool:
    """True for an empty or missing file, or one whose last byte is a newline.

    Appenders check it before their first write: after a crash mid-write the last line is torn,
    and the next record must start on a line of its own rather than be glued to the fragment.
    """
    try:
        with open(path, "rb") as f:
            f.seek(-1, 2)
            return f.read(1) == b"\n"
    except OSError:
        return True


def iter_json_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every JSON object line of a JSONL file; a missing file is empty.

    Torn lines (a crash mid-write) and lines that are not objects are logged and skipped, never
    fatal: a session file must always load.
    """
    try:
        f = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by the `with` below)
    except OSError:
        return
    with f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                log.warning("%s:%d: skipping unreadable line (torn write?)", path, lineno)
                continue
            if isinstance(data, dict):
                yield lineno, data


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of a file, None when it is missing: how a reader notices that a file
    was written (or replaced) since it last looked."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def make_dirs_below(base: Path, path: Path) -> None:
    """Create `path` and the folders between it and `base`, never `base` itself.

    Writers inside a session folder use it: if another process deleted the session, the first
    mkdir fails with FileNotFoundError instead of bringing back a partial session folder.
    """
    current = base
    for part in path.relative_to(base).parts:
        current = current / part
        try:
            current.mkdir(mode=0o700)  # a session's folders are private (issue #21)
        except FileExistsError:
            pass


# --------------------------------------------------------------------------- private modes

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

_OPEN_FLAGS = {
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}

# Share dirs checked by this process, with the note of their tightening until it is logged.
_share_dirs: dict[str, str | None] = process_state.container(f"{__name__}._share_dirs", {})


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents, each 0700; an existing directory is left as it is.

    Not `Path.mkdir(mode=..., parents=True)`: that gives the parents it creates the default mode,
    and the first of them is often the share dir itself."""
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE)
    except FileNotFoundError:
        private_dir(path.parent)
        path.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    except FileExistsError:
        if not path.is_dir():
            raise
    return path


def open_private(path: str | Path, mode: str = "a", *, encoding: str | None = None, errors: str | None = None) -> IO[Any]:
    """`open(path, mode)` ("a", "w", "x", text or "b") for the agent's own files: one it creates
    is 0600 from its first byte (a chmod afterwards would leave a window); an existing file keeps
    its mode."""
    fd = os.open(path, _OPEN_FLAGS[mode[0]], PRIVATE_FILE_MODE)
    try:
        return os.fdopen(fd, mode, encoding=encoding, errors=errors)
    except BaseException:
        os.close(fd)
        raise


def copy_private(source: Path, target: Path) -> None:
    """Copy a file of the agent's (a forked session's history) into a new 0600 file."""
    with open(source, "rb") as src, open_private(target, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)


def private_share_dir() -> Path:
    """The share dir, created 0700. One an older version left open to group or others is made
    0700 once, with one log line: its sessions and logs are then unreadable to other users,
    whatever their own modes. The line waits until logging has a handler (the servers set it up
    after choosing a session) and is then logged by the next call."""
    path = share_dir()
    key = str(path)
    if key not in _share_dirs:
        _share_dirs[key] = _make_private(path)
    note = _share_dirs[key]
    if note is not None and log.hasHandlers():
        log.warning("%s", note)
        _share_dirs[key] = None
    return path


def _make_private(path: Path) -> str | None:
    """Create or tighten the share dir; the note to log when it was open to others."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        private_dir(path)
        return None
    if not mode & 0o077:
        return None
    try:
        os.chmod(path, PRIVATE_DIR_MODE)
    except OSError as exc:
        return f"{path} is open to other users (mode {mode:o}) and could not be made private: {exc}"
    return f"{path} was open to other users (mode {mode:o}); it is now private (700)"


# --------------------------------------------------------------------------- replacing a file


def replace_file(path: Path, data: bytes, *, append: bool = False) -> int:
    """Write `data` to the file `path` names by replacing it whole; returns the new size in bytes.

    The agent's edits (WriteFile, StrReplaceFile through `LocalKaos`) go through here, so a full
    disk or a crash leaves the user's file as it was, never truncated: the new content is written
    to a temp file beside it (0600 while written), fsynced, given the old file's mode (and owner
    and group, where this user may give them), renamed over it, and the directory is fsynced.
    `append` writes the old content and then `data`. A new file gets the mode `open` would give it.

    A symlink is followed: the file it points to is replaced, the link stays a link. A file with
    more hard links is replaced under this name only, so the other names keep the old content: an
    approval for a path inside the project cannot change a file outside it. A target that is not a
    regular file (a FIFO, a device, a socket) is refused (`NotRegularFileError`): writing one could
    wait forever, and replacing it is not what was asked.
    """
    target = Path(os.path.realpath(path))
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    if old is not None:
        check_regular(path, old.st_mode)

    def fill(f: BinaryIO) -> None:
        if append and old is not None:
            with open_regular(target) as src:
                while chunk := src.read(1 << 20):
                    f.write(chunk)
        f.write(data)

    if old is None:
        return _replace_with(target, fill, 0o666 & ~_umask())
    return _replace_with(target, fill, stat.S_IMODE(old.st_mode), owner=(old.st_uid, old.st_gid))


def fsync_dir(directory: Path) -> None:
    """Make the renames in `directory` durable; a file system that cannot fsync a directory is
    left as it is (the rename itself already happened)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _replace_with(
    target: Path, fill: Callable[[BinaryIO], object], mode: int, *, owner: tuple[int, int] | None = None
) -> int:
    """The one way this package replaces a file: a unique 0600 temp beside `target`, filled, given
    `owner` and `mode`, fsynced, renamed over `target`, the directory fsynced. On any error the temp
    is removed and `target` is untouched. Returns the new size."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            if owner is not None:
                _give_owner(f.fileno(), *owner)
            os.fchmod(f.fileno(), mode)  # after chown, which may clear set-id bits
            os.fsync(f.fileno())
            size = os.fstat(f.fileno()).st_size
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(target.parent)
    return size


def _give_owner(fd: int, uid: int, gid: int) -> None:
    """The replaced file's owner and group, as far as this user may give them (root: both; others:
    a group they belong to); otherwise the new file is theirs, as any editor's would be."""
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) == (uid, gid):
        return
    try:
        os.fchown(fd, uid, gid)
        return
    except PermissionError:
        pass
    if st.st_gid != gid:
        try:
            os.fchown(fd, -1, gid)
        except PermissionError:
            pass


def _umask() -> int:
    """The process umask without changing it (Linux reports it in /proc); elsewhere read by
    setting it and back."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
