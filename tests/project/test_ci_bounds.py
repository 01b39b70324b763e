"""CI's "lowest" smoke job installs exactly the lower bounds pyproject.toml states, so what the
project claims to support is what CI runs (.ci/lowest-constraints.txt)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def lower_bounds() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *project["optional-dependencies"]["web"]]
    bounds = {}
    for requirement in requirements:
        match = re.match(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,;\s]*)", requirement)
        assert match, f"no lower bound: {requirement}"
        bounds[match.group(1).lower()] = match.group(2)
    return bounds


def pinned() -> dict[str, str]:
    lines = (ROOT / ".ci" / "lowest-constraints.txt").read_text().splitlines()
    pins = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {name.strip().lower(): version.strip() for name, version in pins}


def release(version: str) -> tuple[int, ...]:
    """"3.10" and "3.10.0" are one release."""
    parts = [int(p) for p in version.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def test_the_lowest_job_pins_every_lower_bound() -> None:
    assert {k: release(v) for k, v in pinned().items()} == {k: release(v) for k, v in lower_bounds().items()}


def test_the_compat_gates_cover_the_lowest_and_the_pinned_ranges() -> None:
    from kimi_acp._compat import ACP_SDK, MCP_SDK, PYDANTIC, parse_version

    pins = pinned()
    assert PYDANTIC.covers(parse_version(pins["pydantic"]))
    assert MCP_SDK.covers(parse_version(pins["mcp"]))
    assert ACP_SDK.covers(parse_version(pins["agent-client-protocol"]))
