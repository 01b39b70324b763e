"""Reading and restoring one path of a workspace directory for /undo, without following links.

Every operation walks from the workspace directory down with `O_NOFOLLOW` directory handles, so a
symbolic link planted in the path (by the turn, or by anyone) can never send a read or a write out
of the workspace: a link where a directory is expected is refused (`UnsafePath`). A path with a
`.git` component is refused too (the user's repository is never written). A file is restored the
way the agent writes (util/fs.py): a private temp file beside it, filled, given its mode, fsynced,
renamed over the path, the directory fsynced; a link is restored as a link. A crash leaves either
the old or the restored state, never a torn file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import SessionError
from .undo_journal import ABSENT, FileState

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
CHUNK = 1 << 20


class UnsafePath(SessionError):
    """The path cannot be read or written without following a link or entering `.git`."""


def check_relative(path: str) -> list[str]:
    """The components of a path inside a workspace directory; UnsafePath for `..`, an absolute
    path or a `.git` component (on any letter case: some file systems ignore it)."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"not a path inside the workspace: {path!r}")
    if any(p.casefold() == ".git" for p in parts):
        raise UnsafePath("inside a .git directory, which undo never writes")
    return parts


@contextmanager
def _parent(root: Path, parts: list[str], *, create: bool) -> Iterator[int | None]:
    """A handle on the directory holding `parts[-1]`, reached without following links; None when
    a directory on the way is missing (and `create` is False)."""
    fd = os.open(
        root, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0)
    )  # the workspace directory itself may be a link
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    yield None
                    return
                os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise UnsafePath(f"`{part}` on the way is a symbolic link or not a directory") from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def current_state(root: Path, path: str) -> FileState:
    """What `path` (inside `root`) holds now, as a FileState (its content hashed as git does)."""
    parts = check_relative(path)
    with _parent(root, parts, create=False) as fd:
        if fd is None:
            return ABSENT
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return ABSENT
        if stat.S_ISLNK(st.st_mode):
            target = os.fsencode(os.readlink(name, dir_fd=fd))
            return FileState("link", _blob_id_of(target), 0o777)
        if not stat.S_ISREG(st.st_mode):
            return ABSENT if _empty_dir(name, fd, st) else FileState("other")
        file_fd = os.open(name, _READ_FLAGS, dir_fd=fd)
        with os.fdopen(file_fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            digest = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
            read = 0
            while chunk := f.read(CHUNK):
                digest.update(chunk)
                read += len(chunk)
            if read != size:  # changed while read: hash what was read, as its own blob
                f.seek(0)
                return FileState("file", _blob_id_of(f.read()), stat.S_IMODE(st.st_mode))
        return FileState("file", digest.hexdigest(), stat.S_IMODE(st.st_mode))


def read_content(root: Path, path: str) -> tuple[FileState, bytes | None]:
    """The state of `path` and, for a file, its bytes (what an edit's record keeps)."""
    parts = check_relative(path)
    with _parent(root, parts, create=False) as fd:
        if fd is None:
            return ABSENT, None
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return ABSENT, None
        if stat.S_ISLNK(st.st_mode):
            target = os.fsencode(os.readlink(name, dir_fd=fd))
            return FileState("link", _blob_id_of(target), 0o777), target
        if not stat.S_ISREG(st.st_mode):
            return (ABSENT if _empty_dir(name, fd, st) else FileState("other")), None
        file_fd = os.open(name, _READ_FLAGS, dir_fd=fd)
        with os.fdopen(file_fd, "rb") as f:
            data = f.read()
        return FileState("file", _blob_id_of(data), stat.S_IMODE(st.st_mode)), data


def restore(root: Path, path: str, target: FileState, content: bytes | None) -> None:
    """Make `path` hold `target`: removed, a file with `content` and its mode, or a link to
    `content`. Missing directories on the way are made; nothing on the way is followed."""
    parts = check_relative(path)
    if target.kind not in ("absent", "file", "link"):
        raise UnsafePath(f"cannot restore a {target.kind}")
    with _parent(root, parts, create=target.kind != "absent") as fd:
        if fd is None:
            return  # to remove, and already not there
        name = parts[-1]
        if target.kind == "absent":
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                return
            except IsADirectoryError:
                raise UnsafePath("a directory is there now") from None
            os.fsync(fd)
            return
        assert content is not None
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                os.rmdir(name, dir_fd=fd)  # an empty directory is no loss (git keeps none); a full one stays
        except FileNotFoundError:
            pass
        except OSError:
            raise UnsafePath("a directory that is not empty is there now") from None
        temp = f".{name[:100]}.undo-{secrets.token_hex(4)}.tmp"
        try:
            if target.kind == "link":
                os.symlink(os.fsdecode(content), temp, dir_fd=fd)
            else:
                file_fd = os.open(
                    temp,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                    0o600,
                    dir_fd=fd,
                )
                with os.fdopen(file_fd, "wb") as f:
                    f.write(content)
                    f.flush()
                    os.fchmod(f.fileno(), stat.S_IMODE(target.mode) or 0o644)
                    os.fsync(f.fileno())
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except IsADirectoryError:
            _unlink_quietly(temp, fd)
            raise UnsafePath("a directory is there now") from None
        except BaseException:
            _unlink_quietly(temp, fd)
            raise
        os.fsync(fd)


def _empty_dir(name: str, dir_fd: int, st: os.stat_result) -> bool:
    """An empty directory counts as nothing there: git keeps no empty directories, and a turn
    whose files were removed may leave one."""
    if not stat.S_ISDIR(st.st_mode):
        return False
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        return not os.listdir(fd)
    finally:
        os.close(fd)


def _unlink_quietly(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def _blob_id_of(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def display(root: Path, path: str, work_dir: Path) -> str:
    """How a path is named to the user: relative to the work dir when it is in it."""
    full = Path(root) / path
    try:
        return full.relative_to(work_dir).as_posix()
    except ValueError:
        return str(full)
