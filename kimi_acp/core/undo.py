"""Undo: each turn records what restores the workspace files it changes, and `/undo [N]` takes the
last N turns back — their files, and their part of the conversation the model sees.

Recording (`Checkpoints`, a `tools/base.ChangeRecorder`): a turn that reaches the model begins a
record (`begin_turn`: where the conversation stood). Before WriteFile or StrReplaceFile first
changes a file, its old content (or its absence) is kept (`before_edit`); before the turn's first
Shell command, foreground or background, each workspace directory is snapshotted into the
session's shadow store (`before_command`, core/undo_shadow.py). When the turn ends (`end_turn`) a
second snapshot gives what its commands changed, and every changed path is written down with its
state before and after. A turn that touches nothing records two lines and no snapshot. A turn a
crash cut short is ended at the next turn or undo (its state after is the state then). Only the
last `[undo] keep_turns` turns are kept (core/undo_journal.py).

Undoing (`run_undo`, run by `/undo` inside a turn, so under the session's turn lock): for each
path the turns changed, the file is restored to its state before the oldest of them — unless it
no longer holds what the turns left (the user, or another program, changed it since): then it is
listed and left, unless `--force`. A protected path (permissions/protected.py) is restored only
after the user approves it. The plan is written down before the first file is touched
(`pending.json`), every restore is atomic (core/undo_restore.py), and an undo a crash interrupted
is finished by the next `/undo`. Then the conversation is rewound to where it stood before the
oldest turn: `context.jsonl` is moved aside as `context_N.jsonl` (the record of what was undone,
as Kimi Code CLI keeps a reverted context) and the earlier history takes its place.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import UndoSettings
from ..errors import PermissionDenied
from ..permissions.protected import protected_reason
from ..sessions import Session
from ..tools.base import ToolRejectedError
from ..wire.types import BriefDisplayBlock, Notification, StatusUpdate
from .context import Context
from .turn import TurnResult
from .undo_journal import ABSENT, FileState, Journal, PathChange, TurnRecord, Uncovered, begin_event
from .undo_restore import UnsafePath, check_relative, current_state, display, read_content, restore
from .undo_shadow import GITLINK_MODE, LINK_MODE, ShadowError, ShadowStore, Snapshot, TreeEntry
from .usage import context_figures

if TYPE_CHECKING:
    from ..kaos.tasks import TaskTable
    from .approvals import Approvals

log = logging.getLogger(__name__)

IGNORED_LOOK_BUDGET = 5_000  # ignored entries looked at for changes when a turn ends
PRUNE_SLACK = 5  # turns recorded past keep_turns before the oldest are pruned (in one go)
SHOWN_PATHS = 50  # per list in the answer
CHANGED_SINCE = "changed since the turn (by you or another program)"


# --------------------------------------------------------------------------- recording


@dataclass
class _OpenTurn:
    seq: int
    roots: list[str]
    edited: set[tuple[str, str]] = field(default_factory=set)
    snapshotted: bool = False
    warmed: bool = False


class Checkpoints:
    """One session's undo records (see the module's note). `roots` gives the workspace directories
    now (the work dir first)."""

    def __init__(self, directory: Path, settings: UndoSettings, roots: Callable[[], Sequence[Path]]) -> None:
        self.journal = Journal(directory)
        self.settings = settings
        self._roots = roots
        self._stores: dict[str, ShadowStore] = {}
        self._turn: _OpenTurn | None = None
        self._prewarming: dict[str, asyncio.Task[None]] = {}
        self.lock = asyncio.Lock()
        self.last_report: UndoReport | None = None  # of the last /undo (the Python API returns it)

    @property
    def enabled(self) -> bool:
        return self.settings.keep_turns > 0

    def workspace_roots(self) -> list[str]:
        """The workspace directories now, as real paths; one inside another is covered by it."""
        found: list[str] = []
        for root in self._roots():
            real = os.path.realpath(root)
            if os.path.isdir(real) and real not in found:
                found.append(real)
        return [r for r in found if not any(r != o and _within(r, o) for o in found)]

    def store(self, root: str) -> ShadowStore:
        if root not in self._stores:
            key = hashlib.sha1(root.encode("utf-8", "surrogateescape"), usedforsecurity=False).hexdigest()[
                :16
            ]
            self._stores[root] = ShadowStore(
                self.journal.directory / "shadow" / key,
                Path(root),
                within=self.journal.directory.parent,
                max_file_bytes=self.settings.max_file_bytes,
                max_files=self.settings.max_files,
            )
        return self._stores[root]

    async def begin_turn(self, prompt: str, context_file: Path) -> None:
        """A turn goes to the model: record where the conversation stands. Never raises."""
        if not self.enabled:
            return
        async with self.lock:
            try:
                await asyncio.to_thread(self._end_unfinished)
                seq = self.journal.last_seq() + 1
                roots = self.workspace_roots()
                self.journal.append(begin_event(seq, prompt[:500], _position(context_file), roots))
                self._turn = _OpenTurn(seq, roots)
            except Exception:
                log.exception("undo: the turn could not be recorded; it cannot be undone")
                self._turn = None

    def warm_up(self) -> None:
        """A tool call is starting (the core calls this for each): a workspace directory never
        snapshotted in this session is read in the background from now, so the turn's first
        command waits only for what changed since (a repository's first snapshot reads every
        file: seconds for a large one). A turn that calls no tool starts nothing."""
        turn = self._turn
        if turn is None or turn.warmed:
            return
        turn.warmed = True
        for root in turn.roots:
            store = self.store(root)
            if store.available and store.indexed_count() == 0 and root not in self._prewarming:
                task = asyncio.create_task(asyncio.to_thread(_prewarm, store))
                self._prewarming[root] = task
                task.add_done_callback(functools.partial(self._prewarmed, root))

    def _prewarmed(self, root: str, _task: asyncio.Task[None]) -> None:
        self._prewarming.pop(root, None)

    async def before_edit(self, path: Path) -> None:
        """WriteFile / StrReplaceFile is about to change `path`: keep what it holds (the first time
        in this turn). A path outside the workspace is not undo's to restore."""
        turn = self._turn
        if turn is None:
            return
        real = os.path.realpath(path)
        located = _locate(real, turn.roots) or ("", real)
        if located in turn.edited:
            return
        async with self.lock:
            if located in turn.edited or self._turn is not turn:
                return
            turn.edited.add(located)
            try:
                await asyncio.to_thread(self._record_edit, turn.seq, *located)
            except (OSError, UnsafePath) as exc:
                log.warning("undo: the old state of %s/%s could not be kept: %s", *located, exc)
                self._note(turn.seq, *located, f"its state before the turn could not be kept ({exc})")

    async def before_command(self) -> None:
        """Shell is about to run a command: snapshot the workspace, once per turn."""
        turn = self._turn
        if turn is None or turn.snapshotted:
            return
        async with self.lock:
            if turn.snapshotted or self._turn is not turn:
                return
            turn.snapshotted = True
            await asyncio.to_thread(self._snapshot_all, turn)

    async def end_turn(self) -> None:
        """The turn is over: write down what it changed, then prune old turns. Never raises."""
        turn, self._turn = self._turn, None
        if turn is None:
            return
        async with self.lock:
            try:
                await asyncio.to_thread(self._end, turn.seq)
                await asyncio.to_thread(self._prune)
            except Exception:
                log.exception("undo: the end of turn %d could not be recorded", turn.seq)

    # ------------------------------------------------------------------ in a worker thread

    def _note(self, seq: int, root: str, path: str, why: str) -> None:
        try:
            self.journal.append({"e": "note", "turn": seq, "root": root, "path": path, "why": why})
        except OSError as exc:
            log.warning("undo: a note could not be kept: %s", exc)

    def _record_edit(self, seq: int, root: str, path: str) -> None:
        if not root:
            self._note(seq, root, path, "outside the workspace: undo never writes there")
            return
        try:
            check_relative(path)
        except UnsafePath as exc:
            self._note(seq, root, path, str(exc))
            return
        state, data = read_content(Path(root), path)
        if data is not None:
            self.journal.store_blob(state.sha, data)
            state = replace(state, source="blob")
        event = {"e": "edit", "turn": seq, "root": root, "path": path, "before": state.to_json()}
        self.journal.append(event, durable=True)

    def _snapshot_all(self, turn: _OpenTurn) -> None:
        for root in turn.roots:
            store = self.store(root)
            try:
                snap = store.snapshot() if store.available else Snapshot(None, reason="git is not installed")
                if snap.tree is not None:
                    store.keep(f"t{turn.seq}", snap.tree)
            except (ShadowError, OSError) as exc:
                log.warning("undo: snapshot of %s failed: %s", root, exc)
                snap = Snapshot(None, reason=f"the snapshot failed ({exc})")
            big = {p: list(v) for p, v in snap.big.items()}
            self.journal.append(
                {"e": "snapshot", "turn": turn.seq, "root": root, "tree": snap.tree, "reason": snap.reason,
                 "big": big, "taken_ns": snap.taken_ns, "unreadable": snap.unreadable[:SHOWN_PATHS],
                 "nested": snap.nested},
                durable=True,
            )  # fmt: skip

    def _end_unfinished(self) -> None:
        """Turns a crash cut short (no end recorded, none running): ended now."""
        for seq, record in sorted(self.journal.turns().items()):
            if not record.ended and not record.undone and (self._turn is None or self._turn.seq != seq):
                log.info("undo: turn %d was cut short; recording its end now", seq)
                self._end(seq, late=True)

    def _end(self, seq: int, *, late: bool = False) -> None:
        record = self.journal.turns().get(seq)
        if record is None:
            return
        changes: dict[tuple[str, str], PathChange] = {}
        uncovered: list[Uncovered] = list(record.notes)
        for root, snap in record.snapshots.items():
            self._end_snapshot(root, snap, changes, uncovered)
        for order, root, path, before in record.edits:
            taken = record.snapshots.get(root)
            if (root, path) in changes and taken is not None and taken.get("tree") and taken["order"] < order:
                continue  # the snapshot, taken before this edit, holds the older state
            try:
                after = current_state(Path(root), path)
            except (OSError, UnsafePath) as exc:
                uncovered.append(Uncovered(root, path, f"could not be read after the turn ({exc})"))
                continue
            if after.same(before):
                changes.pop((root, path), None)
            else:
                changes[(root, path)] = PathChange(root, path, before, after)
        uncovered = [u for u in uncovered if (u.root, u.path) not in changes]
        self.journal.append(
            {"e": "end", "turn": seq, "changes": [c.to_json() for c in changes.values()],
             "uncovered": [u.to_json() for u in uncovered], "late": late},
        )  # fmt: skip

    def _end_snapshot(
        self,
        root: str,
        snap: dict[str, Any],
        changes: dict[tuple[str, str], PathChange],
        uncovered: list[Uncovered],
    ) -> None:
        """What the turn's commands changed in one directory: its snapshot now against before."""
        before_tree = snap.get("tree")
        if not before_tree:
            why = snap.get("reason") or "no snapshot"
            uncovered.append(
                Uncovered(
                    root, "", f"not snapshotted: {why}; what Shell commands changed there cannot be undone"
                )
            )
            return
        store = self.store(root)
        try:
            post = store.snapshot()
            if post.tree is None:
                uncovered.append(Uncovered(root, "", f"not snapshotted after the turn: {post.reason}"))
                return
            found = store.diff(before_tree, post.tree)
            since = int(snap.get("taken_ns") or 0)
            ignored, cut = store.ignored(since, budget=IGNORED_LOOK_BUDGET)
            in_nested, _ = store.changed_under(snap.get("nested") or [], since, budget=IGNORED_LOOK_BUDGET)
        except (ShadowError, OSError) as exc:
            uncovered.append(Uncovered(root, "", f"the snapshot after the turn failed ({exc})"))
            return
        for change in found:
            changes[(root, change.path)] = PathChange(
                root,
                change.path,
                _tree_state(change.before, post.prior_modes.get(change.path)),
                _tree_state(change.after, post.modes.get(change.path)),
            )
        size_cap = _size(self.settings.max_file_bytes)
        before_big = {p: tuple(v) for p, v in (snap.get("big") or {}).items()}
        for path, now in post.big.items():
            if before_big.get(path) != now:
                uncovered.append(Uncovered(root, path, f"over the {size_cap} size cap: not in the snapshot"))
        for path in before_big:
            if path not in post.big and not os.path.lexists(os.path.join(root, path)):
                uncovered.append(
                    Uncovered(
                        root, path, f"deleted; it was over the {size_cap} size cap, so not in the snapshot"
                    )
                )
        for path in ignored:
            uncovered.append(Uncovered(root, path, "ignored by .gitignore: not in the snapshot"))
        for path in in_nested:
            uncovered.append(Uncovered(root, path, "inside a git repository of its own: not in the snapshot"))
        if cut:
            uncovered.append(
                Uncovered(
                    root,
                    "",
                    f"only the first {IGNORED_LOOK_BUDGET:,} files ignored by .gitignore were checked for changes",
                )
            )
        for path in post.unreadable:
            uncovered.append(Uncovered(root, path, "could not be read for the snapshot"))

    def _prune(self) -> None:
        """Keep the last `keep_turns` turns (pruned in batches: git's prune walks the store)."""
        turns = self.journal.turns()
        keep = self.settings.keep_turns
        if len(turns) <= keep + PRUNE_SLACK or self.journal.load_pending() is not None:
            return
        ordered = sorted(turns)
        dropped, kept = ordered[:-keep], set(ordered[-keep:])
        for root in {r for s in dropped for r in turns[s].snapshots}:
            try:
                self.store(root).forget(f"t{s}" for s in dropped if root in turns[s].snapshots)
            except ShadowError as exc:
                log.warning("undo: pruning the snapshots of %s failed: %s", root, exc)
        self.journal.rewrite(kept)
        needed = {state.sha for s in kept for state in _blob_states(turns[s])}
        self.journal.prune_blobs(needed)
        log.info("undo: pruned %d old turns", len(dropped))

    # ------------------------------------------------------------------ what can be undone

    def undoable(self) -> list[TurnRecord]:
        """The turns /undo can take back, newest first: ended, not undone, among the last `keep_turns`."""
        turns = self.journal.turns()
        recent = sorted(turns, reverse=True)[: self.settings.keep_turns]
        return [turns[s] for s in recent if not turns[s].undone and turns[s].ended]

    def history(self) -> list[TurnRecord]:
        """Every turn still recorded, oldest first (the web page marks its runs with them)."""
        return [t for _, t in sorted(self.journal.turns().items())]


