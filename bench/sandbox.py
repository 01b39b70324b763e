"""What the OS sandbox adds to a Shell command (issue #24): `true`, unconfined and in each sandbox.

    python -m bench.sandbox [--runs N] [--json FILE]

Each sample is one `LocalKaos.run_command("true")`, the path the Shell tool takes: the user's shell
started in a process group of its own, its output drained, its exit awaited. Unconfined, in the
`workspace-write` sandbox with bubblewrap, and with the Landlock launcher (where the kernel has
it), in a fresh session with a git repository as its work dir (so the policy has `.git` bits to
keep read-only) and the test machine's credential files, as a user's would be. The variants run
in rotation, one sample each per round (after 5 warm-up rounds), so that the machine's drift
falls on all of them alike; the figure is the added latency, median(sandboxed) − median(unconfined),
and the same for the 90th percentile. The per-command work of the sandbox itself (building the
policy: a few `stat`s) is included. The target (issue #24): under 20 ms per command on 2 cores.
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

TARGET_MS = 20.0
WARM_UP = 5


async def measure(runs: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="kimi-bench-sandbox-"))
    os.environ["KIMI_SHARE_DIR"] = str(base / "share")
    work = base / "project"
    work.mkdir()
    await (
        await asyncio.create_subprocess_exec("git", "init", "-q", str(work))
    ).wait()  # .git bits to keep read-only
    from kimi_acp import sessions
    from kimi_acp.config import SandboxSettings
    from kimi_acp.kaos.local import LocalKaos
    from kimi_acp.sandbox import detect
    from kimi_acp.sandbox.policy import build_policy
    from kimi_acp.sandbox.session import Confinement, SessionSandbox

    kaos = LocalKaos()
    sandbox = SessionSandbox(sessions.create(work), SandboxSettings(mode="workspace-write"))
    variants: dict[str, Any] = {"unconfined": lambda: None}
    found: dict[str, str] = {}
    for backend in ("bubblewrap", "landlock"):
        os.environ[detect.ENV_VAR] = backend
        detect.forget()
        machine = detect.machine()
        if machine.backend is None:
            print(f"{backend}: not available here ({machine.why_not})")
            continue
        found[backend] = machine.label

        def confine(machine: Any = machine) -> Confinement:
            """What `SessionSandbox.confinement` does for each command: the policy, built from the disk now."""
            policy = build_policy(
                "workspace-write", work_dir=work, dirs=[], temp_dir=sandbox.temp_dir(), allow_network=False
            )
            return Confinement(machine.backend, policy, machine.program)

        variants[backend] = confine
    os.environ.pop(detect.ENV_VAR, None)
    detect.forget()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for round_ in range(WARM_UP + runs):
            for name, confine in variants.items():
                started = time.perf_counter()
                result = await kaos.run_command(
                    "true", cwd=work, timeout=30, output_limit=1000, sandbox=confine()
                )
                elapsed = (time.perf_counter() - started) * 1000
                if result.exit_code != 0:
                    raise RuntimeError(f"{name}: `true` failed: {result.output!r}")
                if round_ >= WARM_UP:
                    samples[name].append(elapsed)
    finally:
        await sandbox.aclose()
        shutil.rmtree(base, ignore_errors=True)
    base_median, base_p90 = median(samples["unconfined"]), percentile(samples["unconfined"], 90)
    rows = {}
    for name, values in samples.items():
        rows[name] = {
            "median_ms": round(median(values), 2),
            "p90_ms": round(percentile(values, 90), 2),
            "added_median_ms": round(median(values) - base_median, 2),
            "added_p90_ms": round(percentile(values, 90) - base_p90, 2),
            "backend": found.get(name, name),
        }
    return {"runs": runs, "rows": rows, "samples": samples}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sandbox", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="samples per variant (default 100)")
    parser.add_argument("--json", metavar="FILE", help="also write the results (and every sample) as JSON")
    args = parser.parse_args(argv)
    info = machine_info()
    result = asyncio.run(measure(max(1, args.runs)))
    for line in header_lines(info):
        print(line)
    print(
        f"`true` through LocalKaos.run_command, {result['runs']} samples per variant (after {WARM_UP} warm-up rounds)\n"
    )
    print("| variant | median ms | p90 ms | added (median) | added (p90) | target |")
    print("|---|---|---|---|---|---|")
    for name, row in result["rows"].items():
        target = (
            ""
            if name == "unconfined"
            else ("ok" if row["added_median_ms"] < TARGET_MS else "OVER") + f" < {TARGET_MS:g} ms"
        )
        print(f"| {row['backend']} | {row['median_ms']:.1f} | {row['p90_ms']:.1f} | {row['added_median_ms']:+.1f} | "
              f"{row['added_p90_ms']:+.1f} | {target} |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, **result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
