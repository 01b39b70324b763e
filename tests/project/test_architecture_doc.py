"""docs/architecture.md's code layout names every module of the package, and nothing that is gone.

The layout is the map a newcomer reads first; a module added without its line, or a line left
behind by a move, makes it lie. The layout is the first `text` block under "## Code layout": one
entry per line, indented two spaces per level below `kimi_acp/`, a name ending in `.py` or `/`
followed by its one job (longer jobs continue on lines indented past the name column). A package's
line stands for its `__init__.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kimi_acp"
DOC = ROOT / "docs" / "architecture.md"

# "  name.py    its job" or "  package/   its job"; a continuation line starts past this column.
ENTRY = re.compile(r"^(?P<indent>(?:  )+)(?P<name>[A-Za-z0-9_.\-]+(?:\.py|/))(?: +|$)")
NAME_COLUMN = 19


def layout_block(markdown: str) -> list[str]:
    """The lines of the code layout's `text` block, `kimi_acp/` first."""
    section = markdown.split("\n## Code layout\n", 1)[1]
    block = section.split("```text\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def named_paths(lines: list[str]) -> list[str]:
    """The package-relative paths the layout names (`core/turn.py`, `frontends/acp/`, ...)."""
    assert lines[0].startswith("kimi_acp/"), lines[0]
    stack: list[str] = []
    found = []
    for line in lines[1:]:
        match = ENTRY.match(line)
        if match is None or len(match["indent"]) >= NAME_COLUMN:
            continue  # the continuation of a job
        depth = len(match["indent"]) // 2 - 1
        assert depth <= len(stack), f"indented below no package: {line!r}"
        stack = [*stack[:depth], match["name"]]
        found.append("".join(stack))
    return found


def package_modules() -> set[str]:
    """Every module of the package, package-relative; a package's `__init__.py` as the package."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative != "__init__.py" and path.name == "__init__.py":
            relative = relative.removesuffix("__init__.py")
        found.add(relative)
    return found


def test_the_layout_names_every_module_and_only_modules_that_exist() -> None:
    named = named_paths(layout_block(DOC.read_text(encoding="utf-8")))
    assert len(named) == len(set(named)), [n for n in named if named.count(n) > 1]
    modules = package_modules()
    assert sorted(modules - set(named)) == []  # a module without its line in the layout
    gone = [n for n in named if not (PACKAGE / n).exists() or (n.endswith("/") != (PACKAGE / n).is_dir())]
    assert gone == []  # a line for a module or folder that does not exist


def test_the_reader_follows_nesting_and_skips_continuations() -> None:
    lines = [
        "kimi_acp/",
        "  api.py               the Python API",
        "  frontends/",
        "    acp/               the ACP front end",
        "      updates.py       UpdateMapper: Wire messages → updates, one handler",
        "                       per message type (a continuation; ends.py is not a name here)",
        "    wire/",
        "      main.py          start-up",
        "  util/                small helpers",
        "    fs.py              atomic replace",
    ]
    assert named_paths(lines) == [
        "api.py", "frontends/", "frontends/acp/", "frontends/acp/updates.py", "frontends/wire/",
        "frontends/wire/main.py", "util/", "util/fs.py",
    ]  # fmt: skip