# --------------------------------------------------------------------------- the plan


@dataclass
class Op:
    """One path to put back: to `target` (its state before the turns), if it still holds
    `expected` (what they left). `blocked`: why it must be left whatever happens; `between`: it
    changed between two of the turns (left unless --force)."""

    root: str
    path: str
    target: FileState
    expected: FileState
    blocked: str | None = None
    between: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "path": self.path, "target": self.target.to_json(),
                "expected": self.expected.to_json(),
                "blocked": self.blocked, "between": self.between}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Op:
        return cls(str(data["root"]), str(data["path"]), FileState.from_json(data["target"]),
                   FileState.from_json(data["expected"]),
                   data.get("blocked"), data.get("between"))  # fmt: skip


@dataclass
class UndoPlan:
    turns: list[int]  # newest first
    prompts: list[str]
    ops: list[Op]
    uncovered: list[Uncovered]
    context: dict[str, int] | None  # where the conversation stood before the oldest turn
    force: bool = False
    approved: list[str] = field(default_factory=list)  # protected paths the user allowed (root/path)
    context_done: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": self.turns, "prompts": self.prompts, "ops": [o.to_json() for o in self.ops],
            "uncovered": [u.to_json() for u in self.uncovered], "context": self.context, "force": self.force,
            "approved": self.approved, "context_done": self.context_done,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UndoPlan:
        return cls(
            turns=[int(t) for t in data["turns"]],
            prompts=[str(p) for p in data.get("prompts", [])],
            ops=[Op.from_json(o) for o in data.get("ops", [])],
            uncovered=[Uncovered.from_json(u) for u in data.get("uncovered", [])],
            context=data.get("context"),
            force=bool(data.get("force")),
            approved=[str(a) for a in data.get("approved", [])],
            context_done=bool(data.get("context_done")),
        )


