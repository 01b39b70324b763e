"""Process-wide state has one registry (kimi_acp/util/process_state.py): every cache, registry and
memo of a module is registered there or named below with why not, and the in-memory harness
resets all of it when a server starts, so nothing one test's server learnt leaks into the next."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

from kimi_acp.util import process_state

PACKAGE = Path(__file__).resolve().parents[2] / "kimi_acp"

# Module-level state that is not reset, and why (util/process_state.py says the rule).
NOT_RESET = {
    "kimi_acp.util.process_state._resets": "the registry itself",
    "kimi_acp.util.process_guard._done": "mirrors the kernel's flag: once not dumpable, always",
    "kimi_acp.mcp.procs._live": "process groups of MCP servers still running: a reset would orphan them",
    "kimi_acp.mcp.procs._atexit_registered": "the exit hook that kills them, registered once",
    "kimi_acp.mcp.manager._open": "open MCP managers, closed at exit",
    "kimi_acp.startup.stdio._FEEDERS": "tasks feeding stdin",
    "kimi_acp.frontends.web.hub.TITLE_TASKS": "tasks generating titles",
    "kimi_acp.llm.transport._import_started": "aiohttp's import, which stays imported",
    "kimi_acp._compat.generated_code._cache": "a start-up trick the servers' preload installs, never the harness",
    "kimi_acp.util.secrets._patterns": "emptied with `_known` by the registry's reset of the secrets",
    # constants built on first use from nothing but the code
    "kimi_acp.tools.base._SPECS": "tool schemas",
    "kimi_acp.tools.external._VALIDATOR_CLASS": "a JSON Schema validator class",
    "kimi_acp.tools.question._SINGLE_CHOICE_SPEC": "a tool schema",
    "kimi_acp.wire.serde._CONTENT_ADAPTER": "a type adapter",
    "kimi_acp.frontends.acp.client_calls._elicitation_answer": "a type adapter",
    "kimi_acp.util.visible_text._kept_class": "a character class from this Python's Unicode database",
    "kimi_acp.util.visible_text._odd_runs": "regexes",
    "kimi_acp.core.slash_commands._code_patterns": "regexes",
    "kimi_acp.permissions.command_forms._single_forms": "a table of the forms",
    "kimi_acp.permissions.command_forms._git_forms": "a table of the forms",
    "kimi_acp.permissions.shell_parse._parser": "tree-sitter's bash grammar",
    "kimi_acp.auth.device._static_headers": "this machine's platform headers",
}

_CACHES = {"lru_cache", "cache"}
_EMPTY_CALLS = {"set", "dict", "list", "WeakSet", "WeakValueDictionary", "WeakKeyDictionary", "defaultdict", "OrderedDict", "deque"}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_empty_container(value: ast.AST | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    return isinstance(value, ast.Call) and _name(value) in _EMPTY_CALLS and not value.args


def _is_registered_cache(decorator: ast.AST) -> bool:
    return (
        isinstance(decorator, ast.Attribute)
        and decorator.attr == "cache"
        and isinstance(decorator.value, ast.Name)
        and decorator.value.id == "process_state"
    )


def unregistered_state() -> list[str]:
    """Module-level caches (lru_cache/cache), empty containers filled later, and globals assigned
    in functions, of every module, that process_state does not know."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        registered_variables = {  # process_state.variable(globals(), "_x")
            node.args[1].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _name(node) == "variable" and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
        }
        registered_resets = {  # process_state.register(f"{__name__}._x", its_own_reset)
            node.args[0].values[-1].value.lstrip(".")
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _name(node) == "register" and node.args
            and isinstance(node.args[0], ast.JoinedStr) and isinstance(node.args[0].values[-1], ast.Constant)
        }
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                registered = any(_is_registered_cache(d) for d in node.decorator_list)
                if not registered and any(_name(d) in _CACHES for d in node.decorator_list):
                    found.append(f"{module}.{node.name}")
            targets: list[tuple[str, ast.AST | None]] = []
            if isinstance(node, ast.Assign):
                targets = [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                targets = [(node.target.id, node.value)]
            for name, value in targets:
                if _is_empty_container(value) and name not in registered_resets:  # else wrapped in process_state.container
                    found.append(f"{module}.{name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                found += [f"{module}.{name}" for name in node.names if name not in registered_variables]
    return sorted({name for name in found if name not in NOT_RESET})


def test_every_process_wide_state_is_registered_or_said_why_not() -> None:
    assert unregistered_state() == []


def test_the_scan_finds_what_it_looks_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind the scan knows, unregistered, in a module of its own."""
    package = tmp_path / "kimi_acp"
    package.mkdir()
    (package / "leaky.py").write_text(
        "import functools\n_seen = {}\n_tasks: set = set()\n_ready = None\n"
        "@functools.lru_cache(maxsize=1)\ndef probe(): ...\n"
        "def start():\n    global _ready\n    _ready = True\n"
        "_TABLE = {'a': 1}\n"  # a constant: not state
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert unregistered_state() == ["kimi_acp.leaky._ready", "kimi_acp.leaky._seen", "kimi_acp.leaky._tasks", "kimi_acp.leaky.probe"]


def test_a_reset_empties_each_kind_and_the_restore_puts_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_state, "_resets", {})
    calls: list[int] = []

    @process_state.cache
    @functools.cache
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    seen = process_state.container("t.seen", {"a": 1})
    log = process_state.container("t.log", ["x"])
    namespace = {"__name__": "t", "_value": "old"}
    process_state.variable(namespace, "_value")
    square(3)

    restore = process_state.reset()
    assert (seen, log, namespace["_value"]) == ({}, [], None)
    square(3)
    assert calls == [3, 3]  # the memo was forgotten
    seen["b"] = 2
    log.append("y")
    namespace["_value"] = "new"
    late = process_state.container("t.late", set())  # a module first imported while a server runs
    late.add("server's")

    restore()
    assert (seen, log, namespace["_value"], late) == ({"a": 1}, ["x"], "old", set())
    square(3)
    assert calls == [3, 3, 3]  # what the server filled is not kept either
    assert process_state.registered() == [f"{__name__}.{square.__qualname__}", "t.seen", "t.log", "t._value", "t.late"]


async def test_a_server_in_the_test_process_starts_from_a_fresh_process_state(tmp_path: Path) -> None:
    """What the test process knows (a secret, a sensitive file, the sandbox probe's answer) is not
    known inside an in-memory server, and is known again after it."""
    from kimi_acp.permissions import sensitive
    from kimi_acp.sandbox import detect
    from kimi_acp.util import secrets
    from tests.support.acp_fixtures import acp_env, write_config
    from tests.support.inmemory import serve_acp

    share, work = tmp_path / "share", tmp_path / "work"
    share.mkdir()
    work.mkdir()
    write_config(share, ["text: hi"])
    secrets.register(["sk-test-process-only-1234"])
    sensitive._extra.add(tmp_path / "private.toml")
    detect.machine()
    inside: dict[str, object] = {}
    async with serve_acp(acp_env(share)) as agent:
        inside["secret"] = secrets.holds_secret("sk-test-process-only-1234")
        inside["sensitive"] = set(sensitive._extra)
        inside["probe"] = detect.machine.cache_info().currsize
        await agent.initialize()
    assert inside == {"secret": False, "sensitive": set(), "probe": 0}
    assert secrets.holds_secret("sk-test-process-only-1234")
    assert tmp_path / "private.toml" in sensitive._extra
    sensitive._extra.discard(tmp_path / "private.toml")
