"""What redaction costs per text (issue #30): `secrets.redact` runs on every tool result and every
log line, so its price is paid everywhere.

    python -m bench.redact [--runs N] [--secrets K] [--json FILE]

K secrets are registered as a session would have them, of the usual shapes (`sk-…` provider keys,
an Anthropic key, Kimi OAuth JWTs, a Google `AIza…` key, a hex token; random, cycled to K). Then `redact` is timed on what it sees most:
a log line (~120 characters), a tool result without a secret (50 KB of shell output, the Shell
tool's cap), and the same result with the secrets and their base64 and hex forms in it. Each figure
is the median of N runs of a timed loop, in microseconds per call.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import time
from typing import Any

from .machine import header_lines, machine_info
from .stats import median

LOG_LINE = "2026-12-04 19:46:01,123 INFO kimi_acp.core.toolset: tool Shell (call_7f3a) finished in 0.21 s"


def shell_output(size: int, rng: random.Random) -> str:
    """Lines like a build's or `ls -l`'s: words, paths, numbers, hex hashes."""
    words = ["src/main.py", "tests/test_x.py", "OK", "PASSED", "-rw-r--r--", "1 user", "4096", "Dec", "build"]
    lines: list[str] = []
    total = 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(6)) + " " + f"{rng.getrandbits(160):040x}"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def make_secrets(count: int, rng: random.Random) -> list[str]:
    def text(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    shapes = [
        lambda: "sk-" + text(48),
        lambda: "sk-ant-api03-" + text(80, string.ascii_letters + string.digits + "-_"),
        lambda: "eyJhbGciOiJIUzI1NiJ9." + text(rng.randint(60, 90)) + "." + text(43),
        lambda: "AIza" + text(35),
        lambda: text(32, "0123456789abcdef"),
    ]
    return [shapes[i % len(shapes)]() for i in range(count)]


def per_call_us(function: Any, text: str, runs: int) -> float:
    """Median over `runs` of a loop long enough to last ~20 ms, in µs per call."""
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            function(text)
        if time.perf_counter() - start > 0.02:
            break
        loops *= 2
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(loops):
            function(text)
        samples.append((time.perf_counter() - start) / loops * 1e6)
    return median(samples)


def measure(runs: int, count: int) -> dict[str, Any]:
    from kimi_acp.util import secrets

    rng = random.Random(30)
    values = make_secrets(count, rng)
    secrets.clear()
    start = time.perf_counter()
    secrets.register(values)
    secrets.redact("")  # whatever is compiled on first use
    secrets.holds_secret("x")
    register_ms = (time.perf_counter() - start) * 1e3
    output = shell_output(50_000, rng)
    encoded = [base64.b64encode(v.encode()).decode() for v in values] + [v.encode().hex() for v in values]
    with_secrets = output[:20_000] + " ".join(values + encoded) + output[20_000:]
    texts = {"log line": LOG_LINE, "50 KB output, no secret": output, "50 KB output, secrets": with_secrets}
    return {
        "secrets": count,
        "register_ms": register_ms,
        "us_per_call": {name: per_call_us(secrets.redact, text, runs) for name, text in texts.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.redact", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--secrets", type=int, default=6)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    result = measure(args.runs, args.secrets)
    info = machine_info()
    print("\n".join(header_lines(info)))
    print(f"{result['secrets']} secrets registered and compiled in {result['register_ms']:.2f} ms")
    for name, us in result["us_per_call"].items():
        print(f"  {name:<26} {us:10.1f} µs per redact()")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": info, **result}, f, indent=2)


if __name__ == "__main__":
    main()