def build_plan(records: Sequence[TurnRecord], roots_now: Sequence[str], *, force: bool) -> UndoPlan:
    """What undoing `records` (newest first) means for each path they changed."""
    oldest_first = list(reversed(records))
    chains: dict[tuple[str, str], list[tuple[int, PathChange]]] = {}
    for record in oldest_first:
        for change in record.changes or ():
            chains.setdefault((change.root, change.path), []).append((record.seq, change))
    ops = []
    for (root, path), chain in chains.items():
        target, expected = chain[0][1].before, chain[-1][1].after
        if target.same(expected):
            continue  # the turns together changed nothing here
        op = Op(root, path, target, expected)
        for (seq_a, a), (seq_b, b) in itertools.pairwise(chain):
            if not a.after.same(b.before):
                op.between = (
                    f"changed between two of the turns (after turn {seq_a}, before turn {seq_b}), not by the agent"
                )
        if "repo" in (target.kind, expected.kind):
            op.blocked = "a nested git repository: its files are not in the snapshot"
        elif target.kind == "other":
            op.blocked = "it was not a file before the turn"
        elif root not in roots_now:
            op.blocked = "its directory is no longer in the workspace"
        else:
            try:
                check_relative(path)
            except UnsafePath as exc:
                op.blocked = str(exc)
        ops.append(op)
    uncovered = [u for r in oldest_first for u in r.uncovered]
    return UndoPlan(
        turns=[r.seq for r in records],
        prompts=[r.prompt for r in records],
        ops=ops,
        uncovered=uncovered,
        context=oldest_first[0].context if oldest_first else None,
        force=force,
    )


