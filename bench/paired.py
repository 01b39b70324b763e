"""Paired start-up comparison of two source trees, each as a user's regular install has it.

    python -m bench.paired TREE_A TREE_B [--rounds N] [--env-a KEY=VALUE ...] [--env-b KEY=VALUE ...]
                           [--python PYTHON] [--cache DIR] [--json FILE]

    python -m bench.paired /tmp/orig /work/main --rounds 10        # previous main → this tree
    python -m bench.paired . . --env-b KIMI_PLAIN_STARTUP=1           # one tree, two environments

Why: this machine's speed drifts by a third over minutes, so two separate runs of `python -m bench`
do not tell what a change did; and an editable install is not what a user starts. So each tree is
installed as pipx would (`pip install TREE`, not `-e`) in its own venv, and the two are measured in
alternation, A B B A in every round, so that a drift that is linear over a round cancels in each
round's difference, mean(B) − mean(A).

Installs: the tree's git-listed files (tracked and untracked, not ignored) are copied to a temp dir
(an in-tree build would write build/ and *.egg-info into the tree, and setuptools' build/ keeps
deleted modules) and installed from there into `--cache`/<sha256 of those files and the
interpreter> (default /tmp/kimi-bench-venvs), reused while that hash is unchanged; .pyc files are
written at install (pip, then compileall). Delete old venvs there by hand. Only the installed
`kimi` command is run: no tree's modules are ever imported here, so the trees' layouts may differ.

Each side has its own `$KIMI_SHARE_DIR` (bench.fixtures.make_share: the scripted test model) and
the user's environment (without PYTHONPATH, the KIMI_*/OPENAI_* overrides, ...; fixtures.Share.env)
plus `--env-a` / `--env-b`. Before measuring, each side's `kimi acp` opens a session and stays up
3 s (the schema index is cached 2 s after the first session), then one round is run and dropped.

Measures, each in a fresh process (spawn: just before the process is created):
  ready   spawn → first `session/new` answered (`initialize` sent first, as an IDE does)
  init    spawn → `initialize` answered (the same process)
  load    spawn → cold `session/load` of a 100-turn session answered (a fresh copy each time)
  replay  spawn → Wire `replay` of the same session finished (`kimi --wire --session ID`)
  rss     RSS of the ACP server after `initialize` + `session/new`, settled (1 s, then idle)
Per measure: medians of A and B (all samples), the median of the per-round differences B − A with
their range and quartiles, and median(B) / median(A). `--json` writes every sample as well.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import procstat, rpc
from .drive import acp_initialize, acp_new_session, ms, session_updates, spawn, wire_events, wire_initialize
from .fixtures import History, Share, Workspace, build_history, copy_history, make_share, work_dir_key
from .machine import machine_info
from .measures import FULL, SETTLE_S
from .stats import median, percentile

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "kimi-bench-venvs"
DEFAULT_PYTHON = str(Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}")
TURNS, TOOL_TURNS = FULL.history_turns, FULL.history_tool_turns
STEP_TIMEOUT = 60.0  # one spawn and its requests
WARM_WAIT_S = 3.0  # the server caches the ACP schema index 2 s after its first session
MARK = ".bench-installed"  # written last: a venv without it is half built and is rebuilt

MEASURES: dict[str, tuple[str, str]] = {  # key: (label, unit), in table order
    "ready": ("spawn → first session/new answered (ACP)", "ms"),
    "init": ("spawn → initialize answered (ACP)", "ms"),
    "load": (f"spawn → cold session/load, {TURNS} turns (ACP)", "ms"),
    "replay": (f"spawn → Wire replay finished, {TURNS} turns", "ms"),
    "rss": ("RSS after initialize + session/new (ACP)", "MiB"),
}


def log(text: str) -> None:
    print(f"[paired {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return f.read().strip()


# --------------------------------------------------------------------------- regular installs


def _git(tree: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, check=True)
    return done.stdout.decode()


def snapshot(tree: Path, dest: Path) -> str:
    """Copy the tree's git-listed files to `dest`; the sha256 of their paths and contents."""
    digest = hashlib.sha256()
    listed = _git(tree, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in sorted(n for n in listed if n):
        source = tree / name
        if not source.is_file():  # deleted in the work tree (still in the index), or a submodule
            continue
        data = source.read_bytes()
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        shutil.copymode(source, target)
    return digest.hexdigest()


@dataclass
class Install:
    tree: Path
    venv: Path
    key: str
    revision: str  # short HEAD, "+dirty" when the work tree differs from it

    @property
    def kimi(self) -> str:
        return str(self.venv / "bin" / "kimi")


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def install(tree: Path, python: str, cache: Path) -> Install:
    """The tree installed as a user has it, built once per content hash."""
    dirty = bool(_git(tree, "status", "--porcelain").strip())
    revision = _git(tree, "rev-parse", "--short", "HEAD").strip() + ("+dirty" if dirty else "")
    version = subprocess.run([python, "--version"], capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory(prefix="kimi-bench-src-") as copy:
        files = snapshot(tree, Path(copy))
        key = hashlib.sha256(f"{os.path.realpath(python)}\0{version}\0{files}".encode()).hexdigest()[:16]
        venv = cache / key
        if (venv / MARK).exists():
            log(f"{tree} ({revision}): reusing {venv}")
            return Install(tree, venv, key, revision)
        log(f"{tree} ({revision}): installing into {venv} (pip install, ~20 s)")
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        _run([python, "-m", "venv", str(venv)])
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", copy])
    # pip compiles what it installs; this only fills gaps (it compiles, it does not import)
    for site in venv.glob("lib/python*/site-packages"):
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "compileall", "-q", "-j0", str(site)],
            check=False,
            capture_output=True,
        )
    (venv / MARK).write_text(json.dumps({"tree": str(tree), "revision": revision, "python": python}))
    return Install(tree, venv, key, revision)


