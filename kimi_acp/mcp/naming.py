"""The names MCP tools get in front of the model.

Rule (docs/mcp.md): a tool keeps its own name (as Kimi Code CLI does, so approvals `mcp:<tool>`
carry over) unless that name is taken by a built-in or client tool, or offered by more than one
server of the session; then it is `mcp__<server>__<tool>`. Names are made provider-safe
(`[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters). The result depends only on the configuration
and what the servers offer, never on which server answered first.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

MAX_NAME_CHARS = 64
PREFIX = "mcp"
_INVALID = re.compile(r"[^A-Za-z0-9_]")
_VALID_START = re.compile(r"[A-Za-z_]")


def _clean(part: str) -> str:
    return _INVALID.sub("_", part)


def sanitize(name: str) -> str:
    """A provider-safe tool name; a leading digit gets an `n` in front, as in Kimi Code CLI."""
    cleaned = _clean(name)
    if not cleaned or not _VALID_START.match(cleaned[0]):
        cleaned = "n" + cleaned
    return _fit(cleaned)


def prefixed(server: str, tool: str) -> str:
    return _fit(f"{PREFIX}__{_clean(server)}__{_clean(tool)}")


def _fit(name: str) -> str:
    if len(name) <= MAX_NAME_CHARS:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME_CHARS - 9]}_{digest}"


def assign_names(
    offers: Mapping[str, Sequence[str]], reserved: Collection[str]
) -> dict[tuple[str, str], str]:
    """`(server, tool)` → the model's name, for every tool every server offers.

    `offers` maps server names (in configuration order) to their tools' own names; `reserved`
    holds names that are not ours to take (built-in and client tools).
    """
    counts = Counter(sanitize(tool) for tools in offers.values() for tool in dict.fromkeys(tools))
    names: dict[tuple[str, str], str] = {}
    used: set[str] = set(reserved)
    later: list[tuple[str, str]] = []
    for server, tools in offers.items():
        for tool in dict.fromkeys(tools):
            bare = sanitize(tool)
            if counts[bare] == 1 and bare not in used:
                names[(server, tool)] = bare
                used.add(bare)
            else:
                later.append((server, tool))
    for server, tool in later:
        base = name = prefixed(server, tool)
        n = 2
        while name in used:
            name = _fit(f"{base}_{n}")
            n += 1
        names[(server, tool)] = name
        used.add(name)
    return names