@dataclass(frozen=True)
class Decision:
    """What undo does with one path now: "restore", "remove", "already" (as before the turns) or
    "left" (with why)."""

    op: Op
    action: str
    why: str = ""
    protected: str | None = None


def decide(op: Op, force: bool) -> Decision:
    """Compare the path as it is now with what the turns left (in a worker thread: it reads files)."""
    try:
        now = current_state(Path(op.root), op.path)
    except UnsafePath as exc:
        return Decision(op, "left", str(exc))
    except OSError as exc:
        return Decision(op, "left", f"could not be read ({exc.strerror or exc})")
    if now.same(op.target):
        return Decision(op, "already")
    if op.blocked:
        return Decision(op, "left", op.blocked)
    if op.between and not force:
        return Decision(op, "left", op.between)
    if not now.same(op.expected) and not force:
        if now.kind == "other":
            return Decision(op, "left", "a directory is there now")
        return Decision(op, "left", CHANGED_SINCE)
    action = "remove" if op.target.kind == "absent" else "restore"
    return Decision(op, action, protected=protected_reason(Path(op.root) / op.path))


# --------------------------------------------------------------------------- undoing


class UndoHost(Protocol):
    """What an undo needs of the session (AgentCore implements it)."""

    session: Session
    context: Context
    approvals: Approvals

    @property
    def checkpoints(self) -> Checkpoints: ...

    @property
    def tasks(self) -> TaskTable: ...

    @property
    def work_dir(self) -> Path: ...

    @property
    def max_context_size(self) -> int | None: ...

    @property
    def stream(self) -> Any: ...  # core/stream.MessageStream

    def say(self, text: str) -> None: ...


