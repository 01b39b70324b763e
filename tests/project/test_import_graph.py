"""The package's modules import each other in one direction only: down the layers, and no cycles.

The layers, top to bottom (`LAYERS`): front ends → start-up → features → core → tools → OS,
models and accounts → vocabulary and helpers. A module may import its own layer and the ones below;
an import upward fails `test_imports_point_down_the_layers`, naming the edge. For example, adding
`from ..core.slash import BUILTIN_COMMANDS` to `kimi_acp/wire/protocol.py` (the Wire vocabulary
reaching into the core, as it once did for the `initialize` answer) fails with:

    kimi_acp.wire.protocol (vocabulary and helpers) imports kimi_acp.core.slash (core)

Where a lower layer must reach a higher one, the lower one defines a Protocol the higher one
implements (`compaction.CompactionHost`, `tools.base.SubagentLauncher`, ...). Within a layer the
packages must not depend on each other in a circle either (`llm` uses `auth`, never the reverse).

Front ends talk to the core, never to `tools/` (`test_front_ends_never_import_the_tools`): what a
front end supports reaches the tools as a `front_end.FrontEnd` given to the core when it is built,
and the strings a front end recognises in the tools' messages are vocabulary (`wire/actions.py`).

Every import counts — top level, inside functions and under TYPE_CHECKING — because a cycle that
works today only because one side imports lazily is one refactor away from an ImportError, and it
means two modules that cannot be understood apart. The package root is the public façade (a front
end: it loads the Python API lazily), so nothing inside the package imports it; the version is
`_version.py`, at the bottom.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kimi_acp"

# Top to bottom; each entry is a package or a root module of kimi_acp.
LAYERS: list[tuple[str, list[str]]] = [
    ("front ends", ["", "__main__", "cli", "frontends", "api"]),  # "": the package root
    ("start-up", ["startup"]),
    ("features", ["root_core", "subagents", "mcp", "skills", "hooks", "plugins", "agent_file", "simple_stream"]),
    ("core", ["core"]),
    ("tools", ["tools", "permissions", "sandbox"]),
    ("OS, models and accounts", ["kaos", "llm", "auth"]),
    ("vocabulary and helpers", ["wire", "sessions", "config", "config_edit", "errors", "util", "_compat", "front_end", "_version"]),
]
FRONT_ENDS = LAYERS[0][1]


def module_files() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else (node.module or "")
            submodules = {f"{base}.{alias.name}" for alias in node.names} & modules.keys()
            targets |= submodules if len(submodules) == len(node.names) else {base, *submodules}
        elif isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
    return {t for t in targets if t in modules and t != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _top(module: str) -> str:
    """The package or root module of kimi_acp a module is in ("" for the package root)."""
    return module.partition(".")[2].partition(".")[0]


def layer_of(module: str) -> tuple[int, str] | None:
    """(rank, name) of the layer holding `module`; rank 0 is the top."""
    top = _top(module)
    for rank, (name, members) in enumerate(LAYERS):
        if top in members:
            return rank, name
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module)
        for target in sorted(targets):
            there = layer_of(target)
            if here is not None and there is not None and there[0] < here[0]:
                found.append(f"{module} ({here[1]}) imports {target} ({there[1]})")
    return found


def unit_of(module: str) -> str:
    """The package (or root module) a module belongs to; each front end is a unit of its own."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[1:2] == ["frontends"] and len(parts) > 2 else parts[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for module, targets in graph.items():
        units.setdefault(unit_of(module), set()).update(unit_of(t) for t in targets if unit_of(t) != unit_of(module))
    return units


def module_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def front_end_tool_imports(graph: dict[str, set[str]]) -> list[str]:
    """Edges from a front end (the top layer) into the `tools` package."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if _top(module) in FRONT_ENDS
        for target in sorted(targets)
        if _top(target) == "tools"
    ]


def test_every_module_is_in_a_layer() -> None:
    assert [m for m in module_graph() if layer_of(m) is None] == []


def test_imports_point_down_the_layers() -> None:
    assert upward_imports(module_graph()) == []


def test_front_ends_never_import_the_tools() -> None:
    assert front_end_tool_imports(module_graph()) == []


def test_the_tools_rule_finds_a_front_end_importing_a_tool() -> None:
    graph = {
        "kimi_acp.frontends.wire.server": {"kimi_acp.tools.plan", "kimi_acp.core.agent_core"},
        "kimi_acp.api": {"kimi_acp.tools"},
        "kimi_acp.root_core": {"kimi_acp.tools.question"},  # a feature module may
    }
    assert front_end_tool_imports(graph) == [
        "kimi_acp.api imports kimi_acp.tools",
        "kimi_acp.frontends.wire.server imports kimi_acp.tools.plan",
    ]


def test_packages_do_not_depend_on_each_other_in_a_circle() -> None:
    assert cycles(package_graph(module_graph())) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {"kimi_acp.wire.protocol": {"kimi_acp.core.slash"}, "kimi_acp.core.slash": {"kimi_acp.wire.types"}}
    assert upward_imports(graph) == ["kimi_acp.wire.protocol (vocabulary and helpers) imports kimi_acp.core.slash (core)"]
    # the version read from the package root, as auth/, plugins/ and mcp/ once did
    assert upward_imports({"kimi_acp.auth.device": {"kimi_acp"}}) == [
        "kimi_acp.auth.device (OS, models and accounts) imports kimi_acp (front ends)"
    ]
    assert cycles(package_graph({"kimi_acp.llm.http": {"kimi_acp.auth.source"}, "kimi_acp.auth.x": {"kimi_acp.llm.y"}}))


def test_no_import_cycles() -> None:
    modules = module_files()
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}
    assert graph.get("kimi_acp.core.agent_core")  # the walk saw real imports
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_relative_import_names_a_module_of_the_package() -> None:
    """A relative import that resolves to nothing would be dropped by the graph above (and fail
    only when its function first runs): after a move, each must still name a real module."""
    modules = module_files()
    unresolved = []
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            if node.level > len(package) or base not in modules:
                unresolved.append(f"{name}:{node.lineno}: {'.' * node.level}{node.module or ''}")
    assert unresolved == []