# --------------------------------------------------------------------------- one side, one visit


@dataclass
class Side:
    label: str  # "A" or "B"
    install: Install
    env: dict[str, str]  # on top of the share's environment
    share: Share
    history: History
    new_dir: Path  # the work dir of `session/new` (its session bucket is removed after each run)
    samples: dict[str, list[list[float]]] = field(default_factory=dict)  # measure → per round
    errors: list[str] = field(default_factory=list)

    def add(self, round_no: int, key: str, value: float) -> None:
        if round_no >= 0:  # round -1 warms up and is not kept
            rounds = self.samples.setdefault(key, [])
            rounds.extend([] for _ in range(round_no + 1 - len(rounds)))
            rounds[round_no].append(value)


async def acp_new(side: Side, round_no: int) -> None:
    p = await spawn([side.install.kimi, "acp"], side.share, cwd=side.new_dir, env=side.env)
    try:
        _, reply = await acp_initialize(p)
        side.add(round_no, "init", ms(reply.received - p.started))
        _, reply = await acp_new_session(p, side.new_dir)
        side.add(round_no, "ready", ms(reply.received - p.started))
        await asyncio.sleep(SETTLE_S)  # past the delayed warm-ups: their memory counts too
        await procstat.wait_idle(p.pid, quiet=0.2, timeout=15)
        side.add(round_no, "rss", procstat.rss_bytes(p.pid) / procstat.MIB)
    finally:
        await p.close()
        shutil.rmtree(side.share.dir / "sessions" / work_dir_key(side.new_dir), ignore_errors=True)


def _session_dir(side: Side, history: History) -> Path:
    return side.share.dir / "sessions" / work_dir_key(history.work_dir) / history.session_id


async def acp_load(side: Side, round_no: int) -> None:
    history = copy_history(side.share.dir, side.history)  # never loaded before: cold
    p = await spawn([side.install.kimi, "acp"], side.share, cwd=history.work_dir, env=side.env)
    try:
        await acp_initialize(p)
        params = {"sessionId": history.session_id, "cwd": str(history.work_dir), "mcpServers": []}
        reply = await p.request("session/load", params, timeout=STEP_TIMEOUT)
        reply.unwrap()
        kinds = Counter(
            u.get("sessionUpdate")
            for _, u in session_updates(p.notifications[: reply.seq], history.session_id)
        )
        if kinds["user_message_chunk"] != TURNS or kinds["tool_call"] != TOOL_TURNS:
            raise RuntimeError(
                f"session/load replayed {dict(kinds)}, expected {TURNS} turns, {TOOL_TURNS} tools"
            )
        side.add(round_no, "load", ms(reply.received - p.started))
    finally:
        await p.close()
        shutil.rmtree(_session_dir(side, history), ignore_errors=True)