@dataclass
class UndoReport:
    """What an undo did (or would do, `dry_run`), for the answer and the Notification's payload."""

    turns: list[int] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)
    not_covered: list[tuple[str, str]] = field(default_factory=list)
    conversation: str = ""  # what happened to the conversation
    refused: str | None = None  # nothing was done, and why
    resumed: bool = False  # it finished an undo a crash had interrupted
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return self.refused is None

    def text(self) -> str:
        if self.refused is not None:
            return self.refused
        n = len(self.turns)
        what = f"{n} turn" + ("s" if n != 1 else "")
        quoted = ", ".join(f"“{_short(p)}”" for p in self.prompts[:5]) + (", …" if n > 5 else "")
        if self.dry_run:
            head = f"/undo would take back {what} ({quoted}):"
        elif self.resumed:
            head = f"Finished an undo a crash had interrupted ({what}: {quoted})."
        else:
            head = f"Undid {what} ({quoted})."
        lines = [head]
        if self.restored:
            lines.append(_listing("Would restore" if self.dry_run else "Restored", self.restored))
        if self.removed:
            lines.append(
                _listing(
                    "Would remove (created by the turns)"
                    if self.dry_run
                    else "Removed (created by the turns)",
                    self.removed,
                )
            )
        if self.already:
            lines.append(_listing("Already as before", self.already))
        if self.left:
            label = "Would leave as they are" if self.dry_run else "Left as they are"
            lines.append(
                label
                + ":\n"
                + "\n".join(f"- `{p}`: {why}" for p, why in self.left[:SHOWN_PATHS])
                + _more(self.left)
            )
            if any(why == CHANGED_SINCE or why.startswith("changed between") for _, why in self.left):
                lines.append(
                    "`/undo --force` overwrites files changed since; "
                    "run `/undo N --dry-run` first to see what it would do."
                )
        if self.not_covered:
            lines.append(
                "Not restored (nothing recorded them):\n"
                + "\n".join(
                    f"- `{p}`: {why}" if p else f"- {why}" for p, why in self.not_covered[:SHOWN_PATHS]
                )
                + _more(self.not_covered)
            )
        if not (self.restored or self.removed or self.already or self.left):
            what = "That turn" if n == 1 else "Those turns"
            lines.append(f"{what} changed no files." if not self.dry_run else "No files to restore.")
        if self.conversation:
            lines.append(self.conversation)
        return "\n\n".join(lines)

    def payload(self) -> dict[str, Any]:
        return {
            "turns": self.turns, "restored": self.restored, "removed": self.removed, "already": self.already,
            "left": [{"path": p, "why": w} for p, w in self.left],
            "not_covered": [{"path": p, "why": w} for p, w in self.not_covered],
            "conversation": self.conversation, "resumed": self.resumed, "dry_run": self.dry_run,
            "refused": self.refused,
        }  # fmt: skip


@dataclass(frozen=True)
class UndoArgs:
    turns: int = 1
    force: bool = False
    dry_run: bool = False
    outside_turn: bool = False  # a preview without the turn lock: another process may be mid-turn


USAGE = "Usage: `/undo [N] [--force] [--dry-run]` (N: how many of the last turns, default 1)."


