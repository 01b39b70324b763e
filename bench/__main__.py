"""`python -m bench`: run the benchmark suite and print the table (see docs/performance.md)."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import shlex
import signal
import sys
import time
from typing import Any

from . import reference, rpc
from .drive import acp_initialize, acp_new_session, spawn
from .fixtures import Workspace, fake_model, make_share, prime_schema_index
from .machine import load_average, machine_info
from .measures import FULL, MEASURES, QUICK, Bench, Impl
from .report import Collector, render, write_json

ALIASES = {"1": "start", "2": "sessions", "3": "stream", "4": "history", "5": "concurrent"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks of `kimi acp` and `kimi --wire` (or any ACP / Wire agent command).",
        epilog="measures: " + ", ".join(f"{n} {name}" for n, name in ALIASES.items()),
    )
    parser.add_argument("--runs", type=int, default=None, help="runs per measure (default 5; 1 with --quick)")
    parser.add_argument("--only", default="", help="comma-separated measures to run, by name or number")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    default_acp = shlex.join([sys.executable, "-m", "kimi_acp", "acp"])
    default_wire = shlex.join([sys.executable, "-m", "kimi_acp", "--wire"])
    parser.add_argument(
        "--acp-cmd", default=default_acp, help=f"ACP agent command (default: {default_acp}); '' skips ACP"
    )
    parser.add_argument(
        "--wire-cmd",
        default=default_wire,
        help="Wire agent command; --work-dir/--session are appended; '' skips Wire",
    )
    parser.add_argument(
        "--compare-acp-cmd", default=None, help="a second ACP agent to run the same measures on"
    )
    parser.add_argument(
        "--compare-wire-cmd", default=None, help="a second Wire agent to run the same measures on"
    )
    parser.add_argument(
        "--compare-label", default="other", help="name of the second implementation in the table"
    )
    parser.add_argument(
        "--compare-ref",
        action="store_true",
        help=f"compare with Kimi Code CLI {reference.VERSION} (the reference), found by --ref-venv",
    )
    parser.add_argument(
        "--ref-venv",
        default=None,
        help=f"the reference's venv (default ${reference.ENV_VAR}, else {reference.DEFAULT_VENV})",
    )
    parser.add_argument(
        "--no-netns",
        action="store_true",
        help="with --compare-ref: do not isolate the run in a loopback-only network namespace",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 1 run, smaller sizes (under a minute)"
    )
    parser.add_argument(
        "--keep-temp", action="store_true", help="keep the temp share dirs (path printed at the end)"
    )
    args = parser.parse_args(argv)
    if args.runs is None:
        args.runs = 1 if args.quick else 5
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    names = [ALIASES.get(n.strip(), n.strip()) for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in MEASURES]
    if unknown:
        parser.error(f"unknown measure(s) {', '.join(unknown)}; choose from {', '.join(MEASURES)}")
    args.measures = [n for n in MEASURES if not names or n in names]
    if args.compare_ref and (args.compare_acp_cmd is not None or args.compare_wire_cmd is not None):
        parser.error("--compare-ref and --compare-acp-cmd/--compare-wire-cmd are exclusive")
    return args


def log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)



WARM_START_S = 3.0  # past the warm-ups (0.5 s), which write the generated-code cache when they are done


async def warm_start(impl: Impl, workspace: Workspace) -> None:
    """A first start, as every start but a user's very first follows one: `initialize`, a session,
    then the warm-ups, which cache the code generated at start-up (kimi_acp/_compat/generated_code.py)
    in the same KIMI_CACHE_DIR as the schema index."""
    share = make_share(workspace, "warm-start", "scripted")
    p = await spawn(impl.acp_cmd, share, env=impl.env)
    try:
        await acp_initialize(p)
        await acp_new_session(p, share.work_dir)
        await asyncio.sleep(WARM_START_S)
    finally:
        await p.close()

async def run(args: argparse.Namespace) -> tuple[Collector, Collector | None, dict[str, Any]]:
    sizes = QUICK if args.quick else FULL
    ours = Impl("ours", shlex.split(args.acp_cmd), shlex.split(args.wire_cmd))
    other = None
    if args.compare_ref:
        kimi = str(args.ref_kimi)
        other = Impl(
            args.compare_label,
            [kimi, "acp"],
            [kimi, "--wire"],
            env=dict(reference.ENV),
            prepare=reference.prepare_share,
            max_sessions=reference.MAX_SESSIONS,
        )
    elif args.compare_acp_cmd is not None or args.compare_wire_cmd is not None:
        other = Impl(
            args.compare_label,
            shlex.split(args.compare_acp_cmd or ""),
            shlex.split(args.compare_wire_cmd or ""),
        )
    workspace = Workspace(keep=args.keep_temp)
    cache = workspace.root / "cache"
    if prime_schema_index(ours.acp_cmd, cache):
        ours.env["KIMI_CACHE_DIR"] = str(cache)  # every start but the first finds it (measure 1 has both)
    else:
        log("ACP schema index not cached beforehand (not `PYTHON -m kimi_acp`): starts measure the first-start path")
    ours_col, other_col = Collector(), (Collector() if other else None)
    main_task = asyncio.current_task()
    if main_task is not None:  # SIGTERM stops the bench like Ctrl-C: cleanly, children stopped
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    try:
        if "KIMI_CACHE_DIR" in ours.env and ours.acp_cmd:
            await warm_start(ours, workspace)
        async with fake_model() as model:
            for name in args.measures:
                for impl, col in ((ours, ours_col), (other, other_col)):
                    if impl is None or col is None:
                        continue
                    who = f" [{impl.label}]" if other else ""
                    bench = Bench(
                        impl,
                        sizes,
                        args.runs,
                        workspace,
                        model.port,
                        col,
                        progress=lambda t, w=who: log(t + w),
                    )
                    await MEASURES[name](bench)
    finally:
        rpc.kill_all()
        if args.keep_temp:
            log(f"temp files kept in {workspace.root}")
        workspace.cleanup()
    settings = {
        "runs": args.runs,
        "quick": args.quick,
        "measures": args.measures,
        "sizes": sizes.__dict__,
        "sizes_text": sizes.text(),
        "acp_cmd": args.acp_cmd,
        "wire_cmd": args.wire_cmd,
        "compare_acp_cmd": args.compare_acp_cmd,
        "compare_wire_cmd": args.compare_wire_cmd,
        "compare_label": args.compare_label if other else None,
        "netns": bool(os.environ.get(reference.NETNS_MARK)),
    }
    return ours_col, other_col, settings


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if not sys.platform.startswith("linux"):
        print("bench: Linux only (RSS and CPU time come from /proc)", file=sys.stderr)
        return 2
    if args.compare_ref:
        try:
            args.ref_kimi = reference.locate(args.ref_venv)
        except reference.ReferenceMissing as exc:
            print(f"bench: {exc}", file=sys.stderr)
            return 2
        if args.compare_label == "other":
            args.compare_label = f"kimi-cli {reference.VERSION}"
        args.compare_acp_cmd = f"{args.ref_kimi} acp"
        args.compare_wire_cmd = f"{args.ref_kimi} --wire"
        if not args.no_netns:
            status = reference.reexec_in_netns(argv)
            if status is not None:
                return status
            if not os.environ.get(reference.NETNS_MARK):
                log("no private network namespace here (needs root and unshare): running without one")
    atexit.register(rpc.kill_all)
    info = machine_info()
    started = time.perf_counter()
    try:
        ours, other, settings = asyncio.run(run(args))
    except (KeyboardInterrupt, asyncio.CancelledError):
        rpc.kill_all()
        print("bench: interrupted", file=sys.stderr)
        return 130
    settings["wall_seconds"] = round(time.perf_counter() - started, 1)
    info["load_end"] = load_average()
    label = settings["compare_label"]
    if other is not None:
        ours.merge_compare(other)
    rows = list(ours.rows.values())
    print(render(info, settings, rows, label))
    print(f"\n(wall time {settings['wall_seconds']} s)")
    anomalies = [f"{text} (×{count})" if count > 1 else text for text, count in rpc.ANOMALIES.items()]
    if anomalies:
        print("\nagent anomalies (seen while closing agents):\n" + "\n".join(f"- {a}" for a in anomalies))
    settings["anomalies"] = anomalies
    if args.json:
        write_json(args.json, info, settings, rows)
        log(f"wrote {args.json}")
    failed = any(r.errors for r in rows) or (
        other is not None and any(r.compare and r.compare.errors for r in rows)
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