async def wire_replay(side: Side, round_no: int) -> None:
    history = copy_history(side.share.dir, side.history)
    extra = ["--work-dir", str(history.work_dir), "--session", history.session_id]
    p = await spawn([side.install.kimi, "--wire"], side.share, extra=extra, env=side.env, string_ids=True)
    try:
        await wire_initialize(p)
        start = len(p.notifications)
        reply = await p.request("replay", None, timeout=STEP_TIMEOUT)
        reply.unwrap()
        got = len(wire_events(p.notifications[start : reply.seq]))
        if got != history.wire_records:
            raise RuntimeError(f"replay sent {got} events, expected {history.wire_records}")
        side.add(round_no, "replay", ms(reply.received - p.started))
    finally:
        await p.close()
        shutil.rmtree(_session_dir(side, history), ignore_errors=True)


async def visit(side: Side, round_no: int) -> None:
    """One sample of every measure; a failure is recorded and costs that sample only."""
    for step in (acp_new, acp_load, wire_replay):
        try:
            await asyncio.wait_for(step(side, round_no), STEP_TIMEOUT)
        except Exception as exc:  # reported in the table and the JSON
            text = f"round {round_no + 1}, {step.__name__}: {type(exc).__name__}: {str(exc)[:300]}"
            side.errors.append(text)
            log(f"{side.label} FAILED {text}")


async def warm(side: Side) -> None:
    """A first start as after installing: it writes the schema index (2 s after the session)."""
    p = await spawn([side.install.kimi, "acp"], side.share, cwd=side.new_dir, env=side.env)
    try:
        await acp_initialize(p)
        await acp_new_session(p, side.new_dir)
        await asyncio.sleep(WARM_WAIT_S)
    finally:
        await p.close()
        shutil.rmtree(side.share.dir / "sessions" / work_dir_key(side.new_dir), ignore_errors=True)
    cache = Path(side.env.get("KIMI_CACHE_DIR") or side.share.dir / "cache")
    if not cache.is_dir() or not any(cache.iterdir()):
        log(f"{side.label}: nothing cached in {cache} after the first start (no schema index?)")


# --------------------------------------------------------------------------- report


def summarize(a: Side, b: Side) -> list[dict[str, Any]]:
    rows = []
    for key, (label, unit) in MEASURES.items():
        a_rounds, b_rounds = a.samples.get(key, []), b.samples.get(key, [])
        a_all = [v for r in a_rounds for v in r]
        b_all = [v for r in b_rounds for v in r]
        diffs = [sum(rb) / len(rb) - sum(ra) / len(ra) for ra, rb in zip(a_rounds, b_rounds) if ra and rb]
        row: dict[str, Any] = {"key": key, "label": label, "unit": unit, "a": a_rounds, "b": b_rounds}
        row["diffs"] = diffs
        if a_all and b_all and diffs:
            row |= {
                "a_median": median(a_all),
                "b_median": median(b_all),
                "diff_median": median(diffs),
                "diff_min": min(diffs),
                "diff_p25": percentile(diffs, 25),
                "diff_p75": percentile(diffs, 75),
                "diff_max": max(diffs),
                "b_over_a_pct": 100 * median(b_all) / median(a_all),
            }
        rows.append(row)
    return rows


def _num(value: float, unit: str, sign: str = "") -> str:
    return f"{value:{sign}.{1 if unit == 'MiB' else 0}f}"


