"""The undo journal: what each turn changed in the workspace, and what restores it.

One folder per session, `<session>/undo/` (0700, files 0600), beside Kimi's own files (which it
never changes):

- `journal.jsonl`: one event per line, appended — a turn's `begin` (its prompt, where the
  conversation stood: the context file's identity and length), each `edit` (the old state of a
  file WriteFile or StrReplaceFile is about to change), each `snapshot` (the tree of a workspace
  directory before the turn's first Shell command), its `end` (every path the turn changed: before
  and after), and `undone` (turns /undo took back). Pruning rewrites it with the last turns only.
- `blobs/<id>`: the old contents the edits saved, named by their git blob id.
- `shadow/<key>/`: one shadow store per workspace directory (core/undo_shadow.py).
- `pending.json`: an undo being applied; a crash leaves it, and the next /undo finishes it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..util.fs import (
    atomic_write_bytes,
    atomic_write_text,
    ends_with_newline,
    file_stamp,
    iter_json_objects,
    make_dirs_below,
    open_private,
)

log = logging.getLogger(__name__)

Kind = Literal["absent", "file", "link", "other", "repo"]
EXEC_BITS = 0o111


@dataclass(frozen=True)
class FileState:
    """What a path held: nothing, a file (git blob id, permission bits), a symbolic link (the blob
    id of its target), something else (a directory), or a nested repository. `source` says where
    its content is kept: "blob" (the journal's blobs) or "git" (the directory's shadow store)."""

    kind: Kind
    sha: str = ""
    mode: int = 0
    source: str = ""

    def same(self, other: FileState) -> bool:
        """The same content: kind, bytes and, for files, whether it is executable (what git keeps)."""
        if self.kind != other.kind or self.sha != other.sha:
            return False
        return self.kind != "file" or bool(self.mode & EXEC_BITS) == bool(other.mode & EXEC_BITS)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.sha:
            data["sha"] = self.sha
        if self.mode:
            data["mode"] = self.mode
        if self.source:
            data["source"] = self.source
        return data

    @classmethod
    def from_json(cls, data: Any) -> FileState:
        if not isinstance(data, dict) or data.get("kind") not in ("absent", "file", "link", "other", "repo"):
            return cls("other")
        return cls(
            data["kind"],
            str(data.get("sha") or ""),
            int(data.get("mode") or 0),
            str(data.get("source") or ""),
        )


ABSENT = FileState("absent")


@dataclass(frozen=True)
class PathChange:
    """One path a turn changed: where (a workspace directory and the path in it), before and after."""

    root: str
    path: str
    before: FileState
    after: FileState

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "path": self.path,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathChange:
        return cls(
            str(data["root"]),
            str(data["path"]),
            FileState.from_json(data.get("before")),
            FileState.from_json(data.get("after")),
        )


@dataclass(frozen=True)
class Uncovered:
    """A change the turn made that no record can restore, and why (ignored, over a cap, ...)."""

    root: str
    path: str  # "" for the whole directory
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "path": self.path, "why": self.why}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Uncovered:
        return cls(str(data.get("root", "")), str(data.get("path", "")), str(data.get("why", "")))


@dataclass
class TurnRecord:
    """A turn as the journal holds it."""

    seq: int
    started_at: float = 0.0
    prompt: str = ""
    context: dict[str, int] | None = None  # the context file's dev, ino and length when the turn began
    roots: list[str] = field(default_factory=list)
    edits: list[tuple[int, str, str, FileState]] = field(default_factory=list)  # (order, root, path, before)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)  # root -> its snapshot event
    changes: list[PathChange] | None = None  # None until the turn ended
    uncovered: list[Uncovered] = field(default_factory=list)
    notes: list[Uncovered] = field(
        default_factory=list
    )  # changes seen as they happened that nothing can restore
    undone: bool = False
    events: int = 0  # events seen of this turn: orders edits against snapshots

    @property
    def ended(self) -> bool:
        return self.changes is not None


class Journal:
    """The session's undo folder (see the module's note)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / "journal.jsonl"
        self.blobs = directory / "blobs"
        self.pending_path = directory / "pending.json"
        self._cache: tuple[tuple[int, int, int] | None, dict[int, TurnRecord]] | None = None

    # ------------------------------------------------------------------ writing

    def make_dirs(self, path: Path) -> None:
        """Create `path` (this folder or one below it), 0700, but never the session folder above:
        a session deleted while a turn or a read-ahead still runs stays deleted (FileNotFoundError)."""
        make_dirs_below(self.directory.parent, path)

    def append(self, event: dict[str, Any], *, durable: bool = False) -> None:
        """One event, as one line. `durable`: fsynced (an edit's record must outlive a crash that
        happens after the edit)."""
        self.make_dirs(self.directory)
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        torn = self.path.exists() and not ends_with_newline(self.path)
        with open_private(self.path, "a", encoding="utf-8") as f:
            f.write(("\n" if torn else "") + line + "\n")
            f.flush()
            if durable:
                os.fsync(f.fileno())

    def store_blob(self, sha: str, data: bytes) -> None:
        """Keep `data` (whose git blob id is `sha`) once; fsynced before the edit it protects."""
        target = self.blobs / sha
        if target.exists():
            return
        self.make_dirs(self.blobs)
        atomic_write_bytes(target, data, make_parents=False)  # 0600, fsynced, in a 0700 folder

    def read_blob(self, sha: str) -> bytes:
        return (self.blobs / sha).read_bytes()

    # ------------------------------------------------------------------ reading

    def turns(self) -> dict[int, TurnRecord]:
        """Every turn recorded, by number (parsed once per change of the file)."""
        stamp = file_stamp(self.path)
        if self._cache is not None and self._cache[0] == stamp and stamp is not None:
            return self._cache[1]
        turns: dict[int, TurnRecord] = {}
        for _, event in iter_json_objects(self.path):
            try:
                _apply(turns, event)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("%s: skipping an unreadable event: %s", self.path, exc)
        self._cache = (stamp, turns)
        return turns

    def last_seq(self) -> int:
        return max(self.turns(), default=0)

    # ------------------------------------------------------------------ pruning

    def rewrite(self, keep: set[int]) -> None:
        """The journal with the events of the turns in `keep` only (atomically)."""
        lines = []
        for _, event in iter_json_objects(self.path):
            if event.get("e") == "undone":
                turns = [t for t in event.get("turns", []) if t in keep]
                if turns:
                    lines.append(
                        json.dumps({**event, "turns": turns}, ensure_ascii=False, separators=(",", ":"))
                    )
            elif event.get("turn") in keep:
                lines.append(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
        self.make_dirs(self.directory)
        atomic_write_text(self.path, "".join(line + "\n" for line in lines), make_parents=False)
        self._cache = None

    def prune_blobs(self, keep: set[str]) -> None:
        try:
            names = os.listdir(self.blobs)
        except OSError:
            return
        for name in names:
            if name not in keep:
                try:
                    os.unlink(self.blobs / name)
                except OSError:
                    pass

    # ------------------------------------------------------------------ an undo under way

    def save_pending(self, data: dict[str, Any]) -> None:
        self.make_dirs(self.directory)
        atomic_write_text(self.pending_path, json.dumps(data, ensure_ascii=False), make_parents=False)

    def load_pending(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.pending_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning(
                "%s is unreadable (%s): the undo it describes cannot be finished", self.pending_path, exc
            )
            return None
        return data if isinstance(data, dict) else None

    def clear_pending(self) -> None:
        try:
            os.unlink(self.pending_path)
        except FileNotFoundError:
            pass


def _apply(turns: dict[int, TurnRecord], event: dict[str, Any]) -> None:
    kind = event.get("e")
    if kind == "undone":
        for seq in event.get("turns", []):
            if seq in turns:
                turns[seq].undone = True
        return
    seq = int(event["turn"])
    if kind == "begin":
        turns[seq] = TurnRecord(
            seq=seq,
            started_at=float(event.get("at", 0.0)),
            prompt=str(event.get("prompt", "")),
            context=event.get("context") if isinstance(event.get("context"), dict) else None,
            roots=[str(r) for r in event.get("roots", [])],
        )
        return
    turn = turns.get(seq)
    if turn is None:
        return
    turn.events += 1
    if kind == "edit":
        turn.edits.append(
            (turn.events, str(event["root"]), str(event["path"]), FileState.from_json(event.get("before")))
        )
    elif kind == "snapshot":
        turn.snapshots.setdefault(str(event["root"]), {**event, "order": turn.events})
    elif kind == "note":
        turn.notes.append(Uncovered.from_json(event))
    elif kind == "end":
        turn.changes = [PathChange.from_json(c) for c in event.get("changes", [])]
        turn.uncovered = [Uncovered.from_json(u) for u in event.get("uncovered", [])]


def begin_event(seq: int, prompt: str, context: dict[str, int] | None, roots: list[str]) -> dict[str, Any]:
    return {
        "e": "begin",
        "turn": seq,
        "at": time.time(),
        "prompt": prompt,
        "context": context,
        "roots": roots,
    }
