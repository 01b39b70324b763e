"""The shadow store: snapshots of one workspace directory in a git object store of the session's own.

Before a turn's first Shell command the directory is snapshotted (`ShadowStore.snapshot`), and
again when the turn ends; the difference of the two trees is what the turn's commands changed, and
the first tree holds what restores it (core/undo.py). It is git's object store and index, so the
second snapshot of a turn re-reads only the files whose stat changed (well under 300 ms for
10,000 files: bench/bench_undo.py), and `.gitignore` decides what is left out, as the user expects.

It is never the user's repository: `GIT_DIR` is the session's own folder, git runs with a clean
environment (no system or global config, no hooks, no fsmonitor, no attributes that rewrite bytes)
and never reads the directory's own `.git` (git itself never adds a path with a `.git` component).
A symbolic link is stored as a link, never followed. Left out and said so: files over the size cap,
and the whole directory when it holds more files than the file-count cap. Everything it writes is
0700/0600 (git runs with umask 077 under the session's private folder).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SessionError
from ..util.fs import atomic_write_text, make_dirs_below

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 300.0
LINK_MODE, GITLINK_MODE = "120000", "160000"
_UNREADABLE = re.compile(r"^error: unable to index file '(.*)'$", re.MULTILINE)
# Highest precedence of all attribute files: the bytes stored are the bytes on disk, whatever the
# directory's own .gitattributes say (no EOL conversion, no filters, no re-encoding).
ATTRIBUTES = "* -text -ident -filter -working-tree-encoding -diff -merge\n"
# Given on every call: nothing of the user's or the repository's configuration can run code or
# change what is stored.
GIT_OPTIONS = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.untrackedCache=false",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.symlinks=true",
    "-c", "core.fileMode=true",
    "-c", "core.ignoreCase=false",
    "-c", "core.precomposeUnicode=false",
    "-c", "core.quotePath=false",
    "-c", "core.excludesFile=/dev/null",
    "-c", "core.attributesFile=/dev/null",
    "-c", "gc.auto=0",
    "-c", "advice.addEmbeddedRepo=false",
    "-c", "advice.addIgnoredFile=false",
    "-c", "maintenance.auto=false",
)  # fmt: skip


class ShadowError(SessionError):
    """git failed in a way the snapshot cannot go on from (the reason is in the message)."""


@dataclass(frozen=True)
class TreeEntry:
    """A file in a snapshot: git's mode ("100644", "100755", "120000" link, "160000" nested repository) and blob id."""

    mode: str
    sha: str


@dataclass(frozen=True)
class Change:
    """A path whose entry differs between two snapshots; None: not there."""

    path: str
    before: TreeEntry | None
    after: TreeEntry | None


@dataclass
class Snapshot:
    """One snapshot of a directory; `tree` is None when none was taken (`reason` says why)."""

    tree: str | None
    reason: str | None = None
    big: dict[str, tuple[int, int]] = field(
        default_factory=dict
    )  # left out (over the size cap): path -> (size, ctime_ns)
    modes: dict[str, int] = field(default_factory=dict)  # permission bits of the files read this time
    prior_modes: dict[str, int] = field(
        default_factory=dict
    )  # their bits at the previous snapshot (and the deleted files')
    unreadable: list[str] = field(default_factory=list)  # files git could not read
    nested: list[str] = field(default_factory=list)  # directories holding a repository of their own ("dir/"): left out
    taken_ns: int = 0  # when the listing started: what changed after it has a later ctime


def git_path() -> str | None:
    return shutil.which("git")


