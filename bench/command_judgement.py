"""What judging a Shell command costs (issue #29: under 2 ms at the median): the parse, the
tripwire, the read-only check, the scope, on the commands an agent runs most, in a git repository
of a realistic size.

    python -m bench.command_judgement [--runs N] [--files N] [--json FILE]

Each command is judged as tools/shell.py judges it (permissions/command_judgement.judge_command),
its parse cache cleared every time (a new command line each call, as in a session), N times; the
figure is the median and p90 per command in milliseconds, and the median over all of them. The
first call, which loads the grammar, is reported on its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .machine import header_lines, machine_info
from .stats import median

COMMANDS = (
    "ls -la",
    "cat src/module_1/file_1.py",
    "git status",
    "git log --oneline -5",
    "git diff --stat",
    "grep -rn TODO src/module_1",
    "rg -n def src",
    "find . -name '*.py' -not -path './.git/*'",
    "cd src && ls && cat module_1/file_1.py | head -20",
    "sed -n '1,40p' src/module_2/file_3.py",
    "python -m pytest -q tests/test_a.py",
    "npm run build && npm test",
    "echo harmless;(touch X;)",
    "cat -n ~/.ki{m,}i/config.toml",
    'git commit -m "fix: the parser" && git push',
    "docker compose up -d",
)


def make_repository(root: Path, files: int) -> None:
    """A git repository of `files` Python files in modules of 20, committed."""
    for index in range(files):
        path = root / "src" / f"module_{index // 20}" / f"file_{index % 20}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{index}():\n    return {index}  # TODO\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@e", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "init"], check=True)


def measure(runs: int, files: int) -> dict[str, Any]:
    from kimi_acp.permissions import shell_parse
    from kimi_acp.permissions.command_judgement import judge_command

    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        make_repository(root, files)
        inside = str(root)

        def may_read(path: Path) -> bool:
            return str(path).startswith(inside)

        started = time.perf_counter()
        judge_command("ls", root, may_read, action="run command")
        first = (time.perf_counter() - started) * 1000
        per_command: dict[str, dict[str, float]] = {}
        all_medians = []
        for command in COMMANDS:
            samples = []
            for _ in range(runs):
                shell_parse._parse_cached.cache_clear()
                started = time.perf_counter()
                judge_command(command, root, may_read, action="run command")
                samples.append((time.perf_counter() - started) * 1000)
            samples.sort()
            per_command[command] = {"median_ms": median(samples), "p90_ms": samples[int(len(samples) * 0.9)]}
            all_medians.append(median(samples))
    return {"first_call_ms": first, "median_of_medians_ms": median(sorted(all_medians)), "commands": per_command}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = measure(args.runs, args.files)
    result["machine"] = machine_info()
    for line in header_lines(result["machine"]):
        print(line)
    print(f"first call (loads the grammar): {result['first_call_ms']:.1f} ms")
    print(f"{'command':55} {'median':>8} {'p90':>8}")
    for command, figures in result["commands"].items():
        print(f"{command[:55]:55} {figures['median_ms']:7.2f}  {figures['p90_ms']:7.2f}")
    print(f"median over the commands: {result['median_of_medians_ms']:.2f} ms")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