def parse_args(text: str) -> UndoArgs | str:
    """`/undo`'s arguments, or what is wrong with them."""
    turns, force, dry_run = None, False, False
    for word in text.split():
        if word in ("--force", "-f"):
            force = True
        elif word in ("--dry-run", "-n", "--preview"):
            dry_run = True
        elif re.fullmatch(r"\d{1,6}", word) and turns is None:
            turns = int(word)
        else:
            return f"`/undo` does not understand `{word}`. {USAGE}"
    if turns == 0:
        return f"N must be at least 1. {USAGE}"
    return UndoArgs(turns or 1, force, dry_run)


async def run_undo(host: UndoHost, args: UndoArgs) -> UndoReport:
    """Take back the last `args.turns` turns (or finish an interrupted undo first)."""
    cp = host.checkpoints
    if not cp.enabled:
        return UndoReport(
            refused="Undo is off: `[undo] keep_turns = 0` in the config records nothing to take back."
        )
    async with cp.lock:
        if not args.outside_turn:  # under the turn lock: a turn without its end was cut short
            await asyncio.to_thread(cp._end_unfinished)
        pending = cp.journal.load_pending()
        if pending is not None and args.dry_run:
            return UndoReport(
                refused="An undo was interrupted: the next `/undo` finishes it first "
                "(it takes back no more turns)."
            )
        if pending is not None:
            try:
                plan = UndoPlan.from_json(pending)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("undo: the interrupted undo cannot be read (%s); it is dropped", exc)
                cp.journal.clear_pending()
            else:
                return await _apply(host, plan, resumed=True)
        records = cp.undoable()
        if not records:
            return UndoReport(refused=_nothing_to_undo(cp))
        if args.turns > len(records):
            return UndoReport(
                refused=f"Only {len(records)} turn{'s' if len(records) != 1 else ''} can be undone "
                f"(you asked for {args.turns}). {_kept_note(cp)}"
            )
        if not args.force and (running := _running_tasks(host)):
            return UndoReport(
                refused=f"Background tasks are still running ({running}): they may still change files. "
                "Stop them first (ask me to, or TaskStop), or run `/undo --force`."
            )
        plan = build_plan(records[: args.turns], cp.workspace_roots(), force=args.force)
        if args.dry_run:
            decisions = await asyncio.to_thread(lambda: [decide(op, plan.force) for op in plan.ops])
            report = _report(host, plan, decisions, dry_run=True)
            report.conversation = _conversation_preview(host, plan)
            return report
        decisions = await asyncio.to_thread(lambda: [decide(op, plan.force) for op in plan.ops])
        plan.approved = await _approve_protected(host, decisions)
        cp.journal.save_pending(plan.to_json())
        return await _apply(host, plan, resumed=False)


async def preview(host: UndoHost, turns: int, *, force: bool = False) -> UndoReport:
    """What `/undo turns` would do now, changing nothing (the web page shows it before it acts);
    outside a turn, so a turn another process is running is not taken for one cut short."""
    return await run_undo(host, UndoArgs(turns, force, dry_run=True, outside_turn=True))


async def _apply(host: UndoHost, plan: UndoPlan, *, resumed: bool) -> UndoReport:
    cp = host.checkpoints
    decisions = await asyncio.to_thread(_restore_all, cp, plan)
    report = _report(host, plan, decisions, dry_run=False)
    report.resumed = resumed
    if not plan.context_done:
        report.conversation = _rewind(host, plan)
        plan.context_done = True
        cp.journal.save_pending(plan.to_json())
    else:
        report.conversation = "The conversation was already rewound to before those turns."
    cp.journal.append({"e": "undone", "turns": plan.turns, "at": time.time()}, durable=True)
    cp.journal.clear_pending()
    return report


def _restore_all(cp: Checkpoints, plan: UndoPlan) -> list[Decision]:
    """Every path decided afresh and put back (the same way when an interrupted undo is finished:
    a path already restored holds its target). What the turns created goes first, so a link or a
    directory they put where a directory or a file was is out of the way."""
    removals = [op for op in plan.ops if op.target.kind == "absent"]
    others = [op for op in plan.ops if op.target.kind != "absent"]
    return _restore_pass(cp, plan, removals) + _restore_pass(cp, plan, others)


def _restore_pass(cp: Checkpoints, plan: UndoPlan, ops: Sequence[Op]) -> list[Decision]:
    decisions = [decide(op, plan.force) for op in ops]
    contents = _contents(cp, [d.op for d in decisions if d.action == "restore"])
    done = []
    for decision in decisions:
        op = decision.op
        if decision.action not in ("restore", "remove"):
            done.append(decision)
            continue
        if decision.protected and f"{op.root}/{op.path}" not in plan.approved:
            done.append(
                replace(decision, action="left", why=f"a protected path ({decision.protected}): not approved")
            )
            continue
        content = contents.get((op.root, op.path)) if decision.action == "restore" else None
        if decision.action == "restore" and content is None:
            done.append(replace(decision, action="left", why="its content before the turn is no longer kept"))
            continue
        try:
            restore(Path(op.root), op.path, op.target, content)
        except UnsafePath as exc:
            done.append(replace(decision, action="left", why=str(exc)))
            continue
        except OSError as exc:
            done.append(replace(decision, action="left", why=f"could not be written ({exc.strerror or exc})"))
            continue
        done.append(decision)
    return done