class ShadowStore:
    """The snapshots of one directory (`root`), kept in `directory` (under the session's folder)."""

    def __init__(
        self, directory: Path, root: Path, *, within: Path, max_file_bytes: int, max_files: int
    ) -> None:
        """`within`: a folder above `directory` that the store never creates (the session's: one
        deleted while a read-ahead runs stays deleted)."""
        self.directory = Path(os.path.abspath(directory))
        self.within = Path(os.path.abspath(within))
        self.root = Path(os.path.abspath(root))
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self._git = git_path()
        self._modes: dict[str, int] | None = None  # permission bits git does not keep (modes.json)
        self._lock = threading.Lock()  # one git command writing the index or pruning at a time

    @property
    def available(self) -> bool:
        return self._git is not None

    @property
    def index_file(self) -> Path:
        return self.directory / "index"

    # ------------------------------------------------------------------ running git

    def _env(self) -> dict[str, str]:
        """A clean environment: none of the agent's (its keys), none of the user's git settings."""
        return {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.directory),
            "XDG_CONFIG_HOME": str(self.directory),
            "GIT_DIR": str(self.directory),
            "GIT_WORK_TREE": str(self.root),
            "GIT_INDEX_FILE": str(self.index_file),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }

    def _command(self, args: Sequence[str]) -> list[str]:
        if self._git is None:
            raise ShadowError("git is not installed")
        return [self._git, *GIT_OPTIONS, *args]

    def run(self, *args: str, data: bytes | None = None, ok: Iterable[int] = (0,)) -> bytes:
        """Run git on this store; its stdout. A status not in `ok` raises ShadowError with stderr."""
        return self._run(args, data, ok).stdout

    def _run(
        self, args: Sequence[str], data: bytes | None, ok: Iterable[int]
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            done = subprocess.run(
                self._command(args),
                input=data,
                capture_output=True,
                env=self._env(),
                cwd=self.root,
                timeout=GIT_TIMEOUT_S,
                umask=0o077,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ShadowError(f"git {args[0]} could not run: {exc}") from None
        if done.returncode not in tuple(ok):
            text = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ShadowError(f"git {args[0]} failed: {text[-1] if text else done.returncode}")
        return done

    def ensure(self) -> None:
        """Create the store once: a bare object store without sample hooks, and the attributes
        that keep bytes exact."""
        if (self.directory / "HEAD").is_file():
            return
        make_dirs_below(self.within, self.directory)
        if self._git is None:
            raise ShadowError("git is not installed")
        env = {
            k: v for k, v in self._env().items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
        }
        try:
            subprocess.run(
                [self._git, *GIT_OPTIONS, "init", "-q", "--bare", "--template=", str(self.directory)],
                capture_output=True, env=env, cwd=self.directory, timeout=GIT_TIMEOUT_S, umask=0o077, check=True,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            raise ShadowError(f"git init failed: {exc}") from None
        make_dirs_below(self.directory, self.directory / "info")
        atomic_write_text(self.directory / "info" / "attributes", ATTRIBUTES, make_parents=False)

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> Snapshot:
        """The directory as it is now, as a tree in the store (see the module's note for what is left out)."""
        with self._lock:
            return self._snapshot()

    def prewarm(self) -> None:
        """Read the whole directory into a store that has never snapshotted it, ahead of the first
        snapshot (which then only reads what changed meanwhile). Nothing is recorded."""
        with self._lock:
            if self.indexed_count() == 0:
                self._snapshot()

    def _snapshot(self) -> Snapshot:
        self.ensure()
        self._drop_stale_lock()
        taken_ns = time.time_ns()
        listing = self._changed_since_last()
        if isinstance(listing, Snapshot):
            listing.taken_ns = taken_ns
            return listing
        candidates, deleted, nested = listing
        big: dict[str, tuple[int, int]] = {}
        modes: dict[str, int] = {}
        for path in candidates:
            try:
                st = os.lstat(self.root / path)
            except OSError:
                continue  # gone meanwhile: git sees it gone too
            if stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                big[path] = (st.st_size, st.st_ctime_ns)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                modes[path] = stat.S_IMODE(st.st_mode)
        left_out = [*big, *(n.rstrip("/") for n in nested)]
        specs = [b"."] + [b":(exclude,literal)" + os.fsencode(p) for p in left_out]
        added = self._run(
            ["add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"],
            b"\0".join(specs) + b"\0",
            (0, 1),  # 1: some files could not be read (listed); anything worse fails the snapshot
        )
        unreadable = _UNREADABLE.findall(added.stderr.decode("utf-8", "replace"))
        tree = self.run("write-tree").decode("ascii").strip()
        self.run("update-ref", "refs/kimi/index", tree)  # the index's objects stay reachable
        prior = self._update_modes(modes, deleted)
        log.debug(
            "snapshot of %s: %d read, %d deleted, %d over the size cap",
            self.root,
            len(candidates),
            len(deleted),
            len(big),
        )
        return Snapshot(
            tree=tree, big=big, modes=modes, prior_modes=prior, unreadable=unreadable, nested=nested, taken_ns=taken_ns
        )

    def _update_modes(self, modes: dict[str, int], deleted: Sequence[str]) -> dict[str, int]:
        """Remember the permission bits git does not keep (a 0600 file is restored 0600); returns
        what was remembered before for the paths read or deleted now. Only bits other than git's
        own (644, 755, links 777) are stored."""
        known = self._load_modes()
        prior = {p: known[p] for p in (*modes, *deleted) if p in known}
        changed = False
        for path, mode in modes.items():
            if mode in (0o644, 0o755, 0o777):
                changed = known.pop(path, None) is not None or changed
            elif known.get(path) != mode:
                known[path], changed = mode, True
        for path in deleted:
            changed = known.pop(path, None) is not None or changed
        if changed:
            atomic_write_text(self.directory / "modes.json", json.dumps(known, separators=(",", ":")), make_parents=False)
        return prior

    def _load_modes(self) -> dict[str, int]:
        if self._modes is None:
            try:
                data = json.loads((self.directory / "modes.json").read_text(encoding="utf-8"))
                self._modes = {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}
            except (OSError, ValueError, TypeError):
                self._modes = {}
        return self._modes

    def _drop_stale_lock(self) -> None:
        """A process killed while git wrote the index leaves `index.lock`, and git then refuses
        every later snapshot. No git run here lasts longer than its timeout: an older lock is stale."""
        lock = self.directory / "index.lock"
        try:
            if time.time() - lock.stat().st_mtime > GIT_TIMEOUT_S:
                lock.unlink()
                log.info("undo: removed a stale %s", lock)
        except OSError:
            pass

    def _changed_since_last(self) -> tuple[list[str], list[str], list[str]] | Snapshot:
        """The files to read (new or changed since the last snapshot), those deleted, and the
        directories that are repositories of their own; a Snapshot without a tree when the
        directory holds more files than the cap."""
        tracked = self.indexed_count()
        command = self._command(["ls-files", "-z", "-t", "-o", "-m", "-d", "--exclude-standard"])
        try:
            proc = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self._env(),
                cwd=self.root,
                umask=0o077,
            )
        except OSError as exc:
            raise ShadowError(f"git ls-files could not run: {exc}") from None
        assert proc.stdout is not None
        changed: dict[str, None] = {}
        deleted: dict[str, None] = {}
        nested: dict[str, None] = {}
        untracked = 0
        over = False
        buffer = b""
        with proc:
            while chunk := proc.stdout.read(1 << 16):
                buffer += chunk
                *records, buffer = buffer.split(b"\0")
                for record in records:
                    tag, path = record[:1], os.fsdecode(record[2:])
                    if tag == b"R":
                        deleted[path] = None
                    elif tag == b"?" and path.endswith("/"):
                        nested[path] = None  # git lists a repository of its own as one directory
                    else:
                        changed[path] = None
                        untracked += tag == b"?"
                if tracked + untracked > self.max_files:
                    over = True
                    proc.kill()
                    break
        if over:
            return Snapshot(
                tree=None, reason=f"it holds more than {self.max_files:,} files (not ignored by .gitignore)"
            )
        if proc.returncode != 0:
            raise ShadowError(f"git ls-files failed with status {proc.returncode}")
        for path in deleted:
            changed.pop(path, None)
        return list(changed), list(deleted), list(nested)

    def indexed_count(self) -> int:
        """How many files the last snapshot holds (the index's entry count, read from its header)."""
        try:
            with open(self.index_file, "rb") as f:
                header = f.read(12)
        except OSError:
            return 0
        if len(header) < 12 or header[:4] != b"DIRC":
            return 0
        return int.from_bytes(header[8:12], "big")

    # ------------------------------------------------------------------ reading snapshots

    def diff(self, before: str, after: str) -> list[Change]:
        """The paths whose entry differs between two trees of this store."""
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--raw", before, after)
        fields = out.split(b"\0")
        changes: list[Change] = []
        for i in range(0, len(fields) - 1, 2):
            meta, path = fields[i].decode("ascii"), os.fsdecode(fields[i + 1])
            old_mode, new_mode, old_sha, new_sha, _status = meta.lstrip(":").split(" ")
            changes.append(
                Change(
                    path,
                    None if old_mode == "000000" else TreeEntry(old_mode, old_sha),
                    None if new_mode == "000000" else TreeEntry(new_mode, new_sha),
                )
            )
        return changes

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The content of blobs, by id (`git cat-file --batch`); a missing one raises ShadowError."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", data="".join(f"{s}\n" for s in wanted).encode("ascii"))
        blobs: dict[str, bytes] = {}
        at = 0
        for sha in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].decode("ascii").split(" ")
            if len(header) < 3 or header[1] != "blob":
                raise ShadowError(f"the snapshot lacks {sha} ({' '.join(header[1:])})")
            size = int(header[2])
            blobs[sha] = out[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
        return blobs

    def ignored(self, since_ns: int, *, budget: int) -> tuple[list[str], bool]:
        """Files ignored by .gitignore whose ctime is at or after `since_ns` (changed since), at
        most `budget` entries looked at: (paths, whether the look was cut short)."""
        out = self.run("ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory")
        return self.changed_under([os.fsdecode(raw) for raw in out.split(b"\0") if raw], since_ns, budget=budget)

    def changed_under(self, paths: Sequence[str], since_ns: int, *, budget: int) -> tuple[list[str], bool]:
        """Of `paths` (files, and directories ending in "/", walked without following links or
        entering `.git`), the files whose ctime is at or after `since_ns`: (paths, cut short)."""
        found: list[str] = []
        left = [budget]
        for path in paths:
            if path.endswith("/"):
                _collect_changed(self.root / path, path, since_ns, found, left)
            else:
                left[0] -= 1
                try:
                    if os.lstat(self.root / path).st_ctime_ns >= since_ns:
                        found.append(path)
                except OSError:
                    pass
            if left[0] <= 0:
                return found, True
        return found, False

    # ------------------------------------------------------------------ keeping and pruning

    def keep(self, name: str, tree: str) -> None:
        """Keep a tree (and its blobs) until `forget`: a ref of this store."""
        self.run("update-ref", f"refs/kimi/{name}", tree)

    def forget(self, names: Iterable[str]) -> None:
        """Drop kept trees, then the objects nothing kept needs any more."""
        names = list(names)
        if not names:
            return
        with self._lock:
            self.run("update-ref", "--stdin", data="".join(f"delete refs/kimi/{n}\n" for n in names).encode())
            self.run("prune", "--expire=now")


def _collect_changed(directory: Path, prefix: str, since_ns: int, found: list[str], left: list[int]) -> None:
    """Add to `found` the files under `directory` whose ctime is at or after `since_ns`, looking
    at no more than `left[0]` entries (decremented). Links are not followed."""
    stack = [(directory, prefix)]
    while stack:
        current, name = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                continue
            left[0] -= 1
            if left[0] <= 0:
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), f"{name}{entry.name}/"))
                elif entry.stat(follow_symlinks=False).st_ctime_ns >= since_ns:
                    found.append(f"{name}{entry.name}")
            except OSError:
                continue