def render(rows: list[dict[str, Any]], a: Side, b: Side) -> str:
    head = (
        f"{'measure':<50} {'A':>7} {'B':>7} {'B−A':>6} {'B−A p25..p75':>13} {'B−A min..max':>13} {'B/A':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if "a_median" not in r:
            lines.append(f"{r['label']:<50} FAILED (no pairs)")
            continue
        u = r["unit"]
        iqr = _num(r["diff_p25"], u, "+") + ".." + _num(r["diff_p75"], u, "+")
        span = _num(r["diff_min"], u, "+") + ".." + _num(r["diff_max"], u, "+")
        lines.append(
            f"{r['label'] + ', ' + u:<50} {_num(r['a_median'], u):>7} {_num(r['b_median'], u):>7} "
            f"{_num(r['diff_median'], u, '+'):>6} {iqr:>13} {span:>13} {r['b_over_a_pct']:>6.1f}%"
        )
    for side in (a, b):
        env = " ".join(f"{k}={v}" for k, v in side.env.items()) or "-"
        lines.append(
            f"{side.label}: {side.install.tree} ({side.install.revision}), env {env}, {side.install.venv}"
        )
        lines += [f"  error: {e}" for e in side.errors]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.paired", description=__doc__.split("\n")[0])
    parser.add_argument("tree_a", type=Path)
    parser.add_argument("tree_b", type=Path)
    parser.add_argument("--rounds", type=int, default=12, help="A B B A rounds (default 12)")
    parser.add_argument("--env-a", action="append", default=[], metavar="KEY=VALUE", help="for A only")
    parser.add_argument("--env-b", action="append", default=[], metavar="KEY=VALUE", help="for B only")
    parser.add_argument("--python", default=DEFAULT_PYTHON, help=f"the venvs' interpreter ({DEFAULT_PYTHON})")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"venvs (default {DEFAULT_CACHE})")
    parser.add_argument("--json", metavar="FILE", help="also write every sample as JSON")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for name in ("env_a", "env_b"):
        bad = [e for e in getattr(args, name) if "=" not in e]
        if bad:
            parser.error(f"--{name.replace('_', '-')} wants KEY=VALUE, got {bad[0]!r}")
        setattr(args, name, dict(e.split("=", 1) for e in getattr(args, name)))
    return args


async def run(args: argparse.Namespace, workspace: Workspace) -> tuple[Side, Side]:
    installs: dict[Path, Install] = {}
    sides = []
    for label, tree, env in (("A", args.tree_a, args.env_a), ("B", args.tree_b, args.env_b)):
        tree = tree.resolve()
        if tree not in installs:
            installs[tree] = install(tree, args.python, args.cache)
        share = make_share(workspace, f"side-{label}", "scripted")
        history = build_history(share.dir, share.work_dir, TURNS, TOOL_TURNS)
        sides.append(Side(label, installs[tree], env, share, history, share.new_work_dir("new")))
    a, b = sides
    for side in (a, b):
        log(f"{side.label}: warming up (first start, then a round that is not kept)")
        await warm(side)
    for round_no in range(-1, args.rounds):
        if round_no >= 0:
            log(f"round {round_no + 1}/{args.rounds}, load {loadavg()}")
        for side in (a, b, b, a):
            await visit(side, round_no)
    return a, b


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # a user's `kimi` runs its own venv: nothing of the tree the bench runs from, or of a dev shell
    for name in ("PYTHONPATH", "PYTHONHOME"):
        os.environ.pop(name, None)
    atexit.register(rpc.kill_all)
    workspace = Workspace()
    info = machine_info()
    load_start, started = loadavg(), time.perf_counter()
    try:
        a, b = asyncio.run(run(args, workspace))
    except KeyboardInterrupt:
        rpc.kill_all()
        print("bench.paired: interrupted", file=sys.stderr)
        return 130
    finally:
        workspace.cleanup()
    load_end, wall = loadavg(), round(time.perf_counter() - started, 1)
    rows = summarize(a, b)
    print(f"{args.rounds} rounds A B B A, {info['cpu']}, Python {args.python}, wall {wall} s")
    print(f"/proc/loadavg: {load_start} at start, {load_end} at end\n")
    print(render(rows, a, b))
    anomalies = [f"{text} (×{count})" if count > 1 else text for text, count in rpc.ANOMALIES.items()]
    if anomalies:
        print("\nagent anomalies (seen while closing agents):\n" + "\n".join(f"- {x}" for x in anomalies))
    if args.json:
        sides = {
            s.label: {
                "tree": str(s.install.tree),
                "revision": s.install.revision,
                "venv": str(s.install.venv),
                "key": s.install.key,
                "env": s.env,
                "errors": s.errors,
            }
            for s in (a, b)
        }
        data = {
            "machine": info,
            "python": args.python,
            "rounds": args.rounds,
            "loadavg_start": load_start,
            "loadavg_end": load_end,
            "wall_seconds": wall,
            "sides": sides,
            "measures": rows,
            "anomalies": anomalies,
        }
        Path(args.json).write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        log(f"wrote {args.json}")
    return 1 if a.errors or b.errors else 0


if __name__ == "__main__":
    sys.exit(main())
