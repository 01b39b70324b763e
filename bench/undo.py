"""What recording a turn for /undo costs (issue #33), on a repository of many files.

    python -m bench.undo [--files N] [--runs N] [--json FILE]

Through `core/undo.Checkpoints`, the path the tools take: a fresh session on a work dir of
`--files` files (default 10,000, ~1.3 KB each, in 100 × 7 directories, with a `.gitignore`d build
folder of 2,000 more), then one turn per run. Each turn begins (`begin_turn`), takes the snapshot
the first Shell command triggers (`before_command`), changes three files, keeps one file's old
content as WriteFile does (`before_edit`), and ends (`end_turn`: the second snapshot, the diff,
the ignored files looked at). The first turn's snapshot reads every file; the target (issue #33)
is the snapshot of every later turn: under 300 ms. A turn that changes nothing (no command, no
edit: only `begin_turn` and `end_turn`) is timed too: it should cost next to nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .machine import header_lines, machine_info
from .stats import median, percentile

TARGET_MS = 300.0


def make_repository(root: Path, files: int) -> None:
    root.mkdir(parents=True)
    body = "".join(f"line {i} of a file in the benchmark repository\n" for i in range(30))
    for i in range(files):
        directory = root / f"pkg{i % 100}" / f"mod{i % 7}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"file{i}.py").write_text(body + f"# {i}\n")
    (root / ".gitignore").write_text("build/\n")
    build = root / "build"
    build.mkdir()
    for i in range(2_000):
        (build / f"out{i}.o").write_text("object\n")


async def measure(files: int, runs: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="kimi-bench-undo-"))
    os.environ["KIMI_SHARE_DIR"] = str(base / "share")
    work = base / "project"
    make_repository(work, files)
    from kimi_acp import sessions
    from kimi_acp.config import UndoSettings
    from kimi_acp.core.undo import Checkpoints

    session = sessions.create(work)
    session.context_file.write_text('{"role": "_system_prompt", "content": "bench"}\n')
    checkpoints = Checkpoints(session.dir / "undo", UndoSettings(keep_turns=runs + 10), lambda: [work])
    samples: dict[str, list[float]] = {
        "first_snapshot": [],
        "snapshot": [],
        "end": [],
        "edit": [],
        "no_change": [],
    }

    def timed(name: str, started: float) -> None:
        samples[name].append((time.perf_counter() - started) * 1000)

    try:
        for turn in range(runs + 1):
            await checkpoints.begin_turn(f"turn {turn}", session.context_file)
            started = time.perf_counter()
            await checkpoints.before_command()
            timed("first_snapshot" if turn == 0 else "snapshot", started)
            for k in range(3):
                i = (turn * 3 + k) % files
                path = work / f"pkg{i % 100}" / f"mod{i % 7}" / f"file{i}.py"
                path.write_text(path.read_text() + f"# changed in turn {turn}\n")
            edited = work / "pkg50" / "mod1" / f"edited{turn}.txt"
            edited.write_text("before\n")
            started = time.perf_counter()
            await checkpoints.before_edit(edited)
            timed("edit", started)
            edited.write_text("after\n")
            started = time.perf_counter()
            await checkpoints.end_turn()
            timed("end", started)

            started = time.perf_counter()
            await checkpoints.begin_turn("a turn that changes nothing", session.context_file)
            await checkpoints.end_turn()
            timed("no_change", started)
        ended = checkpoints.undoable()[1]
        assert ended.changes and len(ended.changes) >= 4, ended.changes  # the changes were seen
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = {
        name: {
            "median_ms": round(median(values), 2),
            "p90_ms": round(percentile(values, 90), 2),
            "n": len(values),
        }
        for name, values in samples.items()
    }
    return {"files": files, "runs": runs, "rows": rows, "samples": samples}


LABELS = {
    "first_snapshot": "first turn's snapshot (every file read)",
    "snapshot": "a later turn's snapshot (before its first command)",
    "end": "end of a turn with commands (snapshot, diff, ignored files)",
    "edit": "an edit's old content kept (before WriteFile)",
    "no_change": "a turn that changes nothing (begin + end)",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.undo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000, help="files in the repository (default 10,000)")
    parser.add_argument("--runs", type=int, default=20, help="turns after the first (default 20)")
    parser.add_argument("--json", metavar="FILE", help="also write the results (and every sample) as JSON")
    args = parser.parse_args(argv)
    if shutil.which("git") is None:
        print("git is not installed: snapshots need it")
        return 1
    info = machine_info()
    result = asyncio.run(measure(max(1, args.files), max(1, args.runs)))
    for line in header_lines(info):
        print(line)
    print(f"{result['files']:,} files (+2,000 ignored), {result['runs']} turns after the first\n")
    print("| step | median ms | p90 ms | samples | target |")
    print("|---|---|---|---|---|")
    for name, row in result["rows"].items():
        target = (
            ("ok" if row["median_ms"] < TARGET_MS else "OVER") + f" < {TARGET_MS:g} ms"
            if name == "snapshot"
            else ""
        )
        print(f"| {LABELS[name]} | {row['median_ms']:.1f} | {row['p90_ms']:.1f} | {row['n']} | {target} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, **result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