def _contents(cp: Checkpoints, ops: Sequence[Op]) -> dict[tuple[str, str], bytes]:
    """The bytes each op restores: from the journal's blobs or the directory's shadow store."""
    found: dict[tuple[str, str], bytes] = {}
    by_root: dict[str, list[Op]] = {}
    for op in ops:
        if op.target.source == "blob":
            try:
                found[(op.root, op.path)] = cp.journal.read_blob(op.target.sha)
            except OSError:
                log.warning("undo: the kept content of %s/%s is gone", op.root, op.path)
        else:
            by_root.setdefault(op.root, []).append(op)
    for root, root_ops in by_root.items():
        try:
            blobs = cp.store(root).read_blobs(op.target.sha for op in root_ops)
        except ShadowError as exc:
            log.warning("undo: reading the snapshot of %s failed: %s", root, exc)
            continue
        for op in root_ops:
            found[(op.root, op.path)] = blobs[op.target.sha]
    return found


async def _approve_protected(host: UndoHost, decisions: Sequence[Decision]) -> list[str]:
    """Protected paths are put back only after the user approves them (always asked, even in yolo)."""
    protected = [d for d in decisions if d.protected and d.action in ("restore", "remove")]
    if not protected:
        return []
    names = [display(Path(d.op.root), d.op.path, host.work_dir) for d in protected]
    try:
        await host.approvals.request(
            tool_call_id=f"undo-{time.time_ns()}",
            sender="Undo",
            action="restore protected files",
            description="Restore " + ", ".join(f"`{n}`" for n in names) + " to their state before the turns",
            display=[
                BriefDisplayBlock(text="\n".join(f"{n}: {d.protected}" for n, d in zip(names, protected, strict=True)))
            ],
            warning="Undo would write protected paths: "
            + "; ".join(f"{n} is {d.protected}" for n, d in zip(names, protected, strict=True)),
        )
    except (ToolRejectedError, PermissionDenied):
        return []
    return [f"{d.op.root}/{d.op.path}" for d in protected]


def _report(host: UndoHost, plan: UndoPlan, decisions: Sequence[Decision], *, dry_run: bool) -> UndoReport:
    report = UndoReport(turns=list(plan.turns), prompts=list(plan.prompts), dry_run=dry_run)
    for d in decisions:
        name = display(Path(d.op.root), d.op.path, host.work_dir)
        if d.action == "restore":
            report.restored.append(name)
        elif d.action == "remove":
            report.removed.append(name)
        elif d.action == "already":
            report.already.append(name)
        else:
            report.left.append((name, d.why))
    for names in (report.restored, report.removed, report.already, report.left):
        names.sort()
    for u in plan.uncovered:
        report.not_covered.append(
            (
                display(Path(u.root), u.path, host.work_dir) if u.path else "",
                u.why if u.path else f"{u.root}: {u.why}",
            )
        )
    return report


# --------------------------------------------------------------------------- the conversation


def _rewind(host: UndoHost, plan: UndoPlan) -> str:
    """The conversation as it stood before the oldest undone turn; the current file moves aside."""
    prefix, why = _prefix(host.session.dir, plan.context)
    if prefix is None:
        return f"The conversation is unchanged: {why}."
    try:
        host.context = host.context.rewind(prefix)
    except OSError as exc:
        return f"The conversation is unchanged: it could not be rewritten ({exc.strerror or exc})."
    tokens = host.context.token_count or host.context.estimated_tokens
    host.stream.send(StatusUpdate(**context_figures(tokens, host.max_context_size)))
    those = "That turn is" if len(plan.turns) == 1 else "Those turns are"
    return f"{those} no longer in the conversation the model sees (the session's files keep the full record)."


def _conversation_preview(host: UndoHost, plan: UndoPlan) -> str:
    prefix, why = _prefix(host.session.dir, plan.context)
    if prefix is None:
        return f"The conversation would stay as it is: {why}."
    those = "That turn" if len(plan.turns) == 1 else "Those turns"
    return f"{those} would be removed from the conversation the model sees."


def _prefix(session_dir: Path, position: dict[str, int] | None) -> tuple[str | None, str]:
    """The context file's text up to the turn (found by its identity: a compaction or /clear since
    moved it to `context_N.jsonl`), or None and why it cannot be had."""
    if not position:
        return None, "where it stood before those turns was not recorded"
    for path in sorted(session_dir.glob("context*.jsonl")):
        try:
            st = path.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) != (position.get("dev"), position.get("ino")):
            continue
        offset = int(position.get("offset", 0))
        with open(path, "rb") as f:
            data = f.read(offset)
        if len(data) != offset or (data and not data.endswith(b"\n")):
            return None, "the conversation file is shorter than it was"
        return data.decode("utf-8", "replace"), ""
    return None, "the conversation file of that time is gone"


# --------------------------------------------------------------------------- the command


async def undo_command(host: UndoHost, args: str) -> TurnResult:
    """`/undo [N] [--force] [--dry-run]`: the answer as the agent's text, the result in a
    Notification (category "undo") whose payload lists what was restored and left."""
    parsed = parse_args(args)
    if isinstance(parsed, str):
        host.say(parsed)
        return TurnResult("finished")
    report = await run_undo(host, parsed)
    host.checkpoints.last_report = report
    text = report.text()
    host.stream.send(
        Notification(
            id=f"undo-{time.time_ns()}",
            category="undo",
            type="undo_preview" if report.dry_run else ("undo_refused" if report.refused else "turns_undone"),
            title=_title(report),
            body=_summary(report),
            severity="warning" if report.refused or report.left else "info",
            created_at=time.time(),
            payload=report.payload(),
        )
    )
    host.say(text)
    return TurnResult("finished")


def _title(report: UndoReport) -> str:
    if report.refused:
        return "Nothing was undone"
    n = len(report.turns)
    return f"{'Would undo' if report.dry_run else 'Undid'} {n} turn{'s' if n != 1 else ''}"


def _summary(report: UndoReport) -> str:
    if report.refused:
        return report.refused
    parts = [f"{len(report.restored)} restored", f"{len(report.removed)} removed"]
    if report.left:
        parts.append(f"{len(report.left)} left as they are")
    if report.not_covered:
        parts.append(f"{len(report.not_covered)} not recorded")
    return "Files: " + ", ".join(parts) + "."


# --------------------------------------------------------------------------- helpers


def _nothing_to_undo(cp: Checkpoints) -> str:
    return f"Nothing to undo: no turn of this session is recorded. {_kept_note(cp)}"


def _kept_note(cp: Checkpoints) -> str:
    return (
        f"Only the last {cp.settings.keep_turns} turns are kept for undo (`[undo] keep_turns`); "
        "turns already undone cannot be undone again."
    )


def _running_tasks(host: UndoHost) -> str:
    try:
        tasks = host.tasks.list(active_only=True)
    except Exception:
        return ""
    return ", ".join(t.id for t in tasks if not t.elsewhere)


def _prewarm(store: ShadowStore) -> None:
    try:
        store.prewarm()
    except (ShadowError, OSError) as exc:
        log.info("undo: reading %s ahead failed (the snapshot will): %s", store.root, exc)


def _position(context_file: Path) -> dict[str, int] | None:
    try:
        st = context_file.stat()
    except OSError:
        return None
    return {"dev": st.st_dev, "ino": st.st_ino, "offset": st.st_size}


def _locate(real: str, roots: Sequence[str]) -> tuple[str, str] | None:
    for root in roots:
        if _within(real, root) and real != root:
            return root, os.path.relpath(real, root).replace(os.sep, "/")
    return None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _tree_state(entry: TreeEntry | None, perm: int | None) -> FileState:
    if entry is None:
        return ABSENT
    if entry.mode == LINK_MODE:
        return FileState("link", entry.sha, 0o777, "git")
    if entry.mode == GITLINK_MODE:
        return FileState("repo", entry.sha)
    default = 0o755 if entry.mode == "100755" else 0o644
    return FileState("file", entry.sha, perm or default, "git")


def _blob_states(record: TurnRecord) -> list[FileState]:
    states = [before for _, _, _, before in record.edits]
    states += [c.before for c in record.changes or ()]
    return [s for s in states if s.source == "blob"]


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB" if n >= 1024 * 1024 else f"{n:,} bytes"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _listing(label: str, paths: Sequence[str]) -> str:
    return (
        f"{label}: "
        + ", ".join(f"`{p}`" for p in paths[:SHOWN_PATHS])
        + (f" and {len(paths) - SHOWN_PATHS} more" if len(paths) > SHOWN_PATHS else "")
    )


def _more(items: Sequence[Any]) -> str:
    return f"\n- … and {len(items) - SHOWN_PATHS} more" if len(items) > SHOWN_PATHS else ""
